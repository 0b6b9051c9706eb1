package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// Source is the spec's LazySource: a pinned source description plus resolve
// cells that run at most once per Snapshot (single-flight) and cache their
// result or error for the Snapshot's life. Resolution only ever uses the
// pinned version.
type Source struct {
	DiscoveredSource
	Projections []*Projection

	snap    *Snapshot
	dataset *Dataset

	storylines cell // runs, steps, tool_calls
	events     cell // events
	format     string
}

// Resolved is a source's data for some relations, as local Parquet files.
type Resolved struct {
	// Files maps a relation to the Parquet files holding its rows.
	Files map[string][]string
	// Dirs are the directories those files live in (for the sandbox's
	// allowed_directories).
	Dirs []string
	// Format is the detected format of a file source.
	Format string
}

type cell struct {
	mu   sync.Mutex
	done bool
	res  *Resolved
	err  error
}

// do runs fn once. A context cancellation is not cached: the next caller
// retries, so one cancelled query does not poison a long-lived Snapshot.
func (c *cell) do(ctx context.Context, fn func() (*Resolved, error)) (*Resolved, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.res, c.err
	}
	res, err := fn()
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	c.done, c.res, c.err = true, res, err
	return res, err
}

// Provides reports whether the source can hold rows of relation (spec §6.1
// step 1: events come only from canonical stores; Storyline relations from
// everything).
func (s *Source) Provides(relation string) bool {
	if s.Err != nil {
		return false
	}
	switch relation {
	case model.RelEvents:
		return s.Kind == KindEvents
	case model.RelRuns, model.RelSteps, model.RelToolCalls:
		return true
	}
	return false
}

// Format returns the detected format of a resolved file source ("" before).
func (s *Source) Format() string {
	s.storylines.mu.Lock()
	defer s.storylines.mu.Unlock()
	return s.format
}

// Resolve makes the source's rows of relation available as Parquet files.
func (s *Source) Resolve(ctx context.Context, relation string) (*Resolved, error) {
	if s.Err != nil {
		return nil, fmt.Errorf("source %s: %w", s.File, s.Err)
	}
	if relation == model.RelEvents {
		return s.events.do(ctx, func() (*Resolved, error) {
			s.snap.resolves.Add(1)
			rev := s.Revision.(EventsRevision).Revision
			return &Resolved{Files: map[string][]string{model.RelEvents: rev.Paths()}, Dirs: []string{rev.Dir}}, nil
		})
	}
	res, err := s.storylines.do(ctx, func() (*Resolved, error) {
		s.snap.resolves.Add(1)
		return s.resolveStorylines(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", s.File, err)
	}
	return res, nil
}

func (s *Source) resolveStorylines(ctx context.Context) (*Resolved, error) {
	switch rev := s.Revision.(type) {
	case StorylineRevision:
		return generationFiles(rev.Generation), nil
	case EventsRevision:
		for _, p := range s.Projections {
			if p.Selected {
				return generationFiles(p.Generation), nil
			}
		}
		return s.eventFallback(ctx, rev.Revision)
	case FileRevision:
		return s.normalizeFile(ctx, rev)
	}
	return nil, fmt.Errorf("cannot read a %s source", s.Kind)
}

func generationFiles(g *storyline.Generation) *Resolved {
	files := map[string][]string{}
	for _, rel := range storyline.Tables {
		files[rel] = []string{g.Path(rel)}
	}
	return &Resolved{Files: files, Dirs: []string{g.Dir}}
}

// scratchStore creates a Storyline store in the Snapshot's temp directory
// for this source's normalized rows.
func (s *Source) scratchStore() (*storyline.Store, error) {
	dir, err := os.MkdirTemp(s.snap.TempDir, "src-")
	if err != nil {
		return nil, err
	}
	return storyline.OpenOrCreate(filepath.Join(dir, "storyline"))
}

// normalizeFile verifies the pinned fingerprint, normalizes the file once
// into the Snapshot's temp directory, and verifies the fingerprint again: a
// file changed in between fails the query rather than mixing versions.
func (s *Source) normalizeFile(ctx context.Context, rev FileRevision) (*Resolved, error) {
	if err := rev.Verify(s.File, s.Path); err != nil {
		return nil, err
	}
	st, err := s.scratchStore()
	if err != nil {
		return nil, err
	}
	w, err := st.NewGeneration()
	if err != nil {
		return nil, err
	}
	opts := ingest.Options{MaxDetectionBytes: s.snap.Options.MaxDetectionBytes, MaxFileBytes: s.snap.Options.MaxFileBytes}
	det, err := ingest.NormalizeFile(ctx, s.Path, s.File, opts, w.Add)
	if err != nil {
		w.Abort()
		return nil, err
	}
	if err := rev.Verify(s.File, s.Path); err != nil {
		w.Abort()
		return nil, err
	}
	gen, err := w.Commit(ctx, nil)
	if err != nil {
		return nil, err
	}
	s.format = det.Format
	res := generationFiles(gen)
	res.Format = det.Format
	return res, nil
}

// eventFallback normalizes the pinned canonical events into Storylines when
// no fresh projection exists, bounded by max_event_fallback_rows/_bytes.
func (s *Source) eventFallback(ctx context.Context, rev *events.Revision) (*Resolved, error) {
	o := s.snap.Options
	var bytes int64
	for _, seg := range rev.Segments {
		bytes += seg.Bytes
	}
	if rev.Events > o.MaxEventFallbackRows || bytes > o.MaxEventFallbackBytes {
		return nil, fmt.Errorf("no fresh Storyline projection, and normalizing %d events (%d bytes) exceeds max_event_fallback_rows=%d / max_event_fallback_bytes=%d; run `pchronicle project %s`",
			rev.Events, bytes, o.MaxEventFallbackRows, o.MaxEventFallbackBytes, s.Path)
	}
	st, err := s.scratchStore()
	if err != nil {
		return nil, err
	}
	w, err := st.NewGeneration()
	if err != nil {
		return nil, err
	}
	err = rev.ScanSessions(ctx, nil, func(_ string, evs []model.Event) error {
		for _, sl := range canonical.Storylines(evs, s.File) {
			if err := w.Add(sl); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		w.Abort()
		return nil, err
	}
	gen, err := w.Commit(ctx, nil)
	if err != nil {
		return nil, err
	}
	res := generationFiles(gen)
	res.Format = format.Canonical
	return res, nil
}
