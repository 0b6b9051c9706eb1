package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrBusy is returned when a Gate's queue is full: the caller should retry
// after about RetryAfter.
var ErrBusy = errors.New("too many queries are running; retry shortly")

// Gate bounds how many DuckDB instances run queries at once, so N concurrent
// queries never mean N × memory_limit: beyond Concurrent, queries wait in a
// queue of at most Queue, and beyond that they fail at once with ErrBusy.
type Gate struct {
	slots   chan struct{}
	waiting atomic.Int64
	queue   int64
	// RetryAfter is the wait a rejected caller is told to observe.
	RetryAfter time.Duration
}

// NewGate returns a gate for concurrent running queries and queue waiting
// ones (both at least 1 and 0).
func NewGate(concurrent, queue int) *Gate {
	return &Gate{slots: make(chan struct{}, max(concurrent, 1)), queue: int64(max(queue, 0)), RetryAfter: time.Second}
}

// acquire takes a slot, waiting in the queue if there is room; the
// returned release gives it back. A nil Gate admits everything.
func (g *Gate) acquire(ctx context.Context) (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	select {
	case g.slots <- struct{}{}:
		return g.release, nil
	default:
	}
	if g.waiting.Add(1) > g.queue {
		g.waiting.Add(-1)
		return nil, ErrBusy
	}
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return g.release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *Gate) release() { <-g.slots }

// InUse and Waiting report the gate's load (for status pages).
func (g *Gate) InUse() int     { return len(g.slots) }
func (g *Gate) Waiting() int64 { return g.waiting.Load() }
