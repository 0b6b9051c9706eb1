// Package projection builds the Storyline projection of a canonical events
// store: the sibling Storyline store X/events.storyline of X/events.lance,
// whose generations hold the deterministic normalization of one events
// revision and name it in their lineage. A projection is a read
// accelerator for its events store, never a separate source of rows.
package projection

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// DirName is the projection directory's name, beside events.lance.
const DirName = "events.storyline"

// SiblingDir returns the projection directory of the events store dir.
func SiblingDir(eventsDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(eventsDir)), DirName)
}

// URI is how a projection's lineage names its events store: the file URI
// of its absolute directory.
func URI(eventsDir string) (string, error) {
	abs, err := filepath.Abs(eventsDir)
	if err != nil {
		return "", err
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// Fresh reports whether generation g is a projection of events revision r:
// built from this store at a revision with the same facts.
func Fresh(g *storyline.Generation, uri string, r *events.Revision) bool {
	l := g.Manifest.Lineage
	return l != nil && l.EventsURI == uri && r.FactWatermark <= l.EventsRevision && l.EventsRevision <= r.Revision
}

// Mode is how Update brought a projection up to date.
type Mode string

// Update modes.
const (
	ModeFresh       Mode = "fresh"       // already reflected the current events; nothing written
	ModeIncremental Mode = "incremental" // changed sessions normalized, the rest copied
	ModeFull        Mode = "full"        // every session normalized
)

// Result says what Build did.
type Result struct {
	Generation *storyline.Generation
	Revision   *events.Revision
	Mode       Mode
	// Sessions is the number of sessions normalized (0 when fresh).
	Sessions int64
	// Events is the number of events read to normalize them.
	Events int64
}

// Build brings the projection of the events store at eventsDir up to date
// with its current revision and returns the projection's generation.
//
// A projection whose lineage names this store at a revision with the
// current facts is returned as is. One built from an older revision of the
// same store is updated incrementally: only sessions that gained events
// since its lineage revision are normalized again, and every other session's
// rows are copied from it. Otherwise the projection is rebuilt in full.
// Both paths give identical rows for the same events revision.
func Build(ctx context.Context, eventsDir string) (*storyline.Generation, error) {
	res, err := Update(ctx, eventsDir)
	if err != nil {
		return nil, err
	}
	return res.Generation, nil
}

// Update is Build, reporting what it did.
func Update(ctx context.Context, eventsDir string) (*Result, error) {
	return update(ctx, eventsDir, true)
}

// Rebuild normalizes every session again, ignoring the existing projection.
func Rebuild(ctx context.Context, eventsDir string) (*Result, error) {
	return update(ctx, eventsDir, false)
}

// update holds the projection store's writer lock from before it pins the
// events store until it publishes: concurrent builds of one projection run
// one after the other, so each starts from the previous one's generation
// (often finding it fresh) and a build never replaces a projection of a
// newer events revision with one of an older revision.
func update(ctx context.Context, eventsDir string, incremental bool) (*Result, error) {
	es, err := events.Open(eventsDir)
	if err != nil {
		return nil, err
	}
	uri, err := URI(es.Dir())
	if err != nil {
		return nil, err
	}
	ss, err := storyline.OpenOrCreate(SiblingDir(es.Dir()))
	if err != nil {
		return nil, err
	}
	w, prev, err := ss.NewGenerationOnCurrent(ctx)
	if err != nil {
		return nil, err
	}
	if prev == nil { // removed since OpenOrCreate
		w.Abort()
		return nil, fmt.Errorf("projection %s: %w", ss.Dir(), storyline.ErrNotStore)
	}
	rev, err := es.Pin()
	if err != nil {
		w.Abort()
		return nil, err
	}
	res := &Result{Revision: rev, Generation: prev, Mode: ModeFresh}
	if incremental && Fresh(prev, uri, rev) {
		w.Abort()
		return res, nil
	}
	if err := res.fill(ctx, w, prev, uri, incremental); err != nil {
		w.Abort()
		return nil, fmt.Errorf("projection of %s at revision %d: %w", es.Dir(), rev.Revision, err)
	}
	g, err := w.Commit(ctx, &storyline.Lineage{EventsURI: uri, EventsRevision: rev.Revision})
	if err != nil {
		return nil, err
	}
	res.Generation = g
	return res, nil
}

// fill adds the projection rows of res.Revision to w: copied from prev for
// unchanged sessions when prev is an older projection of the same store,
// normalized from events for the rest.
func (res *Result) fill(ctx context.Context, w *storyline.Writer, prev *storyline.Generation, uri string, incremental bool) error {
	rev := res.Revision
	var changed map[string]bool // nil: normalize every session
	if l := prev.Manifest.Lineage; incremental && l != nil && l.EventsURI == uri && l.EventsRevision <= rev.Revision {
		var err error
		if changed, err = rev.SessionsSince(ctx, l.EventsRevision); err != nil {
			return err
		}
		if err := w.CopyFrom(ctx, prev, func(_, session string) bool { return !changed[session] }); err != nil {
			return err
		}
		res.Mode = ModeIncremental
	} else {
		res.Mode = ModeFull
	}
	return normalize(ctx, rev, changed, w, res)
}

// normalize reads the sessions of rev (those in only, or all when nil) and
// adds their Storylines to w. Sessions are independent, so they are
// normalized by one worker per CPU; the Writer sorts rows, so the result
// does not depend on which worker finishes first.
func normalize(ctx context.Context, rev *events.Revision, only map[string]bool, w *storyline.Writer, res *Result) error {
	g, gctx := errgroup.WithContext(ctx)
	work := make(chan []model.Event, runtime.GOMAXPROCS(0))
	for range runtime.GOMAXPROCS(0) {
		g.Go(func() error {
			for evs := range work {
				for _, sl := range canonical.Storylines(evs, "") {
					if err := w.Add(sl); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(work)
		return rev.ScanSessions(gctx, only, func(_ string, evs []model.Event) error {
			res.Sessions++
			res.Events += int64(len(evs))
			select {
			case work <- evs:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	return g.Wait()
}
