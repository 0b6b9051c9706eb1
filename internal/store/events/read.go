package events

import (
	"container/heap"
	"context"
	"errors"
	"io"

	"github.com/pchronicle/pchronicle/internal/model"
)

// mergeBatch is the rows each segment cursor holds during a merge.
const mergeBatch = 1024

// Scan calls fn with every event of the segments keep accepts (all when keep
// is nil), in (session_id, seq) order across segments. It reads each segment
// once, holding one batch per segment in memory.
func (r *Revision) Scan(ctx context.Context, keep func(*Segment) bool, fn func(*model.Event) error) error {
	var h mergeHeap
	defer func() {
		for _, c := range h {
			c.c.close()
		}
	}()
	for i := range r.Segments {
		seg := &r.Segments[i]
		if keep != nil && !keep(seg) {
			continue
		}
		c, err := openSegment[model.Event](r.Path(seg), mergeBatch)
		if err != nil {
			return err
		}
		mc := &mergeCursor{c: c}
		if err := mc.advance(); err != nil {
			c.close()
			if errors.Is(err, io.EOF) {
				continue
			}
			return err
		}
		h = append(h, mc)
	}
	heap.Init(&h)
	for n := 0; len(h) > 0; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		top := h[0]
		if err := fn(&top.rows[top.i]); err != nil {
			return err
		}
		switch err := top.advance(); {
		case errors.Is(err, io.EOF):
			top.c.close()
			heap.Pop(&h)
		case err != nil:
			return err
		default:
			heap.Fix(&h, 0)
		}
	}
	return nil
}

// ScanSessions calls fn once per session with all of its events in seq
// order, sessions in byte order. When sessions is non-nil only those
// sessions are read, and segments whose session range holds none of them
// are skipped unopened.
func (r *Revision) ScanSessions(ctx context.Context, sessions map[string]bool, fn func(session string, events []model.Event) error) error {
	keep := func(seg *Segment) bool {
		for s := range sessions {
			if seg.MayHoldSession(s) {
				return true
			}
		}
		return false
	}
	if sessions == nil {
		keep = nil
	}
	var cur []model.Event
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		err := fn(cur[0].SessionID, cur)
		cur = nil
		return err
	}
	err := r.Scan(ctx, keep, func(e *model.Event) error {
		if sessions != nil && !sessions[e.SessionID] {
			return nil
		}
		if len(cur) > 0 && cur[0].SessionID != e.SessionID {
			if err := flush(); err != nil {
				return err
			}
		}
		cur = append(cur, *e)
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// SessionsSince returns the sessions that may have gained events after fact
// revision rev: every session of a segment holding facts newer than rev.
// A compacted segment whose facts straddle rev counts whole, which can only
// over-report.
func (r *Revision) SessionsSince(ctx context.Context, rev int64) (map[string]bool, error) {
	out := map[string]bool{}
	for i := range r.Segments {
		seg := &r.Segments[i]
		if seg.MaxFactRevision <= rev {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := readSegment(r.Path(seg), func(rows []sessionRow) error {
			for _, s := range rows {
				out[s.SessionID] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

type sessionRow struct {
	SessionID string `parquet:"session_id"`
}

type mergeCursor struct {
	c    *cursor[model.Event]
	rows []model.Event
	i    int
}

func (m *mergeCursor) advance() error {
	m.i++
	if m.i < len(m.rows) {
		return nil
	}
	rows, err := m.c.next()
	if err != nil {
		return err
	}
	m.rows, m.i = rows, 0
	return nil
}

// mergeHeap orders cursors by their current row. (session_id, seq) is
// unique within a store, so the order is total.
type mergeHeap []*mergeCursor

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	return compareEvents(h[i].rows[h[i].i], h[j].rows[h[j].i]) < 0
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeCursor)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
