package generation

import (
	"context"
	"errors"
	"fmt"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/events"
)

// Storylines reads Storylines of the generation: from the pinned Snapshot,
// except a trace of a local canonical events store that gained events since
// the Snapshot pinned it. That single-trace read reopens the store's latest
// manifest, so an in-flight trace stays visible (and growing) while its
// projection waits for an idle window; lists and SQL stay pinned.
type Storylines struct{ g *Generation }

// Storylines returns the generation's Storyline reader.
func (g *Generation) Storylines() Storylines { return Storylines{g} }

// latest returns the Storyline of key from its events store's latest
// manifest, when that is newer than the pinned revision and holds the
// session (ok false otherwise: read the pinned Snapshot).
func (s Storylines) latest(ctx context.Context, key engine.StorylineKey) (*model.Storyline, bool, error) {
	src, err := s.g.snap.LookupSource(key.Dataset, key.File)
	if err != nil {
		return nil, false, nil
	}
	pinned, ok := src.Revision.(catalog.EventsRevision)
	if !ok || src.Err != nil {
		return nil, false, nil
	}
	st, err := events.Open(src.Path)
	if err != nil {
		return nil, false, nil // gone or broken since: the pinned revision still reads
	}
	rev, err := st.Pin()
	if err != nil || rev.Revision == pinned.Revision.Revision {
		return nil, false, nil
	}
	v, err := s.g.Memo(ctx, fmt.Sprintf("latest\x00%s\x00%s\x00%s\x00%d", key.Dataset, key.File, key.SessionID, rev.Revision), func(ctx context.Context) (any, error) {
		return s.readLatest(ctx, src, rev, key)
	})
	if err != nil {
		return nil, false, err
	}
	sl, _ := v.(*model.Storyline)
	return sl, sl != nil, nil
}

func (s Storylines) readLatest(ctx context.Context, src *catalog.Source, rev *events.Revision, key engine.StorylineKey) (*model.Storyline, error) {
	o := s.g.snap.Options
	var rows int64
	for i := range rev.Segments {
		if rev.Segments[i].MayHoldSession(key.SessionID) {
			rows += rev.Segments[i].Rows
		}
	}
	if rows > o.MaxEventFallbackRows {
		return nil, nil // too big to normalize per request: the pinned view answers
	}
	var found *model.Storyline
	err := rev.ScanSessions(ctx, map[string]bool{key.SessionID: true}, func(_ string, evs []model.Event) error {
		for _, sl := range canonical.Storylines(evs, src.File) {
			if sl.Run.SessionID == key.SessionID {
				found = sl
			}
		}
		return nil
	})
	return found, err
}

// Run returns the run row of one Storyline.
func (s Storylines) Run(ctx context.Context, key engine.StorylineKey) (*model.Run, error) {
	if sl, ok, err := s.latest(ctx, key); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return &sl.Run, nil
	}
	return s.g.reader.Run(ctx, key)
}

// StepHeaders returns a page of step headers.
func (s Storylines) StepHeaders(ctx context.Context, key engine.StorylineKey, from, limit int64) ([]engine.StepHeader, error) {
	if sl, ok, err := s.latest(ctx, key); ok || err != nil {
		return engine.HeadersOf(sl, from, limit), err
	}
	return s.g.reader.StepHeaders(ctx, key, from, limit)
}

// StepBodies returns a page of steps with their bodies cut to maxChars.
func (s Storylines) StepBodies(ctx context.Context, key engine.StorylineKey, from, limit int64, maxChars int) ([]engine.StepBody, error) {
	if sl, ok, err := s.latest(ctx, key); ok || err != nil {
		return engine.BodiesOf(sl, from, limit, maxChars), err
	}
	return s.g.reader.StepBodies(ctx, key, from, limit, maxChars)
}

// FindSteps returns the indexes of the steps matching text.
func (s Storylines) FindSteps(ctx context.Context, key engine.StorylineKey, text string, from, limit int64) ([]int64, error) {
	if sl, ok, err := s.latest(ctx, key); ok || err != nil {
		return engine.FindIn(sl, text, from, limit), err
	}
	return s.g.reader.FindSteps(ctx, key, text, from, limit)
}

// Load reads one whole Storyline (for downloads).
func (s Storylines) Load(ctx context.Context, key engine.StorylineKey) (*model.Storyline, error) {
	if sl, ok, err := s.latest(ctx, key); ok || err != nil {
		return sl, err
	}
	return s.g.reader.LoadStoryline(ctx, key)
}

// Events returns the canonical events of one session of a canonical
// events source, from the latest manifest of a local store (in-flight
// traces stay visible) or the pinned revision otherwise.
func (s Storylines) Events(ctx context.Context, key engine.StorylineKey) ([]model.Event, error) {
	src, err := s.g.snap.LookupSource(key.Dataset, key.File)
	if err != nil {
		return nil, err
	}
	if _, ok := src.Revision.(catalog.EventsRevision); ok && src.Err == nil {
		if st, err := events.Open(src.Path); err == nil {
			if rev, err := st.Pin(); err == nil {
				var out []model.Event
				err := rev.ScanSessions(ctx, map[string]bool{key.SessionID: true}, func(_ string, evs []model.Event) error {
					out = append(out, evs...)
					return nil
				})
				if err != nil {
					return nil, err
				}
				if len(out) == 0 {
					return nil, fmt.Errorf("session %q in events source %s: %w", key.SessionID, key.File, catalog.ErrNotFound)
				}
				for i := range out {
					out[i].File = src.File
				}
				return out, nil
			}
		}
	}
	evs, err := s.g.snap.LoadEvents(ctx, key.Dataset, key.File, key.SessionID)
	if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return nil, err
	}
	return evs, err
}
