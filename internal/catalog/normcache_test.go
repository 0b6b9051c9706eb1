package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// cacheOptions are the default options with a normalization cache in dir.
func cacheOptions(dir string) catalog.Options {
	o := catalog.DefaultOptions()
	o.CacheDir = dir
	return o
}

// cachedQuery builds a Snapshot of root, runs sql and closes the Snapshot
// (which writes the cache's counters), as one CLI process does.
func cachedQuery(t *testing.T, root string, opts catalog.Options, sql string) (string, error) {
	t.Helper()
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "dataset", URI: root}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := snap.CacheError(); err != nil {
		t.Fatal(err)
	}
	return queryRows(t, snap, sql)
}

func mustCachedQuery(t *testing.T, root string, opts catalog.Options, sql string) string {
	t.Helper()
	rows, err := cachedQuery(t, root, opts, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// Queries that resolve one source alone, and all of them as a batch.
const (
	oneSourceSQL = `SELECT session_id, message_value FROM steps WHERE _file_ = 'a.jsonl' ORDER BY ALL`
	batchSQL     = `SELECT _file_, session_id, message_value FROM steps ORDER BY ALL`
)

func chatTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.jsonl": chat("one"), "b.jsonl": chat("bee"), "sub/c.jsonl": chat("sea"),
		"config.json": `{"model":"x"}`}) // not a trajectory: a warning, kept in the cache too
	return root
}

// TestWarmCacheServesTheSameRows: a second process over unchanged files is
// served from the cache — nothing is normalized — with the rows and
// warnings a process without the cache gets, for a source read alone and
// for a batch.
func TestWarmCacheServesTheSameRows(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	for _, sql := range []string{oneSourceSQL, batchSQL} {
		root, dir := chatTree(t), t.TempDir()
		noCache := catalog.DefaultOptions()
		noCache.NoCache = true
		want := mustCachedQuery(t, root, noCache, sql)
		cold := mustCachedQuery(t, root, cacheOptions(dir), sql)
		afterCold := testutil.CacheStats(t, dir)
		warm := mustCachedQuery(t, root, cacheOptions(dir), sql)
		afterWarm := testutil.CacheStats(t, dir)
		if cold != want || warm != want {
			t.Fatalf("%s:\nno cache %s\ncold     %s\nwarm     %s", sql, want, cold, warm)
		}
		if afterCold.Stored == 0 || afterWarm.Misses != afterCold.Misses || afterWarm.Hits <= afterCold.Hits || afterWarm.Stored != afterCold.Stored {
			t.Fatalf("%s: the warm run must only hit: after cold %+v, after warm %+v", sql, afterCold, afterWarm)
		}
	}
	// The warning of a file that is not a trajectory comes from the cache too.
	root, dir := chatTree(t), t.TempDir()
	for run := 0; run < 2; run++ {
		snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "dataset", URI: root}}, cacheOptions(dir))
		if err != nil {
			t.Fatal(err)
		}
		src, _ := snap.Datasets[0].Source("config.json")
		res, err := src.Resolve(context.Background(), "runs")
		snap.Close()
		if err != nil || len(res.Files) != 0 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "config.json") {
			t.Fatalf("run %d: config.json resolved to %+v, %v", run, res, err)
		}
	}
	if st := testutil.CacheStats(t, dir); st.Hits != 1 {
		t.Fatalf("the second resolution of config.json was not a hit: %+v", st)
	}
}

// TestChangedFileIsNeverServedFromTheCache rewrites a cached file in place
// with the same size — with a new mtime, and with its old mtime put back
// (only the ctime moves) — and checks the next process reads the new
// content, alone and in a batch, while the unchanged files still hit.
func TestChangedFileIsNeverServedFromTheCache(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	for _, restoreMtime := range []bool{false, true} {
		for _, sql := range []string{oneSourceSQL, batchSQL} {
			root, dir := chatTree(t), t.TempDir()
			path := filepath.Join(root, "a.jsonl")
			before := mustCachedQuery(t, root, cacheOptions(dir), sql)
			if !strings.Contains(before, "task one") {
				t.Fatalf("rows %s", before)
			}
			rewriteSameSize(t, path, chat("two"), restoreMtime)
			noCache := catalog.DefaultOptions()
			noCache.NoCache = true
			want := mustCachedQuery(t, root, noCache, sql)
			got := mustCachedQuery(t, root, cacheOptions(dir), sql)
			if got != want || strings.Contains(got, "task one") || !strings.Contains(got, "task two") {
				t.Fatalf("restore mtime %v, %s: after the rewrite the cached process read %s, want %s", restoreMtime, sql, got, want)
			}
		}
	}
}

