package events

import (
	"context"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/hugeheap"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/parallel"
)

// lineBatch is the number of JSONL lines decoded in parallel at a time.
const lineBatch = 8192

// eventGrain is the fewest events or lines a CPU is given at once.
// Per-event schema work (decoding, payload checks) is independent, so it
// is spread over CPUs; the stream rules, which depend on order, are then
// checked sequentially.
const eventGrain = 512

// checkAll runs canonical.Check on every event and returns the error of
// the first invalid one, by index.
func checkAll(events []model.Event) error {
	errs := make([]error, len(events))
	parallel.Ranges(len(events), eventGrain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			errs[i] = canonical.Check(&events[i])
		}
	})
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("event %q: %w", events[i].EventID, err)
		}
	}
	return nil
}

type rawLine struct {
	no   int64
	text []byte
}

// ReadFrom adds the canonical JSONL stream r, decoding each line strictly.
// The first bad line stops it with a *format.ParseError naming src.Path and
// the line; a failed or interrupted read of r is returned naming src.Path;
// errors adding valid events (I/O) are returned unchanged.
func (tx *Tx) ReadFrom(ctx context.Context, r io.Reader, src format.Source) error {
	if tx.done {
		return ErrTxDone
	}
	// A batch's lines are copied into one buffer, reused for the next
	// batch (decoded events copy what they keep). A line's copy stays
	// valid when the buffer grows: append moves the buffer, never the bytes
	// of the old one.
	batch := make([]rawLine, 0, lineBatch)
	var buf []byte
	var addErr error
	// The events decoded stay until Commit: the heap is told of the input
	// whole when its size is known, before the first batch's buffers,
	// else a batch at a time.
	hugeheap.Expect(src.Size)
	add := func() error {
		if src.Size <= 0 {
			hugeheap.Expect(int64(len(buf)))
		}
		err := tx.addLines(ctx, src, batch)
		batch, buf = batch[:0], buf[:0]
		return err
	}
	err := format.EachLine(ctx, r, func(no int64, text []byte) error {
		buf = append(buf, text...)
		batch = append(batch, rawLine{no, buf[len(buf)-len(text) : len(buf) : len(buf)]})
		if len(batch) < lineBatch {
			return nil
		}
		addErr = add()
		return addErr
	})
	if err != nil {
		if addErr == nil {
			err = fmt.Errorf("%s: %w", src.Path, err)
		}
		return err
	}
	return add()
}

// addLines decodes a batch of lines in parallel, then checks and adds the
// events in line order.
func (tx *Tx) addLines(ctx context.Context, src format.Source, lines []rawLine) error {
	evs := make([]model.Event, len(lines))
	errs := make([]error, len(lines))
	parallel.Ranges(len(lines), eventGrain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			evs[i], errs[i] = canonical.DecodeEvent(lines[i].text)
		}
	})
	for i := range evs {
		err := errs[i]
		if err == nil {
			err = tx.v.Check(&evs[i])
		}
		if err != nil {
			return &format.ParseError{Path: src.Path, Line: lines[i].no, Err: err}
		}
		if err := tx.flushFull(ctx, evs[i]); err != nil {
			return err
		}
	}
	return nil
}
