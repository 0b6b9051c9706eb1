package generation

import (
	"context"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/projection"
)

// The projection supervisor keeps the Storyline projection of every local
// canonical events store of a positional Dataset up to date. An append to
// a known store only advances its revision: nothing is rebuilt while
// events keep arriving. Once a store has been idle for a tick, its
// projection is brought up to date off the request path, and publishing
// it marks the runtime dirty, so the next generation selects the fresh
// projection. Until then a single-trace read of that store reopens its
// latest manifest (Generation.LatestEvents), so an in-flight trace stays
// visible.

// ProjectionState is the supervisor's view of one events store.
type ProjectionState struct {
	Dataset string `json:"dataset"`
	File    string `json:"_file_"`
	// Revision is the store's latest manifest revision the supervisor saw;
	// Projected the revision its projection was last built from (-1: none).
	Revision  int64     `json:"revision"`
	Projected int64     `json:"projected_revision"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
}

// seenRevision is a store's latest revision and when the supervisor first
// saw it: the store is idle once that is IdleFor ago.
type seenRevision struct {
	revision int64
	since    time.Time
}

type supervisor struct {
	r     *Runtime
	ticks int

	mu    sync.Mutex
	state map[string]*ProjectionState // by store path
	seen  map[string]seenRevision     // by store path
}

func newSupervisor(r *Runtime) *supervisor {
	return &supervisor{r: r, state: map[string]*ProjectionState{}, seen: map[string]seenRevision{}}
}

// stores lists the local canonical events stores of a Snapshot (remote
// stores are read-only to the server).
func (s *supervisor) stores(snap *catalog.Snapshot) []*catalog.Source {
	var out []*catalog.Source
	for _, d := range snap.Datasets {
		for _, src := range d.Sources {
			if _, ok := src.Revision.(catalog.EventsRevision); ok && src.Err == nil {
				out = append(out, src)
			}
		}
	}
	return out
}

// converge brings every projection up to date before the first Snapshot,
// so that it starts with them selected.
func (s *supervisor) converge(ctx context.Context) error {
	snap, err := catalog.Build(ctx, s.r.cfg.Mounts, s.r.cfg.Options)
	if err != nil {
		return err
	}
	defer snap.Close()
	for _, src := range s.stores(snap) {
		s.project(ctx, src.Dataset().Mount.NamespacePath(), src)
	}
	return nil
}

func (s *supervisor) run() {
	defer s.r.bg.Done()
	t := time.NewTicker(s.r.cfg.SuperviseEvery)
	defer t.Stop()
	for {
		select {
		case <-s.r.stop:
			return
		case <-t.C:
			s.tick(context.Background())
		}
	}
}

// discoverEvery is how many ticks pass between looks for new canonical
// stores (a discovery without resolution, like a refresh's first half).
const discoverEvery = 5

// tick projects every store that is stale and was idle since the last tick,
// and now and then looks for canonical stores that appeared.
func (s *supervisor) tick(ctx context.Context) {
	g, release, err := s.r.Acquire()
	if err != nil {
		return
	}
	defer release()
	s.ticks++
	if s.ticks%discoverEvery == 0 && s.newStores(ctx, g) {
		s.r.MarkDirty(TriggerProjection)
		return
	}
	published := false
	for _, src := range s.stores(g.snap) {
		st, err := events.Open(src.Path)
		if err != nil {
			continue // gone: the next refresh drops it
		}
		rev, err := st.Pin()
		if err != nil {
			continue
		}
		now := time.Now()
		s.mu.Lock()
		seen, known := s.seen[src.Path]
		if !known || seen.revision != rev.Revision {
			seen = seenRevision{revision: rev.Revision, since: now}
			s.seen[src.Path] = seen
		}
		s.mu.Unlock()
		if fresh(src, rev) || now.Sub(seen.since) < s.r.cfg.IdleFor {
			continue // up to date, or events arrived within the idle window
		}
		if s.project(ctx, src.Dataset().Mount.NamespacePath(), src) {
			published = true
		}
	}
	if published {
		s.r.MarkDirty(TriggerProjection)
	}
}

// newStores reports whether a canonical events store exists now that the
// generation does not hold.
func (s *supervisor) newStores(ctx context.Context, g *Generation) bool {
	snap, err := catalog.Build(ctx, s.r.cfg.Mounts, s.r.cfg.Options)
	if err != nil {
		return false // the refresh that eventually runs reports it
	}
	defer snap.Close()
	known := map[string]bool{}
	for _, src := range s.stores(g.snap) {
		known[src.Path] = true
	}
	for _, src := range s.stores(snap) {
		if !known[src.Path] {
			return true
		}
	}
	return false
}

// fresh reports whether the source's selected projection reflects rev.
func fresh(src *catalog.Source, rev *events.Revision) bool {
	uri, err := projection.URI(src.Path)
	if err != nil {
		return false
	}
	for _, p := range src.Projections {
		if p.Selected && projection.Fresh(p.Generation, uri, rev) {
			return true
		}
	}
	return false
}

// project brings one store's projection up to date and reports whether it
// published a new projection generation.
func (s *supervisor) project(ctx context.Context, dataset string, src *catalog.Source) bool {
	res, err := projection.Update(ctx, src.Path)
	st := &ProjectionState{Dataset: dataset, File: src.File, Projected: -1, CheckedAt: time.Now().UTC()}
	if err != nil {
		st.Error = catalog.RedactURI(err.Error())
		s.r.log.Warn("projection update failed", "dataset", dataset, "_file_", src.File, "error", st.Error)
	} else {
		st.Revision = res.Revision.Revision
		if l := res.Generation.Manifest.Lineage; l != nil {
			st.Projected = l.EventsRevision
		}
	}
	s.mu.Lock()
	s.state[src.Path] = st
	s.mu.Unlock()
	published := err == nil && res.Mode != projection.ModeFresh
	if published {
		s.r.log.Info("projection published", "dataset", dataset, "_file_", src.File, "revision", st.Projected, "mode", res.Mode)
	}
	return published
}

func (s *supervisor) states() []ProjectionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProjectionState, 0, len(s.state))
	for _, st := range s.state {
		out = append(out, *st)
	}
	return out
}
