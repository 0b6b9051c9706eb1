package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/fsx"
)

// pcTest runs the CLI in-process with `serve catalog` registered under a
// stand-in `serve` (the server's command adds the same subtree).
func pcTest(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	root := NewRoot(e)
	addServeCatalog(root, e)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// addServeCatalog puts `serve catalog` under root's serve command (a
// stand-in where there is none yet), unless it is there already.
func addServeCatalog(root *cobra.Command, e *env) {
	if c, _, err := root.Find([]string{"serve", "catalog"}); err == nil && c.Name() == "catalog" {
		return
	}
	serve, _, err := root.Find([]string{"serve"})
	if err != nil || serve == root {
		serve = &cobra.Command{Use: "serve", Short: "stand-in for the server's serve command"}
		root.AddCommand(serve)
	}
	serve.AddCommand(serveCatalogCommand(e))
}

func mustPC(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errOut, err := pcTest(t, args...)
	if err != nil {
		t.Fatalf("pchronicle %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out, errOut
}

var issuedKeys = regexp.MustCompile(`^access_key: (pcak_[0-9a-f]{32})\nsecret_key: ([A-Za-z0-9_-]{43})\n$`)

// issue runs `serve catalog issue` and returns the printed keys.
func issue(t *testing.T, cfg, name string, flags ...string) (ak, sk string) {
	t.Helper()
	out, _ := mustPC(t, append([]string{"serve", "catalog", "issue", "--catalog-config", cfg, name}, flags...)...)
	m := issuedKeys.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("issue printed %q", out)
	}
	return m[1], m[2]
}

func TestServeCatalogEditors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "etc", "catalog.toml") // the directory does not exist yet
	run := func(args ...string) (string, string, error) {
		return pcTest(t, append(append([]string{"serve", "catalog"}, args...), "--catalog-config", cfg)...)
	}
	local := filepath.Join(dir, "evals")

	if _, _, err := run("dataset", "add", "evals", "--uri", local); err != nil {
		t.Fatal(err)
	}
	c := loadCatalog(t, cfg)
	if c.Meta.Revision != 1 || c.Datasets["evals"].URI != local {
		t.Fatalf("after add: %+v", c)
	}
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v", fi.Mode().Perm())
	}

	s3 := []string{"--uri", "s3://bucket/prod/", "--endpoint", "http://127.0.0.1:7070", "--region", "us-east-1", "--access-key", "BACKEND_AK", "--secret-key", "BACKEND_SK"}
	if _, _, err := run(append([]string{"dataset", "add", "prod"}, s3...)...); err != nil {
		t.Fatal(err)
	}
	// A second s3 dataset must use the same backend.
	other := append([]string{"dataset", "add", "prod2"}, s3...)
	other[len(other)-1] = "OTHER_SK"
	other[6] = "http://127.0.0.1:7071"
	_, _, err := run(other...)
	if want := `s3:// datasets added here must use the backend of dataset "prod", and --endpoint, --secret-key differ; several backends can only be written by hand (see docs/directory.md)`; err == nil || err.Error() != want {
		t.Errorf("second backend: %v\nwant %s", err, want)
	}
	same := append([]string{"dataset", "add", "prod2"}, s3...)
	same[4] = "s3://bucket/prod2/"
	if _, _, err := run(same...); err != nil {
		t.Errorf("same backend: %v", err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"dataset", "add", "prod", "--uri", "/x"}, `dataset "prod" is already registered; remove it first to change it`},
		{[]string{"dataset", "add", "Bad", "--uri", "/x"}, `invalid dataset name "Bad": use lowercase letters, digits and _, not starting with a digit`},
		{[]string{"dataset", "add", "x", "--uri", "/x", "--access-key", "a", "--secret-key", "b"}, "datasets.x: a local path must not set endpoint, region, access_key or secret_key"},
		{[]string{"dataset", "add", "x", "--uri", "s3://b/p"}, "datasets.x: an s3:// dataset must set both access_key and secret_key"},
		{[]string{"dataset", "add", "x", "--uri", "az://c/p"}, `unsupported Dataset URI scheme "az"`},
		{[]string{"dataset", "remove", "evals", "nope"}, `no dataset "nope" in ` + cfg},
		{[]string{"grant", "alice", "evals"}, `no user "alice" in ` + cfg},
		{[]string{"grant", "*", "evals"}, "there are no users yet (pchronicle serve catalog issue NAME)"},
		{[]string{"issue", "alice", "--rotate"}, `no user "alice" to rotate; issue without --rotate creates it`},
	} {
		before, _ := os.ReadFile(cfg)
		_, _, err := run(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v\nwant %s", tt.args, err, tt.want)
		}
		if after, _ := os.ReadFile(cfg); !bytes.Equal(before, after) {
			t.Errorf("%v: a refused edit changed the file", tt.args)
		}
	}

	ak, sk := issue(t, cfg, "alice")
	c = loadCatalog(t, cfg)
	if u := c.Users["alice"]; u.AccessKey != ak || u.SecretKey.Reveal() != sk || len(c.Grants) != 0 {
		t.Errorf("issue: %+v, grants %v", u, c.Grants)
	}
	if _, _, err := run("issue", "alice"); err == nil || err.Error() != `user "alice" exists; use issue --rotate to replace its keys` {
		t.Errorf("issue twice: %v", err)
	}
	issue(t, cfg, "bob")

	_, notes, err := run("grant", "alice", "evals", "prod")
	if err != nil || notes != "granted evals to alice\ngranted prod to alice\n" {
		t.Errorf("grant: %v %q", err, notes)
	}
	if _, notes, _ := run("grant", "*", "prod"); notes != "alice already had prod\ngranted prod to bob\n" {
		t.Errorf("grant *: %q", notes)
	}
	c = loadCatalog(t, cfg)
	if got := grantPairs(c); got != "alice:evals alice:prod bob:prod" {
		t.Errorf("grants %s", got)
	}

	// Rotation replaces both keys and keeps the grants.
	ak2, sk2 := issue(t, cfg, "alice", "--rotate")
	c = loadCatalog(t, cfg)
	if ak2 == ak || sk2 == sk || c.Users["alice"].AccessKey != ak2 || grantPairs(c) != "alice:evals alice:prod bob:prod" {
		t.Errorf("rotate: %+v %s", c.Users["alice"], grantPairs(c))
	}

	if _, notes, _ := run("revoke", "*", "prod"); notes != "revoked prod from alice\nrevoked prod from bob\n" {
		t.Errorf("revoke *: %q", notes)
	}
	if _, notes, _ := run("revoke", "bob", "evals"); notes != "bob had no grant of evals\n" {
		t.Errorf("revoke missing: %q", notes)
	}

	out, _, err := run("dataset", "list", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	want := "name,uri,endpoint,region,users\nevals," + local + ",,,alice\nprod,s3://bucket/prod/,http://127.0.0.1:7070,us-east-1,\nprod2,s3://bucket/prod2/,http://127.0.0.1:7070,us-east-1,\n"
	if out != want {
		t.Errorf("list:\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(out, "BACKEND") {
		t.Error("dataset list shows a backend key")
	}

	if _, notes, err := run("dataset", "remove", "evals"); err != nil || !strings.Contains(notes, "removed evals and 1 grant(s)") {
		t.Errorf("remove: %v %q", err, notes)
	}
	if c := loadCatalog(t, cfg); len(c.Grants) != 0 || len(c.Datasets) != 2 {
		t.Errorf("after remove: %+v", c)
	}
}

// TestServeCatalogFailedWriteKeepsFile: a crash during the replacement
// leaves the previous file, and issue prints no key that was not saved.
func TestServeCatalogFailedWriteKeepsFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "catalog.toml")
	mustPC(t, "serve", "catalog", "dataset", "add", "--catalog-config", cfg, "evals", "--uri", "/srv/evals")
	before, _ := os.ReadFile(cfg)
	restore := fsx.SetFailHook(func(path string, at fsx.FailPoint) error {
		if at == fsx.FailRename {
			return errors.New("disk full")
		}
		return nil
	})
	out, _, err := pcTest(t, "serve", "catalog", "issue", "--catalog-config", cfg, "alice")
	restore()
	if err == nil || out != "" {
		t.Errorf("issue during a failing write: %v, printed %q", err, out)
	}
	if after, _ := os.ReadFile(cfg); !bytes.Equal(before, after) {
		t.Errorf("the previous file was not kept:\n%s", after)
	}
}

