package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

const countsSQL = `SELECT (SELECT count(*) FROM runs) || ',' || (SELECT count(*) FROM steps) || ',' || (SELECT count(*) FROM tool_calls) AS c`

// queryOne runs sql over the Dataset ref and returns the single value.
func queryOne(t *testing.T, cfg, ref, sql string) string {
	t.Helper()
	out, stderr, code := pc(t, "query", ref, sql, "--format", "csv", "-c", cfg)
	if code != 0 {
		t.Fatalf("query %s: exit %d: %s", ref, code, stderr)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	return strings.Trim(rows[len(rows)-1], `"`)
}

// TestRemoteImportAndEvents imports examples/trajectories to each real
// server through a @pin, reads it back with `query`, and appends events to
// S3: the counts must equal a local import's.
func TestRemoteImportAndEvents(t *testing.T) {
	if os.Getenv(testservers.SkipEnv) != "" {
		t.Skip(testservers.SkipEnv + " is set")
	}
	examples := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	s3, az, gcs := testservers.StartS3(t), testservers.StartAzurite(t), testservers.StartGCS(t)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	pins := fmt.Sprintf(`[pins.s3]
uri = "s3://%s/ds"
endpoint = %q
region = "us-east-1"
path_style = true
access_key = %q
secret_key = %q

[pins.az]
uri = "az://%s/ds"
endpoint = %q
account = %q
secret_key = %q

[pins.gs]
uri = "gs://%s/ds"
endpoint = %q
`, s3.NewS3Bucket(t, true), s3.Endpoint, s3.AccessKey, s3.SecretKey,
		az.NewAzureContainer(t), az.Endpoint, az.AccessKey, az.SecretKey,
		gcs.NewGCSBucket(t), gcs.Endpoint)
	if err := os.WriteFile(cfg, []byte(pins), 0o600); err != nil {
		t.Fatal(err)
	}

	local := filepath.Join(t.TempDir(), "store")
	if _, stderr, code := pc(t, "import", examples, "--to", local, "-c", cfg); code != 0 {
		t.Fatalf("local import: %s", stderr)
	}
	want := queryOne(t, cfg, local, countsSQL)
	if want != "5,26,9" { // runs, steps, tool_calls of examples/trajectories
		t.Fatalf("local import counts %s, want 5,26,9", want)
	}

	for _, pin := range []string{"@s3", "@az", "@gs"} {
		t.Run(pin, func(t *testing.T) {
			out, stderr, code := pc(t, "import", examples, "--to", pin+"/store", "-c", cfg)
			if code != 0 || !strings.Contains(out, "gen-000000") {
				t.Fatalf("import --to %s: exit %d: %s%s", pin, code, out, stderr)
			}
			if strings.Contains(out+stderr, s3.SecretKey) || strings.Contains(out+stderr, az.SecretKey) {
				t.Fatal("a secret was printed")
			}
			if got := queryOne(t, cfg, pin+"/store", countsSQL); got != want {
				t.Fatalf("remote counts %s, local %s", got, want)
			}
			// A second publish (append mode, same inputs) replaces CURRENT
			// and keeps the same rows.
			out, stderr, code = pc(t, "import", filepath.Join(examples, "atif"), "--to", pin+"/store", "--mode", "append", "-c", cfg)
			if code != 0 || !strings.Contains(out, "gen-000001") {
				t.Fatalf("second import: exit %d: %s%s", code, out, stderr)
			}
			if got := queryOne(t, cfg, pin+"/store", `SELECT count(DISTINCT _file_) FROM runs`); got == "0" {
				t.Fatal("no rows after the second publish")
			}
		})
	}

	t.Run("events", func(t *testing.T) {
		store := "@s3/x/events.lance"
		good := lines(canonicalLine("a1", "s1", 0), canonicalLine("a2", "s1", 1), canonicalLine("a3", "s2", 0))
		in := filepath.Join(t.TempDir(), "events.jsonl")
		os.WriteFile(in, []byte(good), 0o644)
		if _, stderr, code := pc(t, "events", "append", store, in, "-c", cfg); code != 0 || !strings.Contains(stderr, "appended 3 events to s3://") {
			t.Fatalf("events append: exit %d: %s", code, stderr)
		}
		bad := filepath.Join(t.TempDir(), "bad.jsonl")
		os.WriteFile(bad, []byte(lines(canonicalLine("b1", "s1", 2), canonicalLine("a3", "s3", 0))), 0o644)
		if _, stderr, code := pc(t, "events", "append", store, bad, "-c", cfg); code == 0 || !strings.Contains(stderr, "nothing appended") || !strings.Contains(stderr, "bad.jsonl:2") {
			t.Fatalf("bad append: exit %d: %s", code, stderr)
		}
		if got := queryOne(t, cfg, "@s3/x", `SELECT count(*) FROM events`); got != "3" {
			t.Fatalf("events count %s, want 3", got)
		}
	})
}