// rewriteSameSize replaces a file's content in place with content of the
// same size; with restoreMtime its old mtime is put back, so only the ctime
// differs (it is rewritten until the coarse ctime clock has moved).
func rewriteSameSize(t *testing.T, path, content string, restoreMtime bool) {
	t.Helper()
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(content)) != before.Size() {
		t.Fatalf("%d bytes replace %d", len(content), before.Size())
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if restoreMtime {
			if err := os.Chtimes(path, before.ModTime(), before.ModTime()); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Chtimes(path, time.Now(), before.ModTime().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if changeTime(after) != changeTime(before) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("ctime never moved")
		}
	}
}

// TestFileChangedAfterPinningFailsAsWithoutTheCache: a file rewritten after
// the Snapshot pinned it is not served from the cache for its old pin; the
// query fails with the source-changed error, as it does without a cache.
// The pins are re-checked in discovery order, the first file of a
// directory by its path and the next ones relative to the directory: a
// change is seen in either place.
func TestFileChangedAfterPinningFailsAsWithoutTheCache(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	for _, changed := range []string{
		"a.jsonl",     // the first of its directory
		"b.jsonl",     // the second
		"sub/c.jsonl", // alone in its directory
	} {
		t.Run(changed, func(t *testing.T) {
			root, dir := chatTree(t), t.TempDir()
			sqls := []string{batchSQL}
			if changed == "a.jsonl" {
				sqls = append(sqls, oneSourceSQL)
			}
			for _, sql := range sqls {
				mustCachedQuery(t, root, cacheOptions(dir), sql) // both shapes cached
			}
			snaps := map[string]*catalog.Snapshot{}
			for _, sql := range sqls {
				snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "dataset", URI: root}}, cacheOptions(dir))
				if err != nil {
					t.Fatal(err)
				}
				defer snap.Close()
				snaps[sql] = snap
			}
			rewriteSameSize(t, filepath.Join(root, filepath.FromSlash(changed)), chat("two"), true)
			for sql, snap := range snaps {
				rows, err := queryRows(t, snap, sql)
				var changedErr *catalog.ErrSourceChanged
				if !errors.As(err, &changedErr) || changedErr.File != changed {
					t.Fatalf("%s: got %s, %v; want the source-changed error for %s", sql, rows, err, changed)
				}
			}
		})
	}
}

// TestRecentFileIsNotKept: a file whose timestamps are within the racy
// window could change again without its pin showing it, so it is
// normalized but not kept.
func TestRecentFileIsNotKept(t *testing.T) {
	root, dir := chatTree(t), t.TempDir()
	mustCachedQuery(t, root, cacheOptions(dir), batchSQL)
	mustCachedQuery(t, root, cacheOptions(dir), oneSourceSQL)
	if st := testutil.CacheStats(t, dir); st.Stored != 0 || st.Hits != 0 || st.Entries != 0 {
		t.Fatalf("files written just now were kept: %+v", st)
	}
}

// TestCorruptCacheEntryIsRebuilt damages the files of every entry; the next
// process detects it, normalizes again with the same rows, and replaces the
// entries, which the process after it uses.
func TestCorruptCacheEntryIsRebuilt(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	for _, damage := range []func(string) error{
		func(p string) error { return os.Truncate(p, 7) },
		func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x40
			return os.WriteFile(p, b, 0o644) // in place: the entry's files are hard links
		},
	} {
		root, dir := chatTree(t), t.TempDir()
		want := mustCachedQuery(t, root, cacheOptions(dir), batchSQL)
		first := testutil.CacheStats(t, dir)
		files, _ := filepath.Glob(filepath.Join(dir, "*", "entries", "*", "steps.parquet"))
		if len(files) == 0 {
			t.Fatal("no cache entry was written")
		}
		for _, f := range files {
			if err := damage(f); err != nil {
				t.Fatal(err)
			}
		}
		if got := mustCachedQuery(t, root, cacheOptions(dir), batchSQL); got != want {
			t.Fatalf("with a damaged entry: %s, want %s", got, want)
		}
		st := testutil.CacheStats(t, dir)
		// Each of the query's workers keeps an entry of its own: every
		// damaged one was rejected and removed, and what was normalized again
		// stored anew (the workers may split the sources otherwise this time;
		// an entry of the unrecognized file alone, with no rows and no
		// files, was not damaged and stays).
		rebuilt := st.Stored - first.Stored
		if st.Rejected != int64(len(files)) || rebuilt == 0 || st.Entries != first.Entries-len(files)+int(rebuilt) {
			t.Fatalf("the damaged entries (%d) were not rejected and rebuilt: first %+v, then %+v", len(files), first, st)
		}
		if got := mustCachedQuery(t, root, cacheOptions(dir), batchSQL); got != want {
			t.Fatalf("from the rebuilt entry: %s, want %s", got, want)
		}
		if again := testutil.CacheStats(t, dir); again.Hits <= st.Hits || again.Stored != st.Stored {
			t.Fatalf("the rebuilt entry was not used: %+v", again)
		}
	}
}

