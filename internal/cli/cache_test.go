package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestMain keeps the in-process commands of this package's tests out of
// the user's cache directory, and removes the binary the others run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pchronicle-cli-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defaultCacheDir = func() string { return dir }
	code := testutil.RunMain(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCache runs a cache command in-process (it takes no config file).
func runCache(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Execute(context.Background(), append([]string{"cache"}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestCacheCommands: a query keeps its normalized files in --cache-dir, the
// next is served from it with the same output, --no-cache neither reads nor
// writes it, and cache stats / cache clear report and empty it.
func TestCacheCommands(t *testing.T) {
	examples := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories") // files older than the racy window
	dir := t.TempDir()
	const sql = "SELECT _file_, count(*) FROM tool_calls GROUP BY 1 ORDER BY 1"
	stats := func() map[string]any {
		t.Helper()
		out, stderr, code := runCache(t, "stats", "--cache-dir", dir, "--format", "jsonl")
		if code != 0 {
			t.Fatalf("cache stats: %d %s", code, stderr)
		}
		rows := jsonlRows(t, out)
		if len(rows) != 1 {
			t.Fatalf("cache stats printed %s", out)
		}
		return rows[0]
	}
	query := func(flags ...string) string {
		t.Helper()
		out, stderr, code := runInProcess(t, append([]string{"query", examples, sql, "--format", "csv"}, flags...)...)
		if code != 0 {
			t.Fatalf("query %v: %d %s", flags, code, stderr)
		}
		return out
	}
	want := query("--no-cache", "--cache-dir", dir)
	if st := stats(); st["entries"] != 0.0 || st["hits"] != 0.0 || st["misses"] != 0.0 {
		t.Fatalf("--no-cache used the cache: %v", st)
	}
	if cold := query("--cache-dir", dir); cold != want {
		t.Fatalf("cold cache: %s, want %s", cold, want)
	}
	cold := stats()
	if cold["entries"] == 0.0 || cold["stored"] == 0.0 || cold["hits"] != 0.0 || cold["path"] != dir {
		t.Fatalf("after the first query: %v", cold)
	}
	if warm := query("--cache-dir", dir); warm != want {
		t.Fatalf("warm cache: %s, want %s", warm, want)
	}
	if warm := stats(); warm["hits"] == 0.0 || warm["misses"] != cold["misses"] || warm["stored"] != cold["stored"] {
		t.Fatalf("the second query was not served from the cache: %v (after the first %v)", warm, cold)
	}
	if _, stderr, code := runCache(t, "clear", "--cache-dir", dir); code != 0 {
		t.Fatalf("cache clear: %d %s", code, stderr)
	}
	if st := stats(); st["entries"] != 0.0 || st["bytes"] != 0.0 || st["hits"] != 0.0 {
		t.Fatalf("after clear: %v", st)
	}
}