func TestServeCatalogNeedsConfigFlag(t *testing.T) {
	_, _, err := pcTest(t, "serve", "catalog", "issue", "alice")
	if err == nil || !strings.Contains(err.Error(), `required flag(s) "catalog-config" not set`) {
		t.Errorf("%v", err)
	}
}

// TestDirectoryPinIsNeverShown: a catalog:// pin keeps the user's keys like
// an S3 pin's, and list/show never print them.
func TestDirectoryPinIsNeverShown(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	mustPC(t, "dataset", "pin", "-c", cfg, "team", "catalog://127.0.0.1:8081/", "--ak", "pcak_userkey", "--sk", "USER_SECRET")
	for _, args := range [][]string{{"dataset", "list", "-c", cfg}, {"dataset", "show", "-c", cfg, "team"}} {
		out, _ := mustPC(t, args...)
		if !strings.Contains(out, "catalog://127.0.0.1:8081") || strings.Contains(out, "pcak_userkey") || strings.Contains(out, "USER_SECRET") {
			t.Errorf("%v:\n%s", args, out)
		}
	}
	for args, want := range map[string]string{
		"catalog://127.0.0.1:8081 --endpoint http://x": "a catalog:// pin takes only --ak and --sk",
		"catalog://127.0.0.1:8081 --region r":          "a catalog:// pin takes only --ak and --sk",
		"catalog://localhost:8081":                     "the host must be a loopback IP address",
		"catalog://127.0.0.1:8081/prod":                "it must not contain a path",
	} {
		_, _, err := pcTest(t, append([]string{"dataset", "pin", "-c", cfg, "x"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	if _, _, err := pcTest(t, "import", t.TempDir(), "--to", "@team/prod", "-c", cfg); err == nil || !strings.Contains(err.Error(), "@team is a Directory") {
		t.Errorf("import into a Directory dataset: %v", err)
	}
}

func loadCatalog(t *testing.T, path string) *directory.Config {
	t.Helper()
	c, err := directory.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func grantPairs(c *directory.Config) string {
	var out []string
	for _, g := range c.Grants {
		out = append(out, g.User+":"+g.Dataset)
	}
	return strings.Join(out, " ")
}