// TestUnusableCacheDirectoryIsNotAQueryError: a cache directory that cannot
// be created leaves the Snapshot without a cache, saying why.
func TestUnusableCacheDirectoryIsNotAQueryError(t *testing.T) {
	root := chatTree(t)
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "dataset", URI: root}}, cacheOptions(filepath.Join(blocker, "cache")))
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if snap.CacheError() == nil {
		t.Fatal("no cache error for a cache directory under a file")
	}
	if _, err := queryRows(t, snap, batchSQL); err != nil {
		t.Fatal(err)
	}
}

// TestCacheKeepsEachRelation: a query normalizes only the relations it
// reads, and the cache keeps each relation as an entry of its own, so a
// later query of another relation normalizes that one (a miss), one of
// the same relation only hits, and every answer equals a process's
// without the cache — alone and in a batch.
func TestCacheKeepsEachRelation(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	// Conversations with 1, 2 and 3 tool calls, so that counts tell the
	// relations' files apart.
	callTree := func(t *testing.T) string {
		root := t.TempDir()
		testutil.WriteFiles(t, root, map[string]string{"a.jsonl": chatWithCalls("one", 1), "b.jsonl": chatWithCalls("bee", 2),
			"sub/c.jsonl": chatWithCalls("sea", 3), "config.json": `{"model":"x"}`})
		return root
	}
	for _, where := range []string{"WHERE _file_ = 'a.jsonl'", ""} {
		root, dir := callTree(t), t.TempDir()
		noCache := catalog.DefaultOptions()
		noCache.NoCache = true
		toolCalls := "SELECT _file_, count(*) FROM tool_calls " + where + " GROUP BY ALL ORDER BY ALL"
		// It reads tool_calls too: a source then has one relation cached
		// and one to normalize.
		steps := "SELECT _file_, session_id, message_value, (SELECT count(*) FROM tool_calls " + where + ") AS calls FROM steps " + where + " ORDER BY ALL"
		wantCalls, wantSteps := mustCachedQuery(t, root, noCache, toolCalls), mustCachedQuery(t, root, noCache, steps)

		if got := mustCachedQuery(t, root, cacheOptions(dir), toolCalls); got != wantCalls {
			t.Fatalf("%s: cold %s, want %s", toolCalls, got, wantCalls)
		}
		first := testutil.CacheStats(t, dir)
		if got := mustCachedQuery(t, root, cacheOptions(dir), steps); got != wantSteps {
			t.Fatalf("%s: after tool_calls %s, want %s", steps, got, wantSteps)
		}
		second := testutil.CacheStats(t, dir)
		if second.Stored <= first.Stored || second.Misses <= first.Misses {
			t.Fatalf("%q: steps must be normalized and kept after a tool_calls query: %+v then %+v", where, first, second)
		}
		for _, sql := range []string{toolCalls, steps} {
			want := map[string]string{toolCalls: wantCalls, steps: wantSteps}[sql]
			if got := mustCachedQuery(t, root, cacheOptions(dir), sql); got != want {
				t.Fatalf("%s: warm %s, want %s", sql, got, want)
			}
		}
		if third := testutil.CacheStats(t, dir); third.Misses != second.Misses || third.Stored != second.Stored || third.Hits <= second.Hits {
			t.Fatalf("%q: both relations must now only hit: %+v then %+v", where, second, third)
		}
	}
}

