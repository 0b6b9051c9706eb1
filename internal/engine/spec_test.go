package engine

// One test per goal and per invariant of the Snapshot's design (listed in
// docs/testing.md), each named after what it checks. Invariants 9 and 10
// are about the server; they are checked here on the parts it is built
// from (a Snapshot is complete or not built at all, and nothing that reads
// a Dataset writes to it) and again in internal/server, with invariant 14
// (the server's routing index).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/projection"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

func build(t *testing.T, mounts ...catalog.DatasetMount) *catalog.Snapshot {
	t.Helper()
	snap, err := catalog.Build(context.Background(), mounts, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap
}

// rowsOf returns a query's rows as "a,b;c,d".
func rowsOf(t *testing.T, e *Engine, sql string) string {
	t.Helper()
	var out []string
	for _, r := range mustQuery(t, e, sql).Rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(cells, ","))
	}
	return strings.Join(out, ";")
}

// copyDir copies a directory tree (a store) with cp -r.
func copyDir(from, to string) error {
	out, err := exec.Command("cp", "-r", from, to).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp: %v: %s", err, out)
	}
	return nil
}

// importStore publishes the rows of examples/trajectories as a new
// generation of the Storyline store at dir (created when missing), with
// the store's Go API: what `pchronicle import` writes, without running
// the binary.
func importStore(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	files, err := catalog.PeripheralFiles(ctx, filepath.Join(testutil.RepoRoot(t), "examples", "trajectories"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := storyline.Prepare(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, f := range files {
		var n int64
		det, err := ingest.NormalizeFile(ctx, f.Path, f.File, ingest.Options{}, func(sl *model.Storyline) error {
			n++
			return w.Add(sl)
		})
		if err != nil {
			t.Fatal(err)
		}
		w.AddSource(storyline.SourceInfo{File: f.File, Format: det.Format, Layout: det.Layout, Bytes: f.Size, Storylines: n})
	}
	if _, err := w.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func TestGoal01_MultiDatasetJoins(t *testing.T) {
	a, b := fixture(t, 2), fixture(t, 2)
	e := New(build(t, catalog.DatasetMount{Alias: "live", URI: a}, catalog.DatasetMount{Alias: "archive", URI: b}), parser, testConfig(false))
	got := rowsOf(t, e, "SELECT count(*) FROM live.runs l JOIN archive.runs r ON l._file_ = r._file_ AND l.session_id = r.session_id")
	if got != "4" {
		t.Fatalf("one statement over two Datasets: %s", got)
	}
}

func TestGoal02_HierarchicalDiscovery(t *testing.T) {
	root := fixture(t, 2)
	store := filepath.Join(root, "imported")
	importStore(t, store)
	for uri, want := range map[string]string{
		root:                                   "a/f000.jsonl:file b/f001.jsonl:file imported:storyline",
		filepath.Join(root, "a"):               "f000.jsonl:file",
		store:                                  ".:storyline",
		filepath.Join(root, "a", "f000.jsonl"): ".:file",
	} {
		snap := build(t, catalog.DatasetMount{Alias: "d", URI: uri})
		var got []string
		for _, s := range snap.Datasets[0].Sources {
			got = append(got, s.File+":"+string(s.Kind))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %s", uri, got, want)
		}
	}
}

func TestGoal03_UnifiedTableModel(t *testing.T) {
	e := New(build(t, catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: testutil.SamplesDir(t)}), parser, testConfig(true))
	got := rowsOf(t, e, "SELECT DISTINCT split_part(source_format, '/', 1) FROM runs ORDER BY 1")
	if got != "actf;aider;atif;atif-jsonl;gemini-cli;inspect;langfuse;openai;openhands;pi;qwen-code;swe-agent;tau-bench" {
		t.Fatalf("every format shares the same runs relation: %s", got)
	}
}

func TestGoal04_StableIdentity(t *testing.T) {
	snap := build(t, catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: testutil.SamplesDir(t)})
	e := New(snap, parser, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
	reader := NewReader(snap, LimitsFrom(snap.Options))
	defer reader.Close()
	// The linear-history main segment and its continuation share a session_id;
	// (dataset, _file_, session_id) still names exactly one Storyline each.
	res := mustQuery(t, e, "SELECT _file_, session_id FROM runs WHERE session_id = 'NORMALIZED_SESSION_ID' ORDER BY 1")
	if len(res.Rows) < 2 {
		t.Fatalf("expected a shared session_id across sources: %v", res.Rows)
	}
	for _, r := range res.Rows {
		sl, err := reader.LoadStoryline(context.Background(), StorylineKey{catalog.DefaultAlias, r[0].(string), r[1].(string)})
		if err != nil || sl.Run.File != r[0] {
			t.Fatalf("LoadStoryline(%v): %v", r, err)
		}
	}
}

func TestGoal05_SnapshotConsistency(t *testing.T) {
	root := fixture(t, 2)
	store := filepath.Join(root, "imported")
	importStore(t, store)
	e := New(build(t, catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: root}), parser, testConfig(true))
	before := rowsOf(t, e, "SELECT count(*) FROM runs")
	// A new file and a new generation appear after the Snapshot was built.
	os.WriteFile(filepath.Join(root, "a", "new.jsonl"), []byte(chatLine("new", 1)), 0o644)
	importStore(t, store)
	if after := rowsOf(t, e, "SELECT count(*) FROM runs"); after != before {
		t.Fatalf("the Snapshot saw new data: %s then %s", before, after)
	}
	if n := rowsOf(t, e, "SELECT count(*) FROM sources"); n != "3" {
		t.Fatalf("sources = %s", n)
	}
}

func TestGoal06_StableDefaultEntry(t *testing.T) {
	e := New(build(t, catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: fixture(t, 1)}), parser, testConfig(true))
	if rowsOf(t, e, "SELECT (SELECT count(*) FROM runs) = (SELECT count(*) FROM dataset.runs)") != "true" {
		t.Fatal("unqualified names must resolve to the dataset schema")
	}
}

func TestGoal07_BoundedFailure(t *testing.T) {
	opts := catalog.DefaultOptions()
	opts.MaxFiles = 1
	_, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "d", URI: fixture(t, 3)}}, opts)
	var le *catalog.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("max_files must bound discovery: %v", err)
	}
	opts = catalog.DefaultOptions()
	opts.MaxOutputRows = 1
	_, e := open(t, fixture(t, 2), opts)
	if _, err := e.Query(context.Background(), "SELECT * FROM steps", QueryOptions{}); !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("output rows must be bounded: %v", err)
	}
}

