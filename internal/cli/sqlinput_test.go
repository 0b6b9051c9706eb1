//go:build unix

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// slowSQL takes minutes: a self-join of every step of a source with every
// other, nine times over.
const slowSQL = "SELECT count(*) FROM steps a JOIN steps b USING (_file_) JOIN steps c USING (_file_) JOIN steps d USING (_file_) " +
	"JOIN steps e USING (_file_) JOIN steps f USING (_file_) JOIN steps g USING (_file_) JOIN steps h USING (_file_) JOIN steps i USING (_file_)"

// SQL reaches query from an argument, a file or standard input, may start
// with a comment, and every mistake is told in the user's terms.
func TestQuerySQLInputAndErrors(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	file := filepath.Join(t.TempDir(), "count.sql")
	os.WriteFile(file, []byte("-- how many runs\nSELECT count(*) AS n FROM runs;\n"), 0o644)
	ok := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"-f FILE", "", []string{"query", ex, "-f", file, "--format", "csv"}, "n\n5\n"},
		{"--sql -", "SELECT count(*) AS n FROM runs", []string{"query", ex, "--sql", "-", "--format", "csv"}, "n\n5\n"},
		{"leading comment", "", []string{"query", ex, "-- how many\nSELECT count(*) AS n FROM runs", "--format", "csv"}, "n\n5\n"},
		{"SUMMARIZE", "", []string{"query", ex, "SELECT column_name, count FROM (SUMMARIZE runs) WHERE column_name = 'step_count'", "--format", "csv"}, "column_name,count\nstep_count,5\n"},
		{"PIVOT without IN", "", []string{"query", ex, "-- formats by status\npivot runs ON source_format USING count(*) GROUP BY status ORDER BY status;", "--format", "csv"},
			"status,atif/1.6,openai/chat-jsonl,openai/codex-rollout\ncompleted,0,0,1\nunknown,1,3,0\n"},
		{"PIVOT with IN", "", []string{"query", ex, "SELECT * FROM (PIVOT (SELECT status FROM runs) ON status IN ('completed') USING count(*))", "--format", "csv"}, "completed\n1\n"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := testutil.RunInput(t, tc.stdin, tc.args...)
			if code != 0 || out != tc.want {
				t.Fatalf("exit %d, stdout %q, want %q; stderr %s", code, out, tc.want, stderr)
			}
		})
	}
	bad := []struct {
		name string
		args []string
		want []string
	}{
		{"syntax error has DuckDB's caret", []string{"query", ex, "SELECT 1,\n  2 FROMM x"}, []string{"syntax error at or near \"x\"", "LINE 2:   2 FROMM x\n                  ^"}},
		{"COPY names the alternative", []string{"query", ex, "COPY runs TO 'out.csv'"}, []string{"COPY writes files", "--format csv", "> file"}},
		{"CREATE names its kind", []string{"query", ex, "CREATE TABLE t AS SELECT 1"}, []string{"CREATE changes data"}},
		{"PIVOT without IN inside FROM", []string{"query", ex, "SELECT * FROM (PIVOT runs ON status USING count(*))"}, []string{"IN list of values"}},
		{"PIVOT's values are read in the sandbox", []string{"query", ex, "PIVOT read_csv('/etc/passwd') ON a USING count(*)"}, []string{"table function read_csv is not allowed"}},
		{"no Dataset", []string{"query", "SELECT 1"}, []string{"no Dataset", "give the Dataset first"}},
		{"timeout", []string{"query", ex, slowSQL, "--timeout", "1ms"}, []string{"--timeout (1ms)"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := testutil.Run(t, tc.args...)
			for _, w := range tc.want {
				if code == 0 || !strings.Contains(stderr, w) {
					t.Fatalf("exit %d, stderr %q, want it to contain %q", code, stderr, w)
				}
			}
		})
	}

	out, _, code := testutil.Run(t, "query", ex, "EXPLAIN SELECT count(*) FROM runs")
	if code != 0 || !strings.HasPrefix(out, "physical_plan:\n┌") || strings.Contains(out, `\n`) {
		t.Fatalf("EXPLAIN: exit %d, want the drawn plan:\n%s", code, out)
	}

	cmd := exec.Command(testutil.Binary(t), "query", ex, slowSQL)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if !strings.Contains(stderr.String(), "query interrupted (Ctrl-C") {
		t.Fatalf("Ctrl-C: exit %d, stderr %q", cmd.ProcessState.ExitCode(), stderr.String())
	}
}
