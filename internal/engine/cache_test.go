package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/normcache"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestCacheNeverChangesResults: the pruning test's generated queries give
// the same rows in processes sharing a normalization cache as without one.
// Each query runs in a new Snapshot, as in a new process, so it is served
// by whatever entries the earlier ones left — batches, single sources, solo
// resolutions, entries shared with sources it does not read — and half way
// some files change (one grows, one is rewritten with the same size), so
// their old entries must never be served while the others still are.
func TestCacheNeverChangesResults(t *testing.T) {
	root := fixture(t, 16)
	time.Sleep(2100 * time.Millisecond) // younger files are not kept (docs/storage.md, "Normalization cache")
	cached := catalog.DefaultOptions()
	cached.CacheDir = t.TempDir()
	_, full := open(t, root, catalog.DefaultOptions())
	var files []string
	for _, r := range mustQuery(t, full, "SELECT _file_ FROM sources ORDER BY 1").Rows {
		files = append(files, r[0].(string))
	}
	g := &queryGen{rng: rand.New(rand.NewPCG(3, 4)), files: files}
	n := 80
	if testing.Short() {
		n = 30
	}
	for i := 0; i < n; i++ {
		if i == n/2 {
			grow := filepath.Join(root, "a", "f000.jsonl")
			f, err := os.OpenFile(grow, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(chatLine("grown", 2))
			f.Close()
			same := filepath.Join(root, "b", "f003.jsonl")
			data, _ := os.ReadFile(same)
			os.WriteFile(same, []byte(strings.ReplaceAll(string(data), "t3", "x3")), 0o644)
			_, full = open(t, root, catalog.DefaultOptions())
		}
		sql, _ := g.query()
		want, err := full.Query(context.Background(), sql, QueryOptions{})
		if err != nil {
			t.Fatalf("without the cache, %s: %v", sql, err)
		}
		snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, cached)
		if err != nil {
			t.Fatal(err)
		}
		e := New(snap, parser, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
		got, err := e.Query(context.Background(), sql, QueryOptions{})
		e.Close()
		snap.Close()
		if err != nil {
			t.Fatalf("with the cache, %s: %v", sql, err)
		}
		if a, b := strings.Join(canonicalRows(got), "\n"), strings.Join(canonicalRows(want), "\n"); a != b {
			t.Fatalf("query %d, results differ for\n%s\ncached (%d rows):\n%s\nwithout the cache (%d rows):\n%s", i, sql, len(got.Rows), a, len(want.Rows), b)
		}
	}
	st := testutil.CacheStats(t, cached.CacheDir)
	if st.Hits == 0 || st.Stored == 0 || st.Misses == 0 || st.Rejected != 0 || st.Failures != 0 {
		t.Fatalf("the queries did not exercise the cache: %+v", st)
	}
	t.Logf("cache after %d queries: %d entries, %d hits, %d misses", n, st.Entries, st.Hits, st.Misses)
}

// TestCachedTrialFollowsItsResult: a Harbor trial's result.json is part of
// its trajectory's pin, so rewriting only result.json (the trajectory
// unchanged) is never served from the cache; the other trials still are.
func TestCachedTrialFollowsItsResult(t *testing.T) {
	root := harborJob(t)
	time.Sleep(2100 * time.Millisecond) // younger files are not kept
	opts := catalog.DefaultOptions()
	opts.CacheDir = t.TempDir()
	const sql = "SELECT _file_, reward FROM runs WHERE reward IS NOT NULL ORDER BY 1"
	rewards := func() string {
		t.Helper()
		snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		e := New(snap, parser, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
		defer e.Close()
		return fmt.Sprint(mustQuery(t, e, sql).Rows)
	}
	if got, want := rewards(), "[[job/trial-1/agent/trajectory.json 1] [job/trial-2/agent/trajectory.json 0]]"; got != want {
		t.Fatalf("rewards %s, want %s", got, want)
	}
	before := testutil.CacheStats(t, opts.CacheDir)
	os.WriteFile(filepath.Join(root, "job", "trial-1", "result.json"), []byte(`{"verifier_result": {"rewards": {"reward": 0.5}}}`), 0o644)
	if got, want := rewards(), "[[job/trial-1/agent/trajectory.json 0.5] [job/trial-2/agent/trajectory.json 0]]"; got != want {
		t.Fatalf("after result.json changed: rewards %s, want %s", got, want)
	}
	if st := testutil.CacheStats(t, opts.CacheDir); st.Hits-before.Hits != 4 || st.Misses-before.Misses != 1 {
		t.Fatalf("want the two unchanged trials and the job's two files served from the cache, trial-1 normalized: %+v (before %+v)", st, before)
	}
}

// TestLeanServedFromWholeEntry: a query that reads no free text of a
// relation is served from the whole relation's cache entries that an
// earlier process kept, rather than normalizing the files again lean; and
// lean entries, once kept, serve the next lean query.
func TestLeanServedFromWholeEntry(t *testing.T) {
	root := fixture(t, 4)
	time.Sleep(2100 * time.Millisecond) // younger files are not kept
	opts := catalog.DefaultOptions()
	opts.CacheDir = t.TempDir()
	run := func(sql string) (string, normcache.Stats) {
		t.Helper()
		snap, e := open(t, root, opts)
		rows := fmt.Sprint(mustQuery(t, e, sql).Rows)
		e.Close()
		snap.Close() // counts its session's hits and misses
		return rows, testutil.CacheStats(t, opts.CacheDir)
	}
	const leanSQL = "SELECT count(*), count(DISTINCT function_name) FROM tool_calls"
	_, whole := run("SELECT count(arguments) FROM tool_calls")
	got, st := run(leanSQL)
	_, uncached := open(t, root, catalog.DefaultOptions())
	if want := fmt.Sprint(mustQuery(t, uncached, leanSQL).Rows); got != want {
		t.Fatalf("lean query over whole entries: %s, want %s", got, want)
	}
	if st.Stored != whole.Stored || st.Hits != whole.Hits+4 {
		t.Fatalf("want the 4 files served from their whole entries, nothing stored: %+v (after the whole query %+v)", st, whole)
	}

	opts.CacheDir = t.TempDir()
	_, first := run(leanSQL)
	again, st := run(leanSQL)
	if again != got || first.Stored == 0 || st.Stored != first.Stored || st.Hits != first.Hits+4 {
		t.Fatalf("want the lean entries the first lean query kept to serve the second (%s, want %s): %+v (after the first %+v)", again, got, st, first)
	}
}

// Sources read one at a time (an export, a server's Storyline pages) leave
// an entry each; a query over many of them then normalizes them again as
// one batch instead of linking and scanning a small file per source, and
// the next query is served by that batch.
func TestManySmallEntriesOfOneSourceBecomeABatch(t *testing.T) {
	const n = 80 // at least normcache's smallEntriesMin
	root := fixture(t, n)
	time.Sleep(2100 * time.Millisecond) // younger files are not kept
	opts := catalog.DefaultOptions()
	opts.CacheDir = t.TempDir()
	build := func() *catalog.Snapshot {
		snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snap.Close() })
		return snap
	}
	snap := build()
	reader := NewReader(snap, LimitsFrom(snap.Options))
	for _, src := range snap.Datasets[0].Sources {
		if err := reader.EachStoryline(context.Background(), catalog.DefaultAlias, src.File, StorylineFilter{}, func(*model.Storyline) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	reader.Close()
	stored := testutil.CacheStats(t, opts.CacheDir).Stored

	for round := range 2 {
		snap := build()
		e := New(snap, parser, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
		if got := mustQuery(t, e, "SELECT count(*) FROM runs").Rows[0][0]; got != int64(2*n) {
			t.Fatalf("round %d: %v runs, want %d", round, got, 2*n)
		}
		e.Close()
		files := map[string]bool{}
		for _, src := range snap.Datasets[0].Sources {
			res, err := src.Resolve(context.Background(), catalog.LeanPart(model.RelRuns)) // what the count read
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Files[model.RelRuns] {
				files[f] = true
			}
		}
		if len(files) > snap.Options.MaxConcurrentSources {
			t.Fatalf("round %d: the runs of %d sources are in %d files", round, n, len(files))
		}
		// The first round keeps its batch; the second is served by it.
		st := testutil.CacheStats(t, opts.CacheDir)
		if round == 0 && st.Stored == stored || round == 1 && st.Stored != stored {
			t.Fatalf("round %d: %d entries stored in all, %d before", round, st.Stored, stored)
		}
		stored = st.Stored
	}
}

// An export reads many small sources at a time (Reader.EachStorylineOf):
// they are normalized as one batch, kept as the batch's entries rather
// than three per source, and a later query or export is served by them.
func TestEachStorylineOfResolvesItsFilesAsOneBatch(t *testing.T) {
	const n = 40
	root := fixture(t, n)
	time.Sleep(2100 * time.Millisecond) // younger files are not kept
	opts := catalog.DefaultOptions()
	opts.CacheDir = t.TempDir()
	build := func() (*catalog.Snapshot, []string) {
		snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snap.Close() })
		var files []string
		for _, src := range snap.Datasets[0].Sources {
			files = append(files, src.File)
		}
		return snap, files
	}
	export := func() int {
		snap, files := build()
		reader := NewReader(snap, LimitsFrom(snap.Options))
		defer reader.Close()
		runs := 0
		err := reader.EachStorylineOf(context.Background(), catalog.DefaultAlias, files, StorylineFilter{}, func(string, *model.Storyline) error {
			runs++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	if runs := export(); runs != 2*n {
		t.Fatalf("%d Storylines read, want %d", runs, 2*n)
	}
	stored := testutil.CacheStats(t, opts.CacheDir).Stored
	if most := int64(3 * opts.MaxConcurrentSources); stored == 0 || stored > most {
		t.Fatalf("%d entries stored for %d sources, want at most %d (a batch's, one per relation and worker)", stored, n, most)
	}
	snap, _ := build()
	e := New(snap, parser, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
	defer e.Close()
	if got := mustQuery(t, e, "SELECT count(*) FROM steps").Rows[0][0]; got == int64(0) {
		t.Fatal("no steps")
	}
	if runs := export(); runs != 2*n {
		t.Fatalf("again: %d Storylines read, want %d", runs, 2*n)
	}
	if st := testutil.CacheStats(t, opts.CacheDir); st.Stored != stored {
		t.Fatalf("a query and a second export stored %d entries more: the export's batch did not serve them", st.Stored-stored)
	}
}