func TestGoal08_SafeWritesMountsAreReadOnly(t *testing.T) {
	root := fixture(t, 1)
	_, e := open(t, root, catalog.DefaultOptions())
	for _, sql := range []string{"COPY (SELECT 1) TO '" + filepath.Join(root, "x.csv") + "'", "CREATE TABLE t AS SELECT 1", "INSERT INTO runs SELECT * FROM runs"} {
		if _, err := e.Query(context.Background(), sql, QueryOptions{}); err == nil {
			t.Errorf("write accepted: %s", sql)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 { // only the fixture's "a" directory
		t.Fatalf("the Dataset root was written to: %v", entries)
	}
}

func TestGoal09_CatalogAwarePruning(t *testing.T) {
	snap, e := open(t, fixture(t, 8), catalog.DefaultOptions())
	mustQuery(t, e, "SELECT count(*) FROM runs WHERE _file_ = 'b/f003.jsonl' AND step_count > 1")
	if snap.Resolves() != 1 {
		t.Fatalf("resolved %d sources for a one-source predicate", snap.Resolves())
	}
}

func TestGoal10_LazyResolution(t *testing.T) {
	snap, e := open(t, fixture(t, 5), catalog.DefaultOptions())
	if snap.Resolves() != 0 {
		t.Fatal("building resolved sources")
	}
	// Each relation of each source resolves once per Snapshot: a query
	// normalizes a file for the relations it reads (docs/query-model.md).
	for range 2 {
		mustQuery(t, e, "SELECT count(*) FROM runs")
		mustQuery(t, e, "SELECT count(*) FROM steps")
		mustQuery(t, e, "SELECT count(*) FROM runs JOIN steps USING (_file_, session_id)")
	}
	if snap.Resolves() != 5+5 {
		t.Fatalf("each relation of each source resolves once per Snapshot: %d resolutions, want 10", snap.Resolves())
	}
}

func TestInvariant01_NamespaceAndAliasAreSeparate(t *testing.T) {
	m, err := catalog.ParseMount("team/Nightly-Runs=" + fixture(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	e := New(build(t, m), parser, testConfig(false))
	if got := rowsOf(t, e, "SELECT DISTINCT dataset FROM nightly_runs.sources"); got != "team/Nightly-Runs" {
		t.Fatalf("namespace %q, alias nightly_runs", got)
	}
}

func TestInvariant02_FileIsRelativeAndRootIsDot(t *testing.T) {
	root := fixture(t, 1)
	e := New(build(t, catalog.DatasetMount{Alias: "d", URI: filepath.Join(root, "a", "f000.jsonl")}, catalog.DatasetMount{Alias: "t", URI: root}), parser, testConfig(false))
	if got := rowsOf(t, e, "SELECT DISTINCT _file_ FROM d.runs UNION ALL SELECT DISTINCT _file_ FROM t.runs"); got != ".;a/f000.jsonl" {
		t.Fatalf("_file_ values: %s", got)
	}
}

func TestInvariant03_StorylineIdentityIsDatasetFileSession(t *testing.T) {
	_, e := open(t, fixture(t, 4), catalog.DefaultOptions())
	if got := rowsOf(t, e, "SELECT count(*) = count(DISTINCT (_file_, session_id)) FROM runs"); got != "true" {
		t.Fatal("(_file_, session_id) must be unique within a Dataset")
	}
	if got := rowsOf(t, e, "SELECT count(DISTINCT session_id) < count(*) FROM runs"); got != "true" {
		t.Fatal("fixture should repeat session ids across sources")
	}
}

func TestInvariant04_CompositeStoreInternalsAreNotSources(t *testing.T) {
	root := t.TempDir()
	importStore(t, filepath.Join(root, "store"))
	os.WriteFile(filepath.Join(root, "store", "stray.json"), []byte(chatLine("x", 0)), 0o644)
	snap := build(t, catalog.DatasetMount{Alias: "d", URI: root})
	if n := len(snap.Datasets[0].Sources); n != 1 {
		t.Fatalf("%d sources, want the store only", n)
	}
}

func TestInvariant05_SixFixedRelationsEvenWhenEmpty(t *testing.T) {
	_, e := open(t, t.TempDir(), catalog.DefaultOptions())
	for _, rel := range model.Relations {
		res := mustQuery(t, e, "SELECT * FROM "+rel)
		if strings.Join(res.Columns, ",") != strings.Join(model.ColumnNames(rel), ",") {
			t.Errorf("%s columns %v", rel, res.Columns)
		}
	}
}

func TestInvariant06_EventsAreOnlyCanonical(t *testing.T) {
	root := fixture(t, 2)
	importStore(t, filepath.Join(root, "store"))
	_, e := open(t, root, catalog.DefaultOptions())
	if got := rowsOf(t, e, "SELECT (SELECT count(*) FROM events), (SELECT count(*) > 0 FROM runs)"); got != "0,true" {
		t.Fatalf("events must not be forged from Storylines: %s", got)
	}
}

func TestInvariant07_SameDatasetTrajectoryJoinsCarryFile(t *testing.T) {
	_, e := open(t, fixture(t, 2), catalog.DefaultOptions())
	if _, err := e.Query(context.Background(), "SELECT * FROM runs r JOIN tool_calls c ON r.session_id = c.session_id", QueryOptions{}); err == nil {
		t.Fatal("join without _file_ equality accepted")
	}
	mustQuery(t, e, "SELECT * FROM runs r JOIN tool_calls c USING (_file_, session_id)")
}

func TestInvariant08_SourcesDoNotOutliveTheSnapshot(t *testing.T) {
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "d", URI: fixture(t, 2)}}, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	mustQuery(t, New(snap, parser, Config{Limits: LimitsFrom(snap.Options)}), "SELECT count(*) FROM d.steps")
	tmp := snap.TempDir
	if _, err := os.Stat(tmp); err != nil {
		t.Fatal(err)
	}
	snap.Close()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("resolved data survived Close: %v", err)
	}
}

// TestInvariant09_OnlyCompleteSnapshotsAndTheOldOneKeepsServing: a build
// that fails returns no Snapshot at all, and a Snapshot already in use keeps
// answering from exactly its own pinned members while newer ones are built.
func TestInvariant09_OnlyCompleteSnapshotsAndTheOldOneKeepsServing(t *testing.T) {
	root := fixture(t, 4)
	old := build(t, catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: root})
	e := New(old, parser, testConfig(true))
	defer e.Close()
	const q = "SELECT count(DISTINCT _file_), count(*) FROM steps"
	before := rowsOf(t, e, q)

	// A store whose CURRENT names a missing generation cannot be pinned:
	// under the strict policy the whole build fails, with no Snapshot.
	if err := os.MkdirAll(filepath.Join(root, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "broken", "CURRENT"), []byte("gen-000009\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, catalog.DefaultOptions())
	if err == nil || snap != nil {
		t.Fatalf("a build with an unpinnable store returned %v, %v", snap, err)
	}
	if got := rowsOf(t, e, q); got != before {
		t.Fatalf("the Snapshot in use changed after a failed build: %s, was %s", got, before)
	}

	// A complete newer Snapshot sees a new file; the old one still does not.
	if err := os.RemoveAll(filepath.Join(root, "broken")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", "new.jsonl"), []byte(chatLine("new", 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	newer := New(build(t, catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: root}), parser, testConfig(true))
	defer newer.Close()
	if got := rowsOf(t, newer, q); !strings.HasPrefix(got, "5,") {
		t.Fatalf("the newer Snapshot: %s", got)
	}
	if got := rowsOf(t, e, q); got != before {
		t.Fatalf("the old Snapshot mixed in a newer member: %s, was %s", got, before)
	}
}

// TestInvariant10_ReadingNeverWritesToADataset: queries over every relation
// and the Go API's Storyline reads leave a Dataset of files and stores
// exactly as it was (names, sizes, modification times).
func TestInvariant10_ReadingNeverWritesToADataset(t *testing.T) {
	root := fixture(t, 3)
	importStore(t, filepath.Join(root, "store"))
	fingerprint := func() string {
		var out []string
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %d %d", p, fi.Size(), fi.ModTime().UnixNano()))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "\n")
	}
	before := fingerprint()
	snap, e := open(t, root, catalog.DefaultOptions())
	reader := NewReader(snap, LimitsFrom(snap.Options))
	defer reader.Close()
	for _, rel := range []string{"sources", "runs", "steps", "tool_calls", "events", "projections"} {
		mustQuery(t, e, "SELECT count(*) FROM "+rel)
	}
	res := mustQuery(t, e, "SELECT _file_, min(session_id) FROM runs GROUP BY 1 ORDER BY 1")
	for _, r := range res.Rows {
		if _, err := reader.LoadStoryline(context.Background(), StorylineKey{catalog.DefaultAlias, r[0].(string), r[1].(string)}); err != nil {
			t.Fatal(err)
		}
	}
	if after := fingerprint(); after != before {
		t.Fatalf("reading changed the Dataset:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestInvariant11_PruningBeforeResolve(t *testing.T) {
	root := fixture(t, 3)
	// A source that would fail if opened must not be opened when pruned away.
	os.WriteFile(filepath.Join(root, "a", "z-broken.jsonl"), []byte("{broken\n"), 0o644)
	snap, e := open(t, root, catalog.DefaultOptions())
	mustQuery(t, e, "SELECT count(*) FROM runs WHERE _file_ = 'a/f000.jsonl'")
	if snap.Resolves() != 1 {
		t.Fatalf("resolved %d", snap.Resolves())
	}
}

func TestInvariant12_LateResolveUsesOnlyThePinnedVersion(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "store")
	importStore(t, store)
	snap, e := open(t, root, catalog.DefaultOptions())
	pinned := snap.Datasets[0].Sources[0].Revision.Ref()
	importStore(t, store) // publishes generation 1 after the Snapshot pinned generation 0
	st, _ := storyline.Open(store)
	if g, _ := st.Pin(); g.Number != 1 {
		t.Fatalf("setup: generation %d", g.Number)
	}
	got := rowsOf(t, e, "SELECT count(*) FROM runs")
	if got != "5" || !strings.HasPrefix(pinned, "generation=0") {
		t.Fatalf("late resolve must read the pinned generation 0: %s (%s)", got, pinned)
	}
}

func TestInvariant13_ProjectionsNeverHideCanonicalEvents(t *testing.T) {
	root, store := eventsDataset(t, "s1", "s2")
	if _, err := projection.Build(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	// A second, stale copy of the projection: still one selected, stably.
	cp := filepath.Join(root, "live", "old.storyline")
	if err := copyDir(filepath.Join(root, "live", "events.storyline"), cp); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		_, e := open(t, root, catalog.DefaultOptions())
		if got := rowsOf(t, e, "SELECT count(*) FILTER (WHERE selected), count(*) FROM projections"); got != "1,2" {
			t.Fatalf("projections: %s", got)
		}
		// Both copies are fresh, with the same creation time and generation:
		// the path decides (fresh → last_modified → generation → path), so
		// the same one is selected every time.
		if got := rowsOf(t, e, "SELECT projection_path FROM projections WHERE selected"); got != "live/events.storyline" {
			t.Fatalf("selected %s, want live/events.storyline (first by path of two equal candidates)", got)
		}
		if got := rowsOf(t, e, "SELECT count(*) FROM events"); got != "12" {
			t.Fatalf("canonical events must stay visible: %s", got)
		}
	}
}
