package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/parquet-go/parquet-go"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// pc runs the real binary and returns stdout, stderr and the exit code.
func pc(t *testing.T, args ...string) (string, string, int) { return testutil.Run(t, args...) }

type relCounts map[string]int64

// directCounts normalizes the files under root in-process.
func directCounts(t *testing.T, root string) relCounts {
	c, _ := directCountsOf(t, root)
	return c
}

// directCountsOf is directCounts and the number of files that are
// trajectories (the others are skipped, as import skips them).
func directCountsOf(t *testing.T, root string) (relCounts, int) {
	t.Helper()
	files, err := catalog.PeripheralFiles(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	c := relCounts{}
	trajectories := 0
	for _, f := range catalog.GroupConversations(files) {
		count := func(sl *model.Storyline) error {
			c[model.RelRuns]++
			c[model.RelSteps] += int64(len(sl.Steps))
			c[model.RelToolCalls] += int64(len(sl.ToolCalls))
			return nil
		}
		var err error
		if conv, ok := f.Revision.(*catalog.ConversationRevision); ok { // one input, as import reads it
			err = conv.Normalize(context.Background(), format.Source{Path: f.Path, File: f.File}, 0, count)
		} else {
			_, err = ingest.NormalizeFile(context.Background(), f.Path, f.File, ingest.Options{}, count)
		}
		if errors.Is(err, format.ErrUnrecognized) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", f.File, err)
		}
		trajectories++
	}
	return c, trajectories
}

// storeCounts pins the store and counts rows with DuckDB SQL.
func storeCounts(t *testing.T, dir string) (relCounts, *storyline.Generation) {
	t.Helper()
	st, err := storyline.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.Pin()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := relCounts{}
	for _, rel := range storyline.Tables {
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM read_parquet(?)", g.Path(rel)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		c[rel] = n
	}
	return c, g
}

func TestImportSamplesEndToEnd(t *testing.T) {
	samples := testutil.SamplesDir(t)
	want, trajectories := directCountsOf(t, samples)
	dest := filepath.Join(t.TempDir(), "store")
	out, stderr, code := pc(t, "import", samples, "--to", dest)
	if code != 0 {
		t.Fatalf("import exit %d: %s", code, stderr)
	}
	got, g := storeCounts(t, dest)
	if !maps.Equal(got, want) {
		t.Fatalf("DuckDB counts %v, direct normalization %v", got, want)
	}
	if !strings.Contains(out, "gen-000000") || g.Number != 0 {
		t.Fatalf("first import should publish generation 0: %q", out)
	}
	if len(g.Manifest.Sources) != trajectories { // the files that are not trajectories are skipped
		t.Fatalf("%d sources recorded, %d trajectory files", len(g.Manifest.Sources), trajectories)
	}
	if strings.Count(stderr, "pchronicle: warning:") != 1 || !strings.Contains(stderr, "files are not trajectories, e.g. ") {
		t.Fatalf("want one summary line of the files that are not trajectories:\n%s", stderr)
	}

	// Idempotent: a second import of the same inputs gives identical files.
	dest2 := filepath.Join(t.TempDir(), "store")
	if _, stderr, code := pc(t, "import", samples, "--to", dest2); code != 0 {
		t.Fatal(stderr)
	}
	_, g2 := storeCounts(t, dest2)
	for _, rel := range storyline.Tables {
		a, _ := os.ReadFile(g.Path(rel))
		b, _ := os.ReadFile(g2.Path(rel))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two imports of the same inputs: %s", rel, firstRowDiff(t, rel, g.Path(rel), g2.Path(rel)))
		}
	}

	show, _, code := pc(t, "store", "show", dest, "--format", "csv")
	if code != 0 || !strings.Contains(show, "0,") || strings.Count(show, "\n") != 4 {
		t.Fatalf("store show: %q", show)
	}
}

// firstRowDiff describes the first row that differs between two files of
// relation rel, or says that their rows are equal (only the encoding
// differs), so that a failure shows what changed.
func firstRowDiff(t *testing.T, rel, a, b string) string {
	t.Helper()
	switch rel {
	case model.RelRuns:
		return rowDiff[model.Run](t, a, b)
	case model.RelSteps:
		return rowDiff[model.Step](t, a, b)
	default:
		return rowDiff[model.ToolCall](t, a, b)
	}
}

