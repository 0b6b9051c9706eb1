package events

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// ErrTxDone is returned by a Tx used after Commit or Abort.
var ErrTxDone = errors.New("events: append transaction already finished")

// Tx is one append: events added to it become visible together, as one new
// revision, when Commit publishes the manifest, or not at all. A Tx holds
// the store's writer lock from Begin to Commit/Abort, buffers at most one
// segment of events in memory and writes full segments as it goes, so an
// append of any size streams.
type Tx struct {
	s      *Store
	unlock func()
	base   *Revision
	idx    *index
	v      *canonical.Validator
	rev    int64
	buf    []model.Event
	segs   []Segment
	added  int64
	done   bool
}

// Begin starts an append against the current revision. Every event added
// is checked against the wire schema and against the stream rules continued
// from the stored events: a new event_id, and a seq above the session's
// stored and already added ones.
func (s *Store) Begin(ctx context.Context) (*Tx, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := s.begin(ctx, unlock)
	if err != nil {
		unlock()
		return nil, err
	}
	return tx, nil
}

func (s *Store) begin(ctx context.Context, unlock func()) (*Tx, error) {
	base, err := s.Pin()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	idx := s.idx
	s.mu.Unlock()
	if idx == nil {
		idx = newIndex()
	} else {
		idx = idx.clone()
	}
	if err := idx.catchUp(ctx, base); err != nil {
		return nil, err
	}
	return &Tx{s: s, unlock: unlock, base: base, idx: idx, v: idx.validator(), rev: base.Revision + 1}, nil
}

// Add validates events and adds them to the append, stopping at the first
// invalid one (the events before it stay added); the caller reports the
// error and Aborts.
func (tx *Tx) Add(ctx context.Context, events ...model.Event) error {
	if err := checkAll(events); err != nil {
		return err
	}
	tx.buf = slices.Grow(tx.buf, min(segmentRows, len(tx.buf)+len(events))-len(tx.buf))
	for i := range events {
		if err := tx.add(ctx, events[i]); err != nil {
			return fmt.Errorf("event %q: %w", events[i].EventID, err)
		}
	}
	return nil
}

func (tx *Tx) add(ctx context.Context, e model.Event) error {
	if tx.done {
		return ErrTxDone
	}
	if err := tx.v.Check(&e); err != nil {
		return err
	}
	return tx.flushFull(ctx, e)
}

// wholeBufferFrom is the number of buffered events from which the buffer
// grows to a whole segment at once. Doubling it up to segmentRows copied
// about 90 MB of events, and a copy cannot be preempted: the collector
// waited for each one to finish, spinning, which took a quarter of a large
// append's CPU.
const wholeBufferFrom = 16 << 10

// flushFull buffers an accepted event and writes a segment when the buffer
// is full.
func (tx *Tx) flushFull(ctx context.Context, e model.Event) error {
	e.File = "" // see writeSegment
	if len(tx.buf) == cap(tx.buf) && len(tx.buf) >= wholeBufferFrom {
		whole := make([]model.Event, len(tx.buf), segmentRows)
		copy(whole, tx.buf)
		tx.buf = whole
	}
	tx.buf = append(tx.buf, e)
	tx.added++
	if len(tx.buf) < segmentRows {
		return nil
	}
	return tx.flush(ctx)
}

func (tx *Tx) flush(ctx context.Context) error {
	if len(tx.buf) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sortEvents(tx.buf)
	// Index the events while the segment is encoded: both only read them.
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		for i := range tx.buf {
			tx.idx.add(tx.buf[i].EventID, tx.buf[i].SessionID, tx.buf[i].Seq)
		}
	}()
	seg, err := writeSegment(tx.s.dir, segmentName(tx.rev, len(tx.segs)), tx.rev, tx.rev, tx.rev, tx.buf)
	<-indexed
	if err != nil {
		return err
	}
	tx.segs = append(tx.segs, seg)
	tx.buf = tx.buf[:0]
	return nil
}

// Len returns the number of events added so far.
func (tx *Tx) Len() int64 { return tx.added }

// Commit writes the remaining events and publishes the new revision. With
// no events added it publishes nothing and returns the base revision.
func (tx *Tx) Commit(ctx context.Context) (*Revision, error) {
	if tx.done {
		return nil, ErrTxDone
	}
	defer tx.finish()
	if err := tx.flush(ctx); err != nil {
		tx.removeSegments()
		return nil, err
	}
	if len(tx.segs) == 0 {
		return tx.base, nil
	}
	m := tx.base.Manifest
	m.Revision, m.FactWatermark = tx.rev, tx.rev
	m.Segments = append(append([]Segment{}, tx.base.Segments...), tx.segs...)
	m.Events += tx.added
	m.CreatedAt = time.Now().UTC()
	if err := tx.s.commit(ctx, &m); err != nil {
		tx.s.cleanupUnpublished(tx.rev, tx.removeSegments)
		return nil, err
	}
	tx.idx.factWatermark = tx.rev
	tx.s.mu.Lock()
	tx.s.idx = tx.idx
	tx.s.mu.Unlock()
	return &Revision{Dir: tx.s.dir, Manifest: m}, nil
}

// commit makes new segment files durable by name, then publishes m unless
// ctx is done: after Ctrl-C or SIGTERM nothing is published any more.
func (s *Store) commit(ctx context.Context, m *Manifest) error {
	segDir := filepath.Join(s.dir, segmentsDir)
	if err := fsx.Check(segDir, fsx.FailDir); err != nil {
		return err
	}
	if err := fsx.SyncDir(segDir); err != nil {
		return err
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("events: refusing to publish an inconsistent manifest: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("events: not published: %w", err)
	}
	return s.publish(m)
}

// cleanupUnpublished runs remove after a failed publication of revision rev,
// unless the manifest was renamed into place before the failure (only its
// directory fsync failed): then the segments are visible and must stay.
func (s *Store) cleanupUnpublished(rev int64, remove func()) {
	if cur, err := s.Pin(); err == nil && cur.Revision >= rev {
		return
	}
	remove()
}

// Abort discards the append: nothing added becomes visible.
func (tx *Tx) Abort() {
	if tx.done {
		return
	}
	tx.removeSegments()
	tx.finish()
}

func (tx *Tx) removeSegments() {
	for i := range tx.segs {
		os.Remove(filepath.Join(tx.s.dir, filepath.FromSlash(tx.segs[i].Path)))
	}
}

func (tx *Tx) finish() {
	tx.done = true
	tx.buf = nil
	tx.unlock()
}

// Append adds events as one new revision, or none when any event is
// invalid. It is Begin, Add and Commit.
func (s *Store) Append(ctx context.Context, events []model.Event) (*Revision, error) {
	tx, err := s.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := tx.Add(ctx, events...); err != nil {
		tx.Abort()
		return nil, err
	}
	return tx.Commit(ctx)
}
