package testutil

import (
	"sync"
	"testing"
)

// Group runs subtests all at once and Wait returns when they are done.
// t.Run may be called from several goroutines, and such subtests are not
// held to -parallel (the number of CPUs), so tests that mostly wait — out
// timeouts, backoffs, server start-ups — overlap their waits.
type Group struct {
	t  *testing.T
	wg sync.WaitGroup
}

// Together starts a Group of t's subtests; call Wait before t returns.
func Together(t *testing.T) *Group { return &Group{t: t} }

// Run starts subtest name.
func (g *Group) Run(name string, fn func(*testing.T)) { g.wg.Go(func() { g.t.Run(name, fn) }) }

// Wait returns when every subtest started by Run has finished.
func (g *Group) Wait() { g.wg.Wait() }
