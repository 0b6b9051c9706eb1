package cli

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestDirectoryExampleEndToEnd runs the Directory example sequence of
// docs/directory.md against the real S3 test server (versitygw): register an
// s3:// dataset with backend keys, issue a user, grant, serve the Directory,
// pin it with the user's keys and query @team/prod. The Directory routes are
// served by the same handler serve mounts; the user config must end up
// without any backend key.
func TestDirectoryExampleEndToEnd(t *testing.T) {
	s3 := testservers.StartS3(t)
	bucket := s3.NewS3Bucket(t, true)
	ctx := context.Background()
	b, _, err := objstore.Open(ctx, "s3://"+bucket, s3.S3Config())
	if err != nil {
		t.Fatal(err)
	}
	examples := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	filepath.WalkDir(examples, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(examples, path)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		if _, err := b.Put(ctx, "prod/"+filepath.ToSlash(rel), f, fi.Size()); err != nil {
			t.Fatal(err)
		}
		return nil
	})

	dir := t.TempDir()
	catalogPath := filepath.Join(dir, "catalog.toml")
	userConfig := filepath.Join(dir, "config.toml")

	// The operator's side.
	mustPC(t, "serve", "catalog", "dataset", "add", "--catalog-config", catalogPath, "prod", "--uri", "s3://"+bucket+"/prod/",
		"--endpoint", s3.Endpoint, "--region", s3.Region, "--access-key", s3.AccessKey, "--secret-key", s3.SecretKey)
	ak, sk := issue(t, catalogPath, "alice")
	mustPC(t, "serve", "catalog", "grant", "--catalog-config", catalogPath, "alice", "prod")

	w, err := directory.Watch(catalogPath, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&directory.Handler{ACL: w})
	defer srv.Close()
	locator := "catalog://" + strings.TrimPrefix(srv.URL, "http://")

	// The user's side.
	mustPC(t, "dataset", "pin", "-c", userConfig, "team", locator, "--ak", ak, "--sk", sk)
	const sql = "SELECT count(*) AS runs, sum(step_count) AS steps FROM runs"
	got, _ := mustPC(t, "query", "-c", userConfig, "@team/prod", sql, "--format", "csv")
	want, _ := mustPC(t, "query", examples, sql, "--format", "csv")
	if got != want || !strings.HasPrefix(got, "runs,steps\n") {
		t.Errorf("@team/prod:\n%s\nthe same files locally:\n%s", got, want)
	}

	// A sub-path of the dataset, and the same through --mount.
	got, _ = mustPC(t, "query", "-c", userConfig, "--mount", "p=@team/prod/atif", "SELECT count(*) AS n FROM p.runs", "--format", "csv")
	if got != "n\n1\n" {
		t.Errorf("@team/prod/atif: %q", got)
	}

	user, err := os.ReadFile(userConfig)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(user), s3.SecretKey) || strings.Contains(string(user), s3.AccessKey) || strings.Contains(string(user), bucket) {
		t.Errorf("the user config holds backend settings:\n%s", user)
	}
}
