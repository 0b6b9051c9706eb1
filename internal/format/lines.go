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
	br, release := Buffered(r)
	defer release()
	var long []byte
	var lineNo int64
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
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
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) > 0 {
				if ferr := fn(lineNo, trimmed); ferr != nil {
					return ferr
				}
			}
		}
		long = nil
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
