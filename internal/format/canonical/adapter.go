package canonical

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// LayoutJSONL is the only file layout: one wire event per line.
const LayoutJSONL = "jsonl"

type adapter struct{}

// New returns the canonical events adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.Canonical }

// Detect accepts a file whose first object carries the fields that only the
// canonical envelope combines: v, event_id, kind and seq. A one-line file
// without a .jsonl name probes as a single object and is accepted too.
func (adapter) Detect(p *format.Probe) (string, bool) {
	if p.Shape != format.ShapeLines && p.Shape != format.ShapeObject {
		return "", false
	}
	o := p.First
	if o.Has(fV) && o.Has(fEventID) && o.Has(fKind) && o.Has(fSeq) {
		return LayoutJSONL, true
	}
	return "", false
}

// Normalize decodes and validates every line strictly; the first bad line
// fails the file with a *format.ParseError. Events are buffered per session
// and a session's Storyline is emitted as soon as its run.end arrives, so
// memory is bounded by the sessions open at once (plus the Validator's
// event_id set); sessions without run.end are emitted at EOF in session_id
// order. run.end must be a session's last event in a file: a later event of
// the same session is an error, since its Storyline was already emitted.
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	if layout != LayoutJSONL {
		return fmt.Errorf("canonical: unknown layout %q", layout)
	}
	open := map[string][]model.Event{}
	closed := map[string]bool{}
	flush := func(session string) error {
		sls := Storylines(open[session], src.File)
		delete(open, session)
		for _, sl := range sls {
			sl.Run.SourceFormat = format.Canonical + "/" + LayoutJSONL
			if err := emit(sl); err != nil {
				return err
			}
		}
		return nil
	}
	err := ReadEvents(ctx, r, src, func(line int64, e model.Event) error {
		if closed[e.SessionID] {
			return format.Errorf(src, line, "", "session_id %q: event %s after the session's run.end", e.SessionID, e.EventID)
		}
		open[e.SessionID] = append(open[e.SessionID], e)
		if e.Kind != KindRunEnd {
			return nil
		}
		closed[e.SessionID] = true
		return flush(e.SessionID)
	})
	if err != nil {
		return err
	}
	rest := make([]string, 0, len(open))
	for s := range open {
		rest = append(rest, s)
	}
	sort.Strings(rest)
	for _, s := range rest {
		if err := flush(s); err != nil {
			return err
		}
	}
	return nil
}
