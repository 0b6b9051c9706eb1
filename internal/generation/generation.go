// Package generation keeps a Dataset open for a long-lived server: one
// immutable Generation (a Snapshot, its query engine and Storyline reader,
// and per-generation caches) serves every request, and a refresh builds the
// next one completely, validates it and publishes it with an atomic swap —
// the build → validate → publish → close lifecycle. Requests hold a
// reference to the generation they started on and finish there; a
// retired generation is closed (its temp directory removed) when the last
// of them ends.
package generation

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/route"
)

// Generation is one published, immutable view: everything a request needs
// to answer from one Snapshot.
type Generation struct {
	snap   *catalog.Snapshot
	engine *engine.Engine
	reader *engine.Reader
	index  *route.Index
	number int64 // counts the generations of a Runtime from 1
	built  time.Time

	// refs counts the references: one held by the Runtime while the
	// generation is current, plus one per request using it. It reaches 0
	// only after the generation was retired, and then the generation closes.
	refs atomic.Int64

	memoGroup singleflight.Group
	memoMu    sync.Mutex
	memo      map[string]any
}

// ID is the Snapshot id: what responses report and ETags and page tokens
// are bound to.
func (g *Generation) ID() string { return g.snap.ID }

// Snapshot returns the generation's Snapshot.
func (g *Generation) Snapshot() *catalog.Snapshot { return g.snap }

// Number counts the generations of a Runtime from 1.
func (g *Generation) Number() int64 { return g.number }

// Built is when the generation was published.
func (g *Generation) Built() time.Time { return g.built }

// Limits are the default query limits.
func (g *Generation) Limits() engine.Limits { return g.engine.Limits() }

// Analyze validates a statement as a query over the generation would.
func (g *Generation) Analyze(ctx context.Context, sql string) (*query.Analysis, error) {
	return g.engine.Analyze(ctx, sql)
}

// Stream runs one read-only statement (engine.Engine.Stream).
func (g *Generation) Stream(ctx context.Context, sql string, opts engine.QueryOptions) (*engine.Rows, error) {
	return g.engine.Stream(ctx, sql, opts)
}

// StreamArrow runs one read-only statement whose result comes as Arrow
// record batches (engine.Engine.StreamArrow).
func (g *Generation) StreamArrow(ctx context.Context, sql string, opts engine.QueryOptions) (*engine.ArrowRows, error) {
	return g.engine.StreamArrow(ctx, sql, opts)
}

// Route decides the source routing of an analyzed statement with the
// generation's index, building the layers it needs on first use.
func (g *Generation) Route(ctx context.Context, an *query.Analysis) route.Decision {
	return g.index.Route(ctx, an)
}

// Acceleration reports the routing index layers built so far and the
// build failures cached for the generation.
func (g *Generation) Acceleration() (built, failed []route.LayerState) { return g.index.State() }

// build makes a complete generation over a Snapshot that is already built:
// the engine and the reader. Nothing is resolved.
func build(snap *catalog.Snapshot, parser *query.Parser, cfg engine.Config, number int64) *Generation {
	g := &Generation{
		snap:   snap,
		engine: engine.New(snap, parser, cfg),
		reader: engine.NewReader(snap, cfg.Limits),
		number: number,
		built:  time.Now().UTC(),
		memo:   map[string]any{},
	}
	g.index = route.New(snap, g.engine, route.Limits{})
	g.refs.Store(1)
	return g
}

// tryAcquire takes a reference unless the generation already closed.
func (g *Generation) tryAcquire() bool {
	for {
		n := g.refs.Load()
		if n <= 0 {
			return false
		}
		if g.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference, closing the generation after the last one.
func (g *Generation) release() {
	if g.refs.Add(-1) == 0 {
		g.close()
	}
}

func (g *Generation) close() {
	g.engine.Close()
	g.reader.Close()
	g.snap.Close()
}

// Memo returns the value fn computes for key, computing it once per
// generation (concurrent callers share one computation). A failure is not
// kept: the next caller tries again. Use it for derived data that a refresh
// must forget, such as a run list's total.
func (g *Generation) Memo(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	g.memoMu.Lock()
	v, ok := g.memo[key]
	g.memoMu.Unlock()
	if ok {
		return v, nil
	}
	ch := g.memoGroup.DoChan(key, func() (any, error) {
		// Detached from the first caller: a cancelled request must not
		// fail the others sharing the computation.
		v, err := fn(context.WithoutCancel(ctx))
		if err == nil {
			g.memoMu.Lock()
			if len(g.memo) >= maxMemo {
				clear(g.memo)
			}
			g.memo[key] = v
			g.memoMu.Unlock()
		}
		return v, err
	})
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// maxMemo bounds the memo of one generation (it is emptied when full).
const maxMemo = 1024

func (g *Generation) String() string {
	return fmt.Sprintf("generation %d (snapshot %s)", g.number, g.ID())
}
