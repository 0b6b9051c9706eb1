package ingest

import (
	"bytes"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// A JSONL file whose last line has no newline and does not parse is still
// being written: Claude Code, Codex, ATOF and canonical events writers, and
// chat loggers append a line at a time. Such a file is read up to its last
// complete line, with a warning, rather than failing every query over a
// folder of live sessions (docs/formats.md, "Files being written"). A bad
// line followed by others, or a bad last line that ends with a newline, is
// a damaged file and still fails.

// maxLiveTail bounds the unterminated last line read to judge it: a longer
// one is left to the adapter, which fails on it as on any bad line.
const maxLiveTail = 64 << 20

// tornTail returns the length of data without its torn last line — an
// unterminated last line that is not valid JSON — and that line's number,
// or ok=false when data does not end so.
func tornTail(data []byte) (cut int, line int64, ok bool) {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, '\n')
	last := data[i+1:]
	if len(bytes.TrimSpace(last)) == 0 || jsonx.Valid(last) {
		return 0, 0, false
	}
	return i + 1, int64(bytes.Count(data[:i+1], []byte("\n"))) + 1, true
}

// tornTailAt is tornTail of a seekable file of size bytes, reading only its
// end. It leaves r's offset anywhere.
func tornTailAt(r io.ReadSeeker, size int64) (cut int64, line int64, ok bool, err error) {
	if size <= 0 {
		return 0, 0, false, nil
	}
	// Find the last newline, reading backwards a block at a time.
	const block = 64 << 10
	buf := make([]byte, block)
	end := size
	nl := int64(-1)
	for end > 0 && size-end < maxLiveTail {
		start := max(0, end-block)
		b := buf[:end-start]
		if _, err := r.Seek(start, io.SeekStart); err != nil {
			return 0, 0, false, err
		}
		if _, err := io.ReadFull(r, b); err != nil {
			return 0, 0, false, err
		}
		if end == size && b[len(b)-1] == '\n' {
			return 0, 0, false, nil
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			nl = start + int64(i)
			break
		}
		end = start
	}
	if nl < 0 && end > 0 {
		return 0, 0, false, nil // the last line is too long to judge here
	}
	tail := make([]byte, size-nl-1)
	if _, err := r.Seek(nl+1, io.SeekStart); err != nil {
		return 0, 0, false, err
	}
	if _, err := io.ReadFull(r, tail); err != nil {
		return 0, 0, false, err
	}
	if len(bytes.TrimSpace(tail)) == 0 || jsonx.Valid(tail) {
		return 0, 0, false, nil
	}
	// The line's number: count the newlines before it.
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return 0, 0, false, err
	}
	lines, err := countLines(io.LimitReader(r, nl+1))
	if err != nil {
		return 0, 0, false, err
	}
	return nl + 1, lines + 1, true, nil
}

func countLines(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte("\n")))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// liveWarning says what reading a file being written left out.
func liveWarning(src format.Source, line int64) model.Warning {
	return model.Warning{File: src.Path, Line: line,
		Message: fmt.Sprintf("the last line has no newline and is not valid JSON: the file is still being written; read up to line %d", line-1)}
}

// withWarning adds w to the first Storyline emit passes on.
func withWarning(w model.Warning, emit format.Emit) format.Emit {
	added := false
	return func(sl *model.Storyline) error {
		if !added {
			added = true
			sl.Warnings = append(sl.Warnings, w)
		}
		return emit(sl)
	}
}
