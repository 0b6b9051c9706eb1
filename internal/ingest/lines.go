package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// A large file of a layout whose lines are independent records
// (format.LineRecords) is normalized on every CPU: it is read in chunks of
// whole lines, each chunk's records are normalized by one of several
// workers, and the Storylines are finished and emitted in file order, so
// the result is exactly that of reading the file line by line.
const (
	// splitMinBytes is the smallest file read in chunks.
	splitMinBytes = 4 << 20
	// chunkBytes is the size a chunk is cut at (then extended to the end
	// of its last line).
	chunkBytes = 1 << 20
	// lineRoom is the room a chunk's buffer keeps past chunkBytes for the
	// rest of its last line, so that extending it does not copy the chunk
	// (OpenHands instances are lines of up to ~100 KB).
	lineRoom = 256 << 10
)

// chunk is a run of whole lines and, once normalized, its records.
type chunk struct {
	data  []byte
	first int64 // the number of its first line
	recs  []record
	err   error // the first failing line's error; recs holds the lines before it
	done  chan struct{}
	// hold counts a chunk extended by a line longer than the read buffer
	// against the query's document budget until it is emitted, as
	// format.EachLine counts such a line.
	hold *format.LineHold
}

func (c *chunk) release() {
	c.hold.Release()
	c.hold = nil
}

type record struct {
	sl *model.Storyline
	id string
}

// splittable returns the record normalizer of det's layout when a file of
// size bytes, of which p is the prefix, is worth reading in chunks.
func splittable(det Detection, p *format.Probe, size int64) format.RecordNormalizer {
	if size < splitMinBytes || runtime.GOMAXPROCS(0) < 2 || p.Shape != format.ShapeLines {
		return nil
	}
	lr, ok := det.Adapter.(format.LineRecords)
	if !ok {
		return nil
	}
	return lr.LineRecords(det.Layout)
}

// normalizeLines reads r, the whole file from its start, in chunks
// normalized by rec on every CPU, and emits the Storylines in file order.
func normalizeLines(ctx context.Context, r io.Reader, src format.Source, rec format.RecordNormalizer, emit format.Emit) error {
	ctx, cancel := context.WithCancel(ctx)
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *chunk, workers)
	order := make(chan *chunk, 2*workers) // bounds the chunks held at once
	// A chunk's buffer goes back to the reader once its lines are
	// normalized (a Storyline holds no bytes of its line): a new one per
	// chunk was 1.25 MiB to zero and then to collect.
	free := make(chan []byte, 2*workers+2)
	var readErr error
	go func() {
		defer close(jobs)
		defer close(order)
		readErr = readChunks(ctx, r, free, func(c *chunk) bool {
			select {
			case order <- c:
			case <-ctx.Done():
				return false
			}
			jobs <- c
			return true
		})
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				c.normalize(ctx, src, rec, free)
			}
		}()
	}
	defer func() {
		cancel() // stops the reader and the workers, then waits for them
		wg.Wait()
		for c := range order {
			c.release()
		}
	}()
	for c := range order {
		if err := c.emit(ctx, rec, emit); err != nil {
			return err
		}
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// emit waits for the chunk to be normalized and emits its Storylines.
func (c *chunk) emit(ctx context.Context, rec format.RecordNormalizer, emit format.Emit) error {
	defer c.release()
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, rc := range c.recs {
		if rc.sl == nil {
			continue
		}
		rec.Finish(rc.sl, rc.id)
		if err := emit(rc.sl); err != nil {
			return err
		}
	}
	c.recs = nil
	return c.err
}

// normalize runs rec over the chunk's non-blank lines, trimmed and
// numbered as format.EachLine does, then hands its buffer to free.
func (c *chunk) normalize(ctx context.Context, src format.Source, rec format.RecordNormalizer, free chan<- []byte) {
	defer close(c.done)
	// A Storyline holds no bytes of its line: the data can go while the
	// records wait to be emitted.
	defer func() {
		if cap(c.data) == chunkBytes+lineRoom { // not one grown for a long line
			select {
			case free <- c.data:
			default:
			}
		}
		c.data = nil
	}()
	if c.err = ctx.Err(); c.err != nil {
		return
	}
	lineNo := c.first
	for data := c.data; len(data) > 0; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		sl, id, err := rec.Record(src, lineNo, line)
		if err != nil {
			c.err = err
			return
		}
		c.recs = append(c.recs, record{sl, id})
	}
}

// readChunks cuts r into chunks of whole lines, numbering their first
// lines, and hands each to send until it returns false. A chunk reads into
// a buffer from free when there is one.
func readChunks(ctx context.Context, r io.Reader, free <-chan []byte, send func(*chunk) bool) error {
	br := bufio.NewReaderSize(r, chunkBytes)
	next := int64(1)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var data []byte
		select {
		case buf := <-free:
			data = buf[:chunkBytes:cap(buf)]
		default:
			data = make([]byte, chunkBytes, chunkBytes+lineRoom)
		}
		n, err := io.ReadFull(br, data)
		data = data[:n]
		c := &chunk{first: next, done: make(chan struct{})}
		if err == nil {
			if data, err = c.extend(ctx, br, data); err != nil {
				c.release()
				return err
			}
		} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		c.data = data
		next += int64(bytes.Count(data, []byte{'\n'}))
		if !send(c) {
			c.release()
			return ctx.Err()
		}
	}
}

// extend reads on to the end of the last line of data. A line that goes on
// past the read buffer is counted against the document budget as it grows,
// and kept in pieces until it ends, so that one refused by the budget has
// cost what was read of it and no more.
func (c *chunk) extend(ctx context.Context, br *bufio.Reader, data []byte) ([]byte, error) {
	var pieces [][]byte
	size := len(data)
	for {
		rest, err := br.ReadSlice('\n')
		size += len(rest)
		if err != bufio.ErrBufferFull {
			if err != nil && err != io.EOF {
				return data, err
			}
			if pieces == nil {
				return append(data, rest...), nil
			}
			line := make([]byte, 0, size)
			line = append(line, data...)
			for _, p := range pieces {
				line = append(line, p...)
			}
			return append(line, rest...), nil
		}
		pieces = append(pieces, bytes.Clone(rest)) // rest is the reader's buffer
		if c.hold == nil {
			if c.hold, err = format.HoldLine(ctx); err != nil {
				return data, err
			}
			if c.hold == nil {
				continue // no budget
			}
		}
		line := c.first + int64(bytes.Count(data, []byte{'\n'}))
		if err := c.hold.To(ctx, line, int64(size)); err != nil {
			return data, err
		}
	}
}
