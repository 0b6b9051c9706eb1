//go:build unix

package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// onTerminal runs the real binary with its standard output on a
// pseudo-terminal of the given width, and returns what it printed there
// (line ends as \n) and its exit code. Standard error stays a pipe.
func onTerminal(t *testing.T, cols int, env []string, args ...string) (string, int) {
	t.Helper()
	return runOnTerminal(t, false, 50, cols, env, args...)
}

// runOnTerminal is onTerminal with standard error, instead of standard
// output, on the terminal when stderrTTY is set, and a terminal of the
// given rows.
func runOnTerminal(t *testing.T, stderrTTY bool, rows, cols int, env []string, args ...string) (string, int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = tty, &stderr
	if stderrTTY {
		cmd.Stdout, cmd.Stderr = &stderr, tty
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out, err := io.ReadAll(ptmx)
	if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the terminal's last writer left
		t.Fatal(err)
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	if code != 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n"), code
}

// On an 80-column terminal, `query ../shared/samples 'SELECT * FROM runs'`
// fits: no line is wider than the terminal, the footer counts every row,
// and floats carry no binary noise; COLUMNS wins over the terminal's size.
func TestQueryTableFitsTheTerminal(t *testing.T) {
	samples := testutil.SamplesDir(t)
	for _, tc := range []struct {
		name     string
		ptyCols  int
		env      []string
		maxWidth int
	}{
		{"terminal of 80", 80, nil, 80},
		{"COLUMNS=80 on a wider terminal", 200, []string{"COLUMNS=80"}, 80},
		{"terminal of 132", 132, []string{"COLUMNS="}, 132},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := onTerminal(t, tc.ptyCols, tc.env, "query", samples, "SELECT * FROM runs")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			for _, l := range lines {
				if w := text.StringWidthWithoutEscSequences(l); w > tc.maxWidth {
					t.Errorf("line %d columns wide (terminal %d): %q", w, tc.maxWidth, l)
				}
			}
			// 40 rows of the result, each a line of the box, under the
			// column names and their types.
			if n := strings.Count(out, "\n│ "); n != 42 {
				t.Errorf("%d table lines, want names, types and 40 rows:\n%s", n, out)
			}
			if !strings.Contains(out, "\n│ varchar ") {
				t.Errorf("no line of column types:\n%s", out)
			}
			var count string
			for _, l := range lines {
				if strings.Contains(l, "rows (40 shown)") {
					count = l
				}
			}
			want, _, _ := testutil.Run(t, "query", samples, "SELECT format('{:,} rows (40 shown)', count(*)) FROM runs", "--format", "csv")
			if wantLine := strings.Split(want, "\n")[1]; count == "" || !strings.HasPrefix(count, wantLine) {
				t.Errorf("footer %q, want it to begin %q:\n%s", count, wantLine, out)
			}
		})
	}
	out, code := onTerminal(t, 80, nil, "query", samples, "SELECT 0.1::DOUBLE + 0.2::DOUBLE AS noisy, sum(reward) AS total FROM runs")
	if code != 0 || !strings.Contains(out, " 0.3 ") || strings.Contains(out, "0000000") {
		t.Errorf("exit %d: floats must read without binary noise:\n%s", code, out)
	}
}

// Off a terminal a table is the rows and nothing else (scripts cut it),
// and --max-rows caps it with a footer that counts the rest.
func TestQueryTableOffTerminal(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	out, _, code := testutil.Run(t, "query", ex, "SELECT step_id, [1, 2] AS l, {'k': 'v'} AS s FROM steps ORDER BY _file_, step_index LIMIT 2")
	if code != 0 || out != "step_id  l       s\n1        [1, 2]  {'k': 'v'}\n2        [1, 2]  {'k': 'v'}\n" {
		t.Fatalf("exit %d:\n%q", code, out)
	}
	out, _, code = testutil.Run(t, "query", ex, "SELECT step_id FROM steps", "--max-rows", "2")
	if code != 0 || !strings.HasSuffix(out, "\n26 rows (2 shown); --max-rows 0 shows all\n") || strings.Count(out, "\n") != 4 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, _, code = testutil.Run(t, "query", ex, "SELECT step_id, step_index FROM steps LIMIT 1", "--format", "markdown")
	if code != 0 || out != "| step_id | step_index |\n| --- | ---:|\n| 1 | 0 |\n" {
		t.Fatalf("markdown: exit %d:\n%q", code, out)
	}
}

// JSON-valued columns are JSON values in json and jsonl, and a result cut
// at --max-output-rows ends with a marker object, not only an exit code.
func TestQueryJSONValuesAndTruncationMarker(t *testing.T) {
	samples := testutil.SamplesDir(t)
	out, stderr, code := testutil.Run(t, "query", samples, "SELECT extra FROM runs WHERE extra IS NOT NULL", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var row struct{ Extra any }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		if _, ok := row.Extra.(map[string]any); !ok {
			t.Fatalf("line %d: extra is %T, want an object: %.200s", n+1, row.Extra, sc.Text())
		}
		n++
	}
	if n < 100 {
		t.Fatalf("%d rows with extra, want the samples' hundreds", n)
	}

	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	for _, format := range []string{"jsonl", "json"} {
		out, stderr, code = testutil.Run(t, "query", ex, "SELECT step_id FROM steps", "--max-output-rows", "3", "--format", format)
		if code == 0 || !strings.Contains(stderr, "--max-output-rows") {
			t.Fatalf("%s: exit %d, stderr %q", format, code, stderr)
		}
		var rows []map[string]any
		if format == "json" {
			if err := json.Unmarshal([]byte(out), &rows); err != nil {
				t.Fatalf("json: %v\n%s", err, out)
			}
		} else {
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				var r map[string]any
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatalf("jsonl: %v: %q", err, l)
				}
				rows = append(rows, r)
			}
		}
		last, _ := rows[len(rows)-1]["_truncated_"].(map[string]any)
		if len(rows) != 4 || last == nil || last["rows"] != 3.0 {
			t.Fatalf("%s: want 3 rows and a _truncated_ marker:\n%s", format, out)
		}
	}
	out, _, _ = testutil.Run(t, "query", ex, "SELECT step_id FROM steps", "--max-output-rows", "3")
	if !strings.Contains(out, "more than 3 rows") {
		t.Fatalf("table: no footer saying the result was cut:\n%s", out)
	}
}

// While query, stats and find normalize sources, a terminal shows how many
// sources and bytes are done, the rate and the time left; a pipe gets
// nothing of it.
func TestNormalizeProgressOnTerminalOnly(t *testing.T) {
	samples := testutil.SamplesDir(t)
	for _, args := range [][]string{
		{"query", samples, "SELECT count(*) FROM steps"},
		{"stats", samples},
		{"find", samples, "--text", "error"},
	} {
		t.Run(args[0], func(t *testing.T) {
			out, code := runOnTerminal(t, true, 50, 100, nil, append(args, "--max-concurrent-sources", "1")...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			if !regexp.MustCompile(`normalizing \d+/\d+ sources .*MB`).MatchString(out) {
				t.Fatalf("no progress with sources and bytes on the terminal:\n%.2000s", out)
			}
			_, stderr, _ := testutil.Run(t, args...)
			if strings.Contains(stderr, "normalizing") {
				t.Fatalf("progress on a pipe:\n%.2000s", stderr)
			}
		})
	}
}
