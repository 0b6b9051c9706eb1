package format

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"sync"
)

// readBufferSize is the read buffer of line and element streams; longer
// lines are still read whole.
const readBufferSize = 256 << 10

// bufferedReaders recycles read buffers: a Dataset of many small files would
// otherwise allocate (and clear) one large buffer per file.
var bufferedReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// Buffered returns r behind a recycled read buffer (r itself when it is
// already such a reader) and the function that gives the buffer back; the
// reader must not be used after release.
func Buffered(r io.Reader) (br *bufio.Reader, release func()) {
	if b, ok := r.(*bufio.Reader); ok && b.Size() >= readBufferSize {
		return b, func() {}
	}
	br = bufferedReaders.Get().(*bufio.Reader)
	br.Reset(r)
	return br, func() {
		br.Reset(nil)
		bufferedReaders.Put(br)
	}
}

// EachLine calls fn for every non-blank line of r with its 1-based line
// number. Lines of any length are supported; the slice passed to fn is only
// valid during the call. Cancellation is checked between lines.
func EachLine(ctx context.Context, r io.Reader, fn func(lineNo int64, line []byte) error) error {
	return eachLine(ctx, r, func(lineNo int64, line []byte) error {
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			return fn(lineNo, trimmed)
		}
		return nil
	})
}

// EachTextLine is EachLine for text formats in which blank lines and
// trailing spaces carry meaning (Markdown): fn gets every line, blank ones
// included, without its line ending (\n or \r\n) but otherwise as written.
func EachTextLine(ctx context.Context, r io.Reader, fn func(lineNo int64, line []byte) error) error {
	return eachLine(ctx, r, func(lineNo int64, line []byte) error {
		line = bytes.TrimSuffix(line, []byte("\n"))
		return fn(lineNo, bytes.TrimSuffix(line, []byte("\r")))
	})
}

// eachLine calls fn for every line of r, with its line ending. A line
// longer than the read buffer is read whole, counted against the document
// budget of ctx until fn is done with it.
func eachLine(ctx context.Context, r io.Reader, fn func(lineNo int64, line []byte) error) error {
	br, release := Buffered(r)
	defer release()
	var long []byte
	var held *LineHold
	defer func() { held.Release() }()
	var lineNo int64
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if held == nil {
				var herr error
				if held, herr = HoldLine(ctx); herr != nil {
					return herr
				}
			}
			if held != nil {
				if herr := held.To(ctx, lineNo+1, int64(len(long)+len(chunk))); herr != nil {
					return herr
				}
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > 0 {
			lineNo++
			if lineNo%1024 == 0 {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
			}
			if ferr := fn(lineNo, line); ferr != nil {
				return ferr
			}
		}
		long = nil
		held.Release()
		held = nil
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
