package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// eachElement streams the top-level records of a file: the elements of a
// JSON array document, or the lines of a JSONL file. The location passed to
// fn names the line, or the element's JSON pointer. Elements are decoded
// one at a time, so a large array is never held whole.
func eachElement(ctx context.Context, r io.Reader, src format.Source, fn func(l loc, raw []byte) error) error {
	br, release := format.Buffered(r)
	defer release()
	first, err := firstByte(br)
	if err != nil {
		return format.Errorf(src, 0, "", "read: %w", err)
	}
	if first != '[' {
		return format.EachLine(ctx, br, func(n int64, line []byte) error {
			return fn(loc{line: n}, line)
		})
	}
	dec := json.NewDecoder(br)
	if _, err := dec.Token(); err != nil {
		return format.Errorf(src, 0, "", "read array: %w", err)
	}
	for i := 0; dec.More(); i++ {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var raw jsonx.RawMessage
		ptr := "/" + strconv.Itoa(i)
		if err := dec.Decode(&raw); err != nil {
			return format.Errorf(src, 0, ptr, "read array element: %w", err)
		}
		if err := fn(loc{ptr: ptr}, raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return format.Errorf(src, 0, "", "read array end: %w", err)
	}
	return nil
}

// firstByte returns the first non-space byte without consuming it. An
// empty input gives 0.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.Peek(1)
		if err == io.EOF {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.Discard(1)
		default:
			return b[0], nil
		}
	}
}

// decodeObject validates raw once and splits it into its members, which
// alias raw (see splitObject).
func decodeObject(raw []byte) (map[string]jsonx.RawMessage, error) {
	if !jsonx.Valid(raw) {
		var v any
		err := jsonx.Unmarshal(raw, &v) // for the position and reason
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	m := format.SplitObject(raw)
	if m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

// elementError wraps an element-level failure as a ParseError at l.
func elementError(src format.Source, l loc, err error) error {
	return &format.ParseError{Path: src.Path, Line: l.line, Pointer: l.pointer(), Err: err}
}

// decodeMessages splits a list of objects out of a value already
// validated by decodeObject; elements that are not objects stay nil so
// indexes keep matching the source. null gives an empty list.
func decodeMessages(raw jsonx.RawMessage) ([]map[string]jsonx.RawMessage, error) {
	if format.IsNull(raw) {
		return nil, nil
	}
	elems, ok := format.SplitArray(raw)
	if !ok {
		return nil, errors.New("not an array")
	}
	msgs := make([]map[string]jsonx.RawMessage, len(elems))
	for i, e := range elems {
		msgs[i] = format.SplitObject(e)
	}
	return msgs, nil
}
