package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// fixture(t, 4) holds 8 runs: two conversations per file.
func TestPerQueryRowCapTruncatesOrFails(t *testing.T) {
	_, e := open(t, fixture(t, 4), catalog.DefaultOptions())
	ctx := context.Background()
	res, err := e.Query(ctx, "SELECT session_id FROM runs ORDER BY 1", QueryOptions{MaxRows: 3, Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || !res.Truncated {
		t.Fatalf("truncating cap 3: %d rows, truncated=%v; want 3 rows, truncated", len(res.Rows), res.Truncated)
	}
	res, err = e.Query(ctx, "SELECT session_id FROM runs", QueryOptions{MaxRows: 8, Truncate: true})
	if err != nil || len(res.Rows) != 8 || res.Truncated {
		t.Fatalf("cap equal to the result: %v rows, truncated=%v, %v; want all 8, not truncated", len(res.Rows), res.Truncated, err)
	}
	if _, err := e.Query(ctx, "SELECT session_id FROM runs", QueryOptions{MaxRows: 7}); !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("cap 7 without truncation: %v, want ErrTooManyRows", err)
	}
	res, err = e.Query(ctx, "SELECT session_id FROM runs", QueryOptions{MaxRows: -1})
	if err != nil || len(res.Rows) != 8 {
		t.Fatalf("no cap: %d rows, %v", len(res.Rows), err)
	}
}

func TestPerQueryTimeoutStopsTheQuery(t *testing.T) {
	_, e := open(t, fixture(t, 1), catalog.DefaultOptions())
	start := time.Now()
	_, err := e.Query(context.Background(), "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10000000000) SELECT count(*) FROM t", QueryOptions{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the query stopped after %v, not near its 200ms timeout", d)
	}
}

// A restriction reads exactly the listed sources, as `_file_ IN (...)` would.
func TestRestrictionReadsOnlyListedSources(t *testing.T) {
	snap, e := open(t, fixture(t, 6), catalog.DefaultOptions())
	restrict := Restriction{{catalog.DefaultAlias, "runs"}: {"a/f000.jsonl", "b/f003.jsonl", "no/such.jsonl"}}
	res, err := e.Query(context.Background(), "SELECT DISTINCT _file_ FROM runs ORDER BY 1", QueryOptions{Restrict: restrict})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[a/f000.jsonl] [b/f003.jsonl]]" {
		t.Fatalf("restricted rows %s", got)
	}
	if r := res.Pruning[0]; r.Considered != 6 || len(r.Resolved) != 2 || r.Skipped != 4 {
		t.Fatalf("report %+v: want 6 considered, 2 resolved, 4 skipped", r)
	}
	if snap.Resolves() != 2 {
		t.Fatalf("%d sources resolved, want only the 2 listed", snap.Resolves())
	}
}

// The gate admits Concurrent queries, queues Queue more, and refuses the
// rest at once with ErrBusy.
func TestGateBoundsConcurrentInstances(t *testing.T) {
	g := NewGate(1, 1)
	ctx := context.Background()
	release, err := g.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() {
		r, err := g.acquire(ctx)
		if err == nil {
			r()
		}
		queued <- err
	}()
	for g.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := g.acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("third caller: %v, want ErrBusy", err)
	}
	release()
	if err := <-queued; err != nil {
		t.Fatalf("queued caller: %v", err)
	}
	if g.InUse() != 0 {
		t.Fatalf("%d slots still in use", g.InUse())
	}
}

// Through an engine: with one slot and no queue, concurrent queries either
// run or fail with ErrBusy, and never two at once.
func TestGateSharedByEngineQueries(t *testing.T) {
	snap, _ := open(t, fixture(t, 2), catalog.DefaultOptions())
	gate := NewGate(1, 0)
	e := New(snap, parser, Config{Positional: true, Limits: LimitsFrom(snap.Options), Gate: gate})
	defer e.Close()
	rows, err := e.Stream(context.Background(), "SELECT * FROM runs", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(context.Background(), "SELECT 1", QueryOptions{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second query while the first holds the only slot: %v, want ErrBusy", err)
	}
	rows.Close()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{}); err != nil && !errors.Is(err, ErrBusy) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if gate.InUse() != 0 {
		t.Fatalf("%d slots held after every query ended", gate.InUse())
	}
}
