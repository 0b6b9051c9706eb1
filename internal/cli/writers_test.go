package cli_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// runAll runs the binary once per argument list, all at the same time, as
// separate processes, and returns each one's combined output and error.
func runAll(t *testing.T, argLists [][]string) (outs []string, errs []error) {
	t.Helper()
	bin := testutil.Binary(t)
	outs, errs = make([]string, len(argLists)), make([]error, len(argLists))
	var wg sync.WaitGroup
	for i, args := range argLists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	return outs, errs
}

// Concurrent `import --mode append` processes into one local store (which
// none of them finds existing) all succeed, and every one's rows are in
// the final generation: they used to all exit 0 with all but one's rows
// gone.
func TestConcurrentImportAppendsLoseNothing(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	examples := []string{
		filepath.Join(ex, "atif", "fix-failing-test.trajectory.json"),
		filepath.Join(ex, "openai", "support-chats.jsonl"),
		filepath.Join(ex, "codex", "rollout-2026-03-02T11-20-00-example.jsonl"),
	}
	in := t.TempDir()
	dest := filepath.Join(t.TempDir(), "store")
	want := relCounts{}
	var files []string
	var argLists [][]string
	for i := range 6 {
		src := examples[i%len(examples)]
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("w%d-%s", i, filepath.Base(src))
		path := filepath.Join(in, name)
		writeInput(t, path, string(data))
		for rel, n := range directCounts(t, path) {
			want[rel] += n
		}
		files = append(files, name)
		argLists = append(argLists, []string{"import", path, "--to", dest, "--mode", "append"})
	}
	outs, errs := runAll(t, argLists)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v: %s", i, err, outs[i])
		}
	}
	got, g := storeCounts(t, dest)
	var sources []string
	for _, s := range g.Manifest.Sources {
		sources = append(sources, s.File)
	}
	if !maps.Equal(got, want) || !slices.Equal(sources, files) {
		t.Fatalf("final generation %d: rows %v sources %v; want rows %v sources %v", g.Number, got, sources, want, files)
	}
	if g.Number != int64(len(files)-1) {
		t.Fatalf("generation %d, want %d: one per writer", g.Number, len(files)-1)
	}
}

// Concurrent `events append` processes into one new store all succeed and
// every event is stored.
func TestConcurrentEventsAppendsLoseNothing(t *testing.T) {
	store := filepath.Join(t.TempDir(), "data", "events.lance")
	in := t.TempDir()
	var argLists [][]string
	for w := range 5 {
		path := filepath.Join(in, fmt.Sprintf("w%d.jsonl", w))
		var ls []string
		for i := range 4 {
			ls = append(ls, canonicalLine(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("s%d", w), i))
		}
		writeInput(t, path, lines(ls...))
		argLists = append(argLists, []string{"events", "append", store, path})
	}
	outs, errs := runAll(t, argLists)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v: %s", i, err, outs[i])
		}
	}
	out, stderr, code := pc(t, "query", filepath.Dir(store), "SELECT count(*), count(DISTINCT event_id), max(seq) FROM events", "--format", "csv")
	if code != 0 || !strings.HasSuffix(out, "\n20,20,3\n") {
		t.Fatalf("events after 5 concurrent appends of 4: exit %d %q %s", code, out, stderr)
	}
}

// A failed import leaves its destination as it found it: an existing
// directory with other files keeps exactly them (it used to be removed
// whole), and directories the import created are removed.
func TestFailedImportLeavesDestinationAsFound(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	writeInput(t, bad, `{"schema_version": "ATIF-v1.6", "agent": {"name": "a"}, "steps": [`+"\n") // claimed, cut short
	docs := filepath.Join(t.TempDir(), "Documents")
	writeInput(t, filepath.Join(docs, "notes.txt"), "keep me")
	if _, _, code := pc(t, "import", bad, "--to", docs); code == 0 {
		t.Fatal("import of a damaged file succeeded")
	}
	entries, err := os.ReadDir(docs)
	if err != nil || len(entries) != 1 || entries[0].Name() != "notes.txt" {
		t.Fatalf("destination after a failed import: %v %v; want only notes.txt", entries, err)
	}
	parent := t.TempDir()
	if _, _, code := pc(t, "import", bad, "--to", filepath.Join(parent, "a", "b", "store")); code == 0 {
		t.Fatal("import of a damaged file succeeded")
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("a failed import left %v", entries)
	}
}

// export --out replaces the file only with a complete export: a failed one
// leaves the old content.
func TestExportOutIsReplacedOnlyWhenComplete(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	out := filepath.Join(t.TempDir(), "events.jsonl")
	writeInput(t, out, "old content\n")
	if _, _, code := pc(t, "export", ex, "--session", "no-such-session", "--as", "canonical", "--out", out); code == 0 {
		t.Fatal("an export matching nothing succeeded")
	}
	if data, _ := os.ReadFile(out); string(data) != "old content\n" {
		t.Fatalf("a failed export replaced the file with %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Fatalf("a failed export left %v", entries)
	}
	if _, stderr, code := pc(t, "export", ex, "--as", "canonical", "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	if data, _ := os.ReadFile(out); !strings.Contains(string(data), `"kind":"`+canonical.KindRunStart+`"`) {
		t.Fatalf("export did not replace the file: %.200q", data)
	}
}