func rowDiff[T any](t *testing.T, a, b string) string {
	ra, err := parquet.ReadFile[T](a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := parquet.ReadFile[T](b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range min(len(ra), len(rb)) {
		ja, _ := json.Marshal(ra[i])
		jb, _ := json.Marshal(rb[i])
		if !bytes.Equal(ja, jb) {
			return fmt.Sprintf("row %d\nfirst:  %s\nsecond: %s", i, ja, jb)
		}
	}
	if len(ra) != len(rb) {
		return fmt.Sprintf("%d rows, then %d", len(ra), len(rb))
	}
	return fmt.Sprintf("the %d rows are equal; only the encoding differs", len(ra))
}

func TestImportProvenanceAndModes(t *testing.T) {
	samples := testutil.SamplesDir(t)
	a := filepath.Join(samples, "atif", "harbor-golden")
	b := filepath.Join(samples, "openai", "openai-cookbook_toy_chat_fine_tuning.jsonl")
	dest := filepath.Join(t.TempDir(), "store")
	if _, stderr, code := pc(t, "import", a, b, "--to", dest); code != 0 {
		t.Fatal(stderr)
	}
	_, g := storeCounts(t, dest)
	var names []string
	for _, s := range g.Manifest.Sources {
		names = append(names, s.File)
	}
	wantNames := "harbor-golden/misc/openhands_hello-world.trajectory.json,harbor-golden/terminus_2_context-summarization/trajectory.json," +
		"harbor-golden/terminus_2_context-summarization/trajectory.summarization-1-summary.json,harbor-golden/terminus_2_linear-history/trajectory.cont-1.json," +
		"harbor-golden/terminus_2_linear-history/trajectory.json,openai-cookbook_toy_chat_fine_tuning.jsonl"
	if got := strings.Join(names, ","); got != wantNames {
		t.Fatalf("_file_ values\n%s\nwant\n%s", got, wantNames)
	}
	both, _ := storeCounts(t, dest)

	// replace (default): exactly the new inputs.
	if _, stderr, code := pc(t, "import", b, "--to", dest); code != 0 {
		t.Fatal(stderr)
	}
	onlyB, g := storeCounts(t, dest)
	if g.Number != 1 || len(g.Manifest.Sources) != 1 || g.Manifest.Sources[0].File != "openai-cookbook_toy_chat_fine_tuning.jsonl" {
		t.Fatalf("replace: generation %d sources %+v", g.Number, g.Manifest.Sources)
	}
	// append: the harbor files come back; b's rows are replaced, not doubled.
	if _, stderr, code := pc(t, "import", a, b, "--to", dest, "--mode", "append"); code != 0 {
		t.Fatal(stderr)
	}
	if got, _ := storeCounts(t, dest); !maps.Equal(got, both) {
		t.Fatalf("append: %v, want %v", got, both)
	}
	if _, stderr, code := pc(t, "import", b, "--to", dest, "--mode", "append"); code != 0 {
		t.Fatal(stderr)
	}
	if got, g := storeCounts(t, dest); !maps.Equal(got, both) || len(g.Manifest.Sources) != 1+5 {
		t.Fatalf("re-append of a single SRC (_file_ = base name, already present): %v sources %d; only-b %v",
			got, len(g.Manifest.Sources), onlyB)
	}
}

func TestImportErrors(t *testing.T) {
	samples := testutil.SamplesDir(t)
	good := filepath.Join(samples, "atif", "harbor-golden", "misc", "openhands_hello-world.trajectory.json")
	in := t.TempDir()
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	writeInput(t, filepath.Join(in, "a-good.json"), string(data))
	writeInput(t, filepath.Join(in, "b-truncated.json"), string(data[:len(data)/2]))
	writeInput(t, filepath.Join(in, "c-unknown.json"), `{"hello": "world"}`)

	// strict: fails, nothing published, no store left behind.
	dest := filepath.Join(t.TempDir(), "store")
	_, stderr, code := pc(t, "import", in, "--to", dest)
	// c-unknown.json is not a trajectory: skipped, never a failure.
	if code == 0 || !strings.Contains(stderr, "b-truncated.json") {
		t.Fatalf("strict: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("strict failure left %s behind (%v)", dest, err)
	}

	// report: the bad file listed, the one that is not a trajectory
	// counted, the good one imported.
	out, stderr, code := pc(t, "import", in, "--to", dest, "--errors", "report")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"b-truncated.json", "1 file is not a trajectory: c-unknown.json", "1 input(s) could not be imported"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("report stderr lacks %q:\n%s", want, stderr)
		}
	}
	got, g := storeCounts(t, dest)
	want := directCounts(t, good)
	if !maps.Equal(got, want) || len(g.Manifest.Sources) != 1 || !strings.Contains(out, "imported 1 file(s)") {
		t.Fatalf("report: counts %v want %v, sources %+v, out %q", got, want, g.Manifest.Sources, out)
	}

	// strict failure on an existing store publishes nothing.
	if _, _, code := pc(t, "import", in, "--to", dest); code == 0 {
		t.Fatal("strict import of bad inputs succeeded")
	}
	if _, g2 := storeCounts(t, dest); g2.Number != g.Number {
		t.Fatalf("strict failure published generation %d", g2.Number)
	}

	// Two SRCs that map to the same _file_.
	other := filepath.Join(t.TempDir(), filepath.Base(in))
	writeInput(t, filepath.Join(other, "a-good.json"), string(data))
	if _, stderr, code := pc(t, "import", in, other, "--to", dest); code == 0 || !strings.Contains(stderr, "would both be imported as _file_") {
		t.Fatalf("duplicate _file_: exit %d %q", code, stderr)
	}
}

func TestStoreGCCommand(t *testing.T) {
	samples := testutil.SamplesDir(t)
	b := filepath.Join(samples, "openai", "openai-cookbook_toy_chat_fine_tuning.jsonl")
	dest := filepath.Join(t.TempDir(), "store")
	for range 3 {
		if _, stderr, code := pc(t, "import", b, "--to", dest); code != 0 {
			t.Fatal(stderr)
		}
	}
	out, _, code := pc(t, "store", "gc", dest)
	if code != 0 || out != "" {
		t.Fatalf("gc with default retention removed %q (exit %d)", out, code)
	}
	out, _, code = pc(t, "store", "gc", dest, "--retention", "0s")
	if code != 0 || out != "removed gen-000000\nremoved gen-000001\n" {
		t.Fatalf("gc --retention 0s: %q (exit %d)", out, code)
	}
	if got, g := storeCounts(t, dest); g.Number != 2 || got[model.RelRuns] == 0 {
		t.Fatalf("current after gc: %d %v", g.Number, got)
	}
	if _, stderr, code := pc(t, "store", "show", t.TempDir()); code == 0 || !strings.Contains(stderr, "not a storyline store") {
		t.Fatalf("show on a non-store: %d %q", code, stderr)
	}
}

func writeInput(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportListingFailureNeverPublishes: an input tree that cannot be
// listed fails the import under --errors report too, and the store keeps
// the generation it had: an incomplete listing must never replace its rows.
func TestImportListingFailureNeverPublishes(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "store")
	good := t.TempDir()
	testutil.WriteFiles(t, good, map[string]string{"a.jsonl": importChat + importChat})
	if _, stderr, code := pc(t, "import", good, "--to", dest); code != 0 {
		t.Fatal(stderr)
	}
	before, err := os.ReadFile(filepath.Join(dest, "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	bad := t.TempDir()
	testutil.WriteFiles(t, bad, map[string]string{"b.jsonl": importChat})
	testutil.TooDeepDir(t, bad, "hidden.jsonl", importChat)
	_, stderr, code := pc(t, "import", bad, "--to", dest, "--errors", "report")
	if code == 0 || !strings.Contains(stderr, "file name too long") {
		t.Fatalf("import over an unlistable tree: exit %d, stderr %q", code, stderr)
	}
	after, err := os.ReadFile(filepath.Join(dest, "CURRENT"))
	if err != nil || string(after) != string(before) {
		t.Fatalf("CURRENT went from %q to %q (%v): the failed import published", before, after, err)
	}
}

const importChat = `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}` + "\n"

// TestLsDetectShowsFormatsAndWhyNot: ls --detect names each file's format,
// or why no adapter recognized it.
func TestLsDetectShowsFormatsAndWhyNot(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"chat.jsonl": importChat, "package.json": `{"name": "x", "version": "1.0.0"}`})
	out, stderr, code := pc(t, "ls", root, "--detect", "--format", "csv")
	if code != 0 {
		t.Fatal(stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], ",detected,detection") {
		t.Fatalf("ls --detect:\n%s", out)
	}
	if !strings.HasSuffix(lines[1], ",openai/chat-jsonl,ok") || !strings.Contains(lines[2], ",,\"not a trajectory: a JSON object with keys [name, version]") {
		t.Fatalf("ls --detect rows:\n%s", out)
	}
}
