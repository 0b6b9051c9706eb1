package engine

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// A Snapshot built Reusing the previous one carries every unchanged
// source's normalized rows over (no second normalization) and normalizes
// only what changed; closing the previous Snapshot leaves it intact, and
// rows of the changed file's old version never show.
func TestRefreshReusesUnchangedSources(t *testing.T) {
	root := fixture(t, 8)
	mounts := []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}
	ctx := context.Background()
	old, err := catalog.Build(ctx, mounts, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	e := New(old, parser, testConfig(true))
	const q = "SELECT _file_, count(*), sum(tool_call_count) FROM runs GROUP BY 1 ORDER BY 1"
	mustQuery(t, e, q)
	if old.Resolves() != 8 {
		t.Fatalf("first Snapshot resolved %d sources, want 8", old.Resolves())
	}
	// One file changes: its two conversations become one with 5 calls.
	changed := filepath.Join(root, "b", "f003.jsonl")
	if err := os.WriteFile(changed, []byte(chatLine("new", 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	next, err := catalog.Build(ctx, mounts, catalog.DefaultOptions(), catalog.Reusing(old))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if next.Reused() != 7 {
		t.Fatalf("carried %d sources over, want the 7 unchanged", next.Reused())
	}
	e.Close()
	old.Close() // the new Snapshot must not depend on the old one's files
	e2 := New(next, parser, testConfig(true))
	defer e2.Close()
	got := fmt.Sprint(mustQuery(t, e2, q).Rows)
	if next.Resolves() != 1 {
		t.Fatalf("the refreshed Snapshot normalized %d sources, want only the changed one", next.Resolves())
	}
	_, full := open(t, root, catalog.DefaultOptions())
	if want := fmt.Sprint(mustQuery(t, full, q).Rows); got != want {
		t.Fatalf("after refresh:\n%s\nwant (a Snapshot built from scratch):\n%s", got, want)
	}
	// A query reading only unchanged sources of the shared batch, and one
	// reading only the changed file.
	for _, q := range []string{
		"SELECT count(*) FROM steps WHERE _file_ IN ('a/f000.jsonl', 'b/f001.jsonl')",
		"SELECT count(*), max(tool_call_count) FROM runs WHERE _file_ = 'b/f003.jsonl'",
	} {
		if a, b := fmt.Sprint(mustQuery(t, e2, q).Rows), fmt.Sprint(mustQuery(t, full, q).Rows); a != b {
			t.Errorf("%s: %s after refresh, %s from scratch", q, a, b)
		}
	}
}

// After a wide query normalized every file into one shared batch, a query
// that reads one of them gets it normalized alone, once, rather than
// scanning the whole batch for its rows. (One worker normalizes, so that
// the batch is one set of files: with more, each writes a set of its own,
// and how many sources each holds depends on their timing.)
func TestFewSourcesOfABatchAreReadAlone(t *testing.T) {
	opts := catalog.DefaultOptions()
	opts.MaxConcurrentSources = 1
	snap, e := open(t, fixture(t, 20), opts)
	mustQuery(t, e, "SELECT count(*) FROM steps")
	if n := snap.Resolves(); n != 20 {
		t.Fatalf("%d resolutions after the wide query, want 20", n)
	}
	const q = "SELECT count(*), max(message_value) FROM steps WHERE _file_ = 'a/f004.jsonl'"
	got := fmt.Sprint(mustQuery(t, e, q).Rows)
	if n := snap.Resolves(); n != 21 {
		t.Fatalf("%d resolutions after the point query, want 21 (the one file, alone)", n)
	}
	an, err := e.Analyze(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.planFor(context.Background(), an, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := p.views[relKey{catalog.DefaultAlias, "steps"}]; strings.Contains(v, "batch-") || strings.Contains(v, "WHERE") {
		t.Fatalf("the point query's view still scans the shared batch: %s", v)
	}
	_, fresh := open(t, fixture(t, 20), catalog.DefaultOptions())
	if want := fmt.Sprint(mustQuery(t, fresh, q).Rows); got != want {
		t.Fatalf("alone: %s, from a fresh Snapshot: %s", got, want)
	}
}

// workerOf returns the worker process behind an instance's connection.
func workerOf(t *testing.T, conn *sql.Conn) *worker {
	t.Helper()
	var w *worker
	if err := conn.Raw(func(c any) error { w = c.(*worker); return nil }); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestStartedWorkerServesTheFirstQuery: a worker started before its engine
// (as a one-shot command does) runs the engine's first query when its
// limits are the engine's, and is stopped when the engine closes when they
// are not.
func TestStartedWorkerServesTheFirstQuery(t *testing.T) {
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: fixture(t, 2)}}, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for _, sameLimits := range []bool{true, false} {
		cfg := testConfig(true)
		limits := cfg.Limits
		if !sameLimits {
			limits.MaxOutputRows++
		}
		cfg.Worker = StartWorker(limits)
		e := New(snap, parser, cfg)
		mustQuery(t, e, "SELECT count(*) FROM steps")
		<-cfg.Worker.ready
		started := workerOf(t, cfg.Worker.conn)
		e.mu.Lock()
		ran := workerOf(t, e.idle[0].conn) // the query's instance, handed back
		e.mu.Unlock()
		if (ran == started) != sameLimits {
			t.Fatalf("same limits %v: the query ran in the started worker: %v", sameLimits, ran == started)
		}
		e.Close()
		select {
		case <-started.exited:
		case <-time.After(10 * time.Second):
			t.Fatalf("same limits %v: the started worker still runs after the engine closed", sameLimits)
		}
	}
}

// TestClosingAStartingWorkerDoesNotWaitForIt: a command that fails before
// its query (a bad path, say) closes its started worker at once, killing
// it rather than waiting for it to open DuckDB only to close it.
func TestClosingAStartingWorkerDoesNotWaitForIt(t *testing.T) {
	w := StartWorker(testConfig(true).Limits)
	w.Close() // a process start and a DuckDB open take milliseconds: it is still starting
	if w.err == nil {
		t.Fatal("the worker was opened before it was closed; Close waited for it")
	}
}
