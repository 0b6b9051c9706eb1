package format

import (
	"bufio"
	"bytes"
	"context"
	"io"
)

// EachLine calls fn for every non-blank line of r with its 1-based line
// number. Lines of any length are supported; the slice passed to fn is only
// valid during the call. Cancellation is checked between lines.
func EachLine(ctx context.Context, r io.Reader, fn func(lineNo int64, line []byte) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
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
			if lineNo == 1 {
				trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf"))
			}
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
