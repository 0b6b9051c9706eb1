package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// Revision is a source's typed, pinned version. Ref is its string
// projection for sources.snapshot_ref; consistency checks use the typed
// value. Each kind of revision knows how to read its pinned data, so
// resolution never dispatches on the type.
type Revision interface {
	RevisionKind() string
	Ref() string
	// storylines makes s's runs, steps and tool_calls available as local
	// Parquet files, reading only the pinned version: at least the
	// relations rels (a file source writes only those).
	storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error)
}

// eventsRevision is a revision of a canonical events source.
type eventsRevision interface {
	Revision
	// events returns the pinned events with the segments that may hold
	// sessions (all when nil) on local disk.
	events(ctx context.Context, s *Source, sessions map[string]bool) (*events.Revision, error)
}

// localStore is a revision whose data a query reads in place: its
// directory is one the query sandbox allows (Snapshot.ReadableDirs).
type localStore interface{ storeDir() string }

// pinnedEvents returns the pinned revision of an events source with the
// segments that may hold sessions (all when nil) on local disk.
func (s *Source) pinnedEvents(ctx context.Context, sessions map[string]bool) (*events.Revision, error) {
	if rev, ok := s.Revision.(eventsRevision); ok {
		return rev.events(ctx, s, sessions)
	}
	return nil, fmt.Errorf("source %s is a %s source, not canonical events", s.File, s.Kind)
}

// StorylineRevision pins a Storyline store to one generation and its table
// files.
type StorylineRevision struct{ Generation *storyline.Generation }

func (r StorylineRevision) RevisionKind() string { return "storyline_generation" }

func (r StorylineRevision) Ref() string {
	g := r.Generation
	parts := []string{fmt.Sprintf("generation=%d", g.Number)}
	for _, rel := range storyline.Tables {
		t := g.Manifest.Tables[rel]
		parts = append(parts, fmt.Sprintf("%s=%s:%d", rel, t.File, t.Bytes))
	}
	return strings.Join(parts, ";")
}

func (r StorylineRevision) storylines(ctx context.Context, _ *Source, _ []string) (*Resolved, error) {
	return importedGeneration(ctx, r.Generation)
}

func (r StorylineRevision) storeDir() string { return r.Generation.Dir }

// EventsRevision pins a canonical events store to one manifest revision and
// its visible segments.
type EventsRevision struct{ Revision *events.Revision }

func (r EventsRevision) RevisionKind() string { return "events_manifest" }

func (r EventsRevision) Ref() string {
	m := r.Revision.Manifest
	return fmt.Sprintf("revision=%d;fact_watermark=%d;layout_watermark=%d;segments=%d",
		m.Revision, m.FactWatermark, m.LayoutWatermark, len(m.Segments))
}

// storylines reads the selected fresh projection, else normalizes the
// pinned events.
func (r EventsRevision) storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error) {
	if p := s.selected(); p != nil {
		return generationFiles(p.Generation), nil
	}
	return s.eventFallback(ctx, r.Revision, nil)
}

func (r EventsRevision) events(context.Context, *Source, map[string]bool) (*events.Revision, error) {
	return r.Revision, nil
}

func (r EventsRevision) storeDir() string { return r.Revision.Dir }

func (r FileRevision) storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error) {
	return s.normalizeFile(ctx, r, rels)
}

func (r *CompactRevision) storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error) {
	evs, err := s.compactEvents(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.eventFallback(ctx, evs, nil)
}

func (r *CompactRevision) events(ctx context.Context, s *Source, _ map[string]bool) (*events.Revision, error) {
	return s.compactEvents(ctx, r)
}

// Remote sources download only the pinned objects they need (remote.go).

func (r RemoteFileRevision) storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error) {
	return s.normalizeRemoteFile(ctx, r, rels)
}

func (r RemoteStorylineRevision) storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error) {
	return r.materialize(ctx, s.snap)
}

func (r RemoteEventsRevision) storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error) {
	local, err := r.localRevision(ctx, s.snap, nil)
	if err != nil {
		return nil, err
	}
	return s.eventFallback(ctx, local, nil)
}

func (r RemoteEventsRevision) events(ctx context.Context, s *Source, sessions map[string]bool) (*events.Revision, error) {
	return r.localRevision(ctx, s.snap, sessions)
}