// chatWithCalls is a conversation of a chat JSONL file whose assistant
// makes n tool calls, each answered.
func chatWithCalls(tag string, n int) string {
	msgs := []string{`{"role":"user","content":"task ` + tag + `"}`}
	for i := range n {
		id := fmt.Sprintf("call-%s-%d", tag, i)
		msgs = append(msgs,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
			`{"role":"tool","tool_call_id":"`+id+`","content":"file `+tag+`"}`)
	}
	msgs = append(msgs, `{"role":"assistant","content":"done"}`)
	return `{"session_id":"s-` + tag + `","messages":[` + strings.Join(msgs, ",") + `]}` + "\n"
}

// TestResolveCachedResolvesOnlyWhatTheCacheHolds: what a query does before
// its SQL is analyzed serves the cache's relations and normalizes nothing;
// relations the cache does not hold stay for the query to resolve.
func TestResolveCachedResolvesOnlyWhatTheCacheHolds(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	root, dir := chatTree(t), t.TempDir()
	requests := func(snap *catalog.Snapshot, rels ...string) []catalog.FileRequest {
		var reqs []catalog.FileRequest
		for _, s := range snap.Datasets[0].Sources {
			reqs = append(reqs, catalog.FileRequest{Source: s, Relations: rels})
		}
		return reqs
	}
	build := func() *catalog.Snapshot {
		snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "dataset", URI: root}}, cacheOptions(dir))
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}

	cold := build()
	cold.ResolveCached(requests(cold, model.RelSteps))
	if n := cold.Resolves(); n != 0 {
		t.Fatalf("an empty cache: %d sources normalized, want 0", n)
	}
	cold.Close()
	if st := testutil.CacheStats(t, dir); st.Hits != 0 || st.Stored != 0 {
		t.Fatalf("an empty cache: %+v, want no hit and nothing stored", st)
	}

	want := mustCachedQuery(t, root, cacheOptions(dir), batchSQL) // keeps steps
	warm := build()
	defer warm.Close()
	formats := func(snap *catalog.Snapshot) string { // known once a source is resolved
		var out []string
		for _, s := range snap.Datasets[0].Sources {
			out = append(out, s.File+"="+s.Format())
		}
		return strings.Join(out, " ")
	}
	before := formats(warm)
	warm.ResolveCached(requests(warm, model.RelSteps, model.RelToolCalls))
	if n := warm.Resolves(); n != 0 {
		t.Fatalf("%d sources normalized, want 0", n)
	}
	if after := formats(warm); after == before || strings.Count(after, "=openai") != 3 {
		t.Fatalf("ResolveCached served no cached relation: formats %s, before %s", after, before)
	}
	if got, err := queryRows(t, warm, batchSQL); err != nil || got != want {
		t.Fatalf("steps after ResolveCached: %s, %v; want %s", got, err, want)
	}
	if n := warm.Resolves(); n != 0 {
		t.Fatalf("steps were served from the cache, yet %d sources were normalized", n)
	}
	if _, err := queryRows(t, warm, "SELECT count(*) FROM tool_calls"); err != nil {
		t.Fatal(err)
	}
	if n := warm.Resolves(); n == 0 {
		t.Fatal("tool_calls, which the cache did not hold, were resolved without normalizing")
	}
}

// TestSkippedUnreadableFileIsNeverCached: under --skip-unreadable a damaged
// file is a warning, alone and in a batch, but the cache keeps no entry for
// it, so the next process without the flag fails on it again — naming
// --exclude — and the flag's warning is never served from the cache.
func TestSkippedUnreadableFileIsNeverCached(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	// The rows of the damaged file's lines before its bad one are never
	// read: alone it has none, and the batch holds only a.jsonl's.
	for sql, want := range map[string]string{`SELECT count(*) FROM runs WHERE _file_ = 'broken.jsonl'`: "[[0]]", `SELECT count(*) FROM runs`: "[[1]]"} {
		root, dir := t.TempDir(), t.TempDir()
		testutil.WriteFiles(t, root, map[string]string{"a.jsonl": chat("one"),
			"broken.jsonl": chat("two") + `{"messages": [{"role": "user", "content": "cut` + "\n" + chat("three")})
		skip := cacheOptions(dir)
		skip.SkipUnreadable = true
		for run := 0; run < 2; run++ {
			if got, err := cachedQuery(t, root, skip, sql); err != nil || got != want {
				t.Fatalf("%s with --skip-unreadable, run %d: %s, %v; want %s", sql, run, got, err, want)
			}
		}
		_, err := cachedQuery(t, root, cacheOptions(dir), sql)
		if err == nil || !strings.Contains(err.Error(), "--exclude 'broken.jsonl'") {
			t.Fatalf("%s without the flag after a cached run: %v", sql, err)
		}
	}
}
