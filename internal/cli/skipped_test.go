package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// skippedFolder copies the real files of negatives/ (none a trajectory) and
// one ATIF trajectory into a temp folder, so that every command has
// something to read, and returns it with the number of negatives.
func skippedFolder(t *testing.T) (string, int) {
	dir := t.TempDir()
	negatives := filepath.Join(testutil.SamplesDir(t), "negatives")
	entries, err := os.ReadDir(negatives)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(negatives, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "trajectory.json"), testutil.Sample(t, "atif/nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json"), 0o644)
	return dir, len(entries)
}

// warningLines returns the warning lines of stderr.
func warningLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "pchronicle: warning:") {
			out = append(out, l)
		}
	}
	return out
}

// TestNotTrajectoriesAreOneSummaryLine runs every command that reads
// trajectory files over the 92 real files of negatives/ beside one
// trajectory: each succeeds, reads the trajectory, and reports the others
// in exactly one summary line — never the long per-file reason — and
// ls --detect lists every one of them with its reason.
func TestNotTrajectoriesAreOneSummaryLine(t *testing.T) {
	dir, n := skippedFolder(t)
	summary := fmt.Sprintf("pchronicle: warning: %d files are not trajectories, e.g. ", n)
	for _, args := range [][]string{
		{"query", dir, "--no-cache", "SELECT count(*) FROM runs"},
		{"stats", dir, "--no-cache"},
		{"find", dir, "--no-cache"},
		{"export", dir, "--no-cache", "--as", "openai"},
		{"inspect", dir},
		{"import", dir, "--to", filepath.Join(t.TempDir(), "store")},
	} {
		t.Run(args[0], func(t *testing.T) {
			stdout, stderr, code := testutil.Run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			lines := warningLines(stderr)
			if len(lines) != 1 || !strings.HasPrefix(lines[0], summary) || !strings.HasSuffix(lines[0], " more; pchronicle ls --detect lists them") {
				t.Errorf("want one summary line %q…, got %q", summary, lines)
			}
			if strings.Contains(stderr, "expected ATIF") || len(stderr) > 2000 {
				t.Errorf("per-file reasons on stderr (%d bytes):\n%s", len(stderr), stderr)
			}
			if args[0] == "query" && !strings.Contains(stdout, "1") {
				t.Errorf("the trajectory was not read: %s", stdout)
			}
		})
	}
	stdout, stderr, code := testutil.Run(t, "ls", dir, "--detect", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("ls --detect: exit %d: %s", code, stderr)
	}
	rows := jsonlRows(t, stdout)
	notTraj := 0
	for _, r := range rows {
		if d, _ := r["detection"].(string); strings.HasPrefix(d, "not a trajectory: ") {
			notTraj++
		} else if r["_file_"] != "trajectory.json" {
			t.Errorf("%v: %v", r["_file_"], d)
		}
	}
	if len(rows) != n+1 || notTraj != n {
		t.Errorf("ls --detect: %d rows, %d not trajectories; want %d, %d", len(rows), notTraj, n+1, n)
	}
}

// TestSkipUnreadable: a file a format claims but cannot parse fails every
// command that reads it, naming the file and --exclude; with
// --skip-unreadable it is a warning and the other files are read.
func TestSkipUnreadable(t *testing.T) {
	dir := t.TempDir()
	good := testutil.Sample(t, "atif/nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json")
	os.WriteFile(filepath.Join(dir, "good.json"), good, 0o644)
	os.WriteFile(filepath.Join(dir, "broken.json"), good[:len(good)/2], 0o644) // claimed as ATIF, cut in the middle
	for _, args := range [][]string{
		{"query", dir, "--no-cache", "SELECT count(*) AS n FROM runs"},
		{"stats", dir, "--no-cache"},
		{"find", dir, "--no-cache"},
		{"export", dir, "--no-cache", "--as", "openai"},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, stderr, code := testutil.Run(t, args...)
			if code == 0 || !strings.Contains(stderr, "broken.json") || !strings.Contains(stderr, "--exclude 'broken.json'") ||
				!strings.Contains(stderr, "--skip-unreadable") {
				t.Errorf("default: exit %d, stderr:\n%s", code, stderr)
			}
			stdout, stderr, code := testutil.Run(t, append(args, "--skip-unreadable")...)
			lines := warningLines(stderr)
			if code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "1 file could not be read and skipped (--skip-unreadable): broken.json") {
				t.Errorf("--skip-unreadable: exit %d, warnings %q, stderr:\n%s", code, lines, stderr)
			}
			if args[0] == "query" && !strings.Contains(stdout, "1") {
				t.Errorf("the good file was not read: %s", stdout)
			}
		})
	}
}

// TestOpenCodeStorageTreeGivesNoRows: an OpenCode storage tree (one record
// per file: session, message headers, parts, project, todo; built in
// internal/ingest/testdata after OpenCode's schemas) used to become three
// made-up openai/responses Storylines. Through the binary it gives no rows
// and one summary line.
func TestOpenCodeStorageTreeGivesNoRows(t *testing.T) {
	tree := filepath.Join(testutil.RepoRoot(t), "internal", "ingest", "testdata", "opencode-storage")
	stdout, stderr, code := testutil.Run(t, "query", tree, "--no-cache", "--format", "csv", "SELECT count(*) AS n FROM runs")
	lines := warningLines(stderr)
	if code != 0 || stdout != "n\n0\n" || len(lines) != 1 || !strings.HasPrefix(lines[0], "pchronicle: warning: 11 files are not trajectories, e.g. ") {
		t.Fatalf("exit %d, stdout %q, warnings %q", code, stdout, lines)
	}
}
