// Package serving wires a generation runtime to the HTTP server: the one
// place that knows both, so that the server depends only on its own small
// interfaces and the runtime knows nothing of HTTP.
package serving

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/pchronicle/pchronicle/internal/generation"
	"github.com/pchronicle/pchronicle/internal/server"
)

// Runtime adapts a generation.Runtime to the server's interfaces,
// answering "not ready" until the first generation is published.
type Runtime struct {
	rt atomic.Pointer[generation.Runtime]
}

// Publish makes rt the runtime served; until then every data request is
// answered "not ready".
func (s *Runtime) Publish(rt *generation.Runtime) { s.rt.Store(rt) }

func (s *Runtime) Acquire() (server.Generation, func(), error) {
	rt := s.rt.Load()
	if rt == nil {
		return nil, nil, server.ErrNotReady
	}
	g, release, err := rt.Acquire()
	if errors.Is(err, generation.ErrClosed) {
		return nil, nil, server.ErrNotReady
	}
	if err != nil {
		return nil, nil, err
	}
	return Generation{g}, release, nil
}

func (s *Runtime) Refresh(ctx context.Context) (any, error) {
	rt := s.rt.Load()
	if rt == nil {
		return nil, server.ErrNotReady
	}
	return rt.Refresh(ctx, generation.TriggerAPI, true)
}

func (s *Runtime) Status() any {
	if rt := s.rt.Load(); rt != nil {
		return rt.Status()
	}
	return nil
}

// Generation gives a generation the server's StorylineReader.
type Generation struct{ *generation.Generation }

func (g Generation) StorylineReader() server.StorylineReader { return g.Storylines() }
