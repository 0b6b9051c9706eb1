package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestLiveFilesEndToEnd runs the real binary over a folder holding a Claude
// Code session whose last line is still being written (no newline, cut
// mid-object): query, stats and inspect read it up to its last complete
// line and warn, naming the file and line (query and stats in their summary
// line, inspect with the whole warning). The same session with the cut
// line followed by a newline is a damaged file, and the query fails naming
// it.
func TestLiveFilesEndToEnd(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/format/claudecode/testdata/session-basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimRight(data, "\n")
	i := bytes.LastIndexByte(data, '\n')
	head, last := data[:i+1], data[i+1:]
	lines := bytes.Count(head, []byte("\n"))
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "complete.jsonl"), head, 0o644)
	os.WriteFile(filepath.Join(dir, "live.jsonl"), append(append([]byte(nil), head...), last[:len(last)/2]...), 0o644)

	count := func(file string) string {
		out, stderr, code := testutil.Run(t, "query", dir, "--no-cache", "--format", "csv",
			"SELECT count(*) FROM steps WHERE _file_ = '"+file+"'")
		if code != 0 {
			t.Fatalf("query %s: exit %d: %s", file, code, stderr)
		}
		return out + "\x00" + stderr
	}
	complete, live := count("complete.jsonl"), count("live.jsonl")
	want := strings.Split(complete, "\x00")[0]
	got, stderr, _ := strings.Cut(live, "\x00")
	if got != want {
		t.Errorf("the live file has %q steps, the file without its last line %q", got, want)
	}
	warning := "pchronicle: warning: 1 file is still being written, read up to the last complete line: live.jsonl:" + strconv.Itoa(lines+1)
	if !strings.Contains(stderr, warning) {
		t.Errorf("stderr does not warn %q:\n%s", warning, stderr)
	}

	if _, stderr, code := testutil.Run(t, "stats", dir, "--no-cache"); code != 0 || !strings.Contains(stderr, warning) {
		t.Errorf("stats: exit %d, stderr:\n%s", code, stderr)
	}
	out, stderr, code := testutil.Run(t, "inspect", filepath.Join(dir, "live.jsonl"), "--format", "jsonl")
	if code != 0 || !strings.Contains(out, "the last line has no newline and is not valid JSON: the file is still being written; read up to line "+strconv.Itoa(lines)) {
		t.Errorf("inspect: exit %d, %s\n%s", code, out, stderr)
	}

	// Damaged: the same cut line, ended by a newline.
	os.WriteFile(filepath.Join(dir, "live.jsonl"), append(append(append([]byte(nil), head...), last[:len(last)/2]...), '\n'), 0o644)
	_, stderr, code = testutil.Run(t, "query", dir, "--no-cache", "SELECT count(*) FROM steps")
	if code == 0 || !strings.Contains(stderr, "live.jsonl") {
		t.Errorf("a damaged file: exit %d, stderr:\n%s", code, stderr)
	}
}
