package inspect

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// readJSON streams the JSON form. Header members are kept as they come;
// samples are read one element at a time. Inspect writes the header first;
// when samples come before the members they need, they are skipped, the
// rest is read, and the samples are read again from their offset.
func readJSON(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	sec, release, err := randomAccess(r, src)
	if err != nil {
		return err
	}
	defer release()
	sc, done := newScanner(sec, docScanner{line: 1})
	defer done()
	if bom, _ := sc.br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		sc.discard(3)
	}
	fail := func(err error) error { return scanError(src, sc, err, "") }
	if err := sc.next('{'); err != nil {
		return fail(err)
	}
	var parts headerParts
	var deferred *docScanner // where samples start, when they come too early
	for n := 0; ; n++ {
		c, err := sc.peek()
		if err != nil {
			return fail(err)
		}
		if c == '}' {
			break
		}
		if n > 0 {
			if err := sc.next(','); err != nil {
				return fail(err)
			}
		}
		keyRaw, err := sc.value(nil, true)
		if err != nil {
			return fail(err)
		}
		if !jsonx.Valid(keyRaw) || keyRaw[0] != '"' {
			return fail(errSyntax)
		}
		key := format.String(keyRaw)
		if err := sc.next(':'); err != nil {
			return fail(err)
		}
		switch {
		case key == "samples" && parts.complete():
			if err := readSamples(ctx, sc, src, newHeader(parts), emit); err != nil {
				return err
			}
		case key == "samples":
			deferred = &docScanner{off: sc.off, line: sc.line, lineStart: sc.lineStart}
			if _, err := sc.value(nil, false); err != nil {
				return fail(err)
			}
		case headerKeys[key]:
			if _, err := sc.peek(); err != nil {
				return fail(err)
			}
			start := *sc
			raw, err := sc.value(nil, true)
			if err != nil {
				return fail(err)
			}
			raw, ok := checkedJSON(src, raw)
			if !ok {
				return located(src, raw, &start, format.Pointer(key), "inspect log member")
			}
			parts.set(key, raw)
		default:
			if _, err := sc.value(nil, false); err != nil {
				return scanError(src, sc, err, format.Pointer(key))
			}
		}
	}
	if deferred == nil {
		return nil
	}
	again, done2 := newScanner(sec, *deferred)
	defer done2()
	return readSamples(ctx, again, src, newHeader(parts), emit)
}

// newScanner scans sec from at's position.
func newScanner(sec *io.SectionReader, at docScanner) (*docScanner, func()) {
	br, release := format.Buffered(io.NewSectionReader(sec, at.off, sec.Size()-at.off))
	at.br = br
	return &at, release
}

// readSamples reads the samples array at the scanner's position (null is
// no samples) and emits one Storyline per element.
func readSamples(ctx context.Context, sc *docScanner, src format.Source, h header, emit format.Emit) error {
	c, err := sc.peek()
	if err != nil {
		return scanError(src, sc, err, "/samples")
	}
	if c == 'n' {
		_, err := sc.value(nil, false)
		return scanError(src, sc, err, "/samples")
	}
	if err := sc.next('['); err != nil {
		return format.Errorf(src, sc.line, "/samples", "inspect samples is not an array")
	}
	var buf []byte
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := sc.peek()
		if err != nil {
			return scanError(src, sc, err, format.Pointer("samples", i))
		}
		if c == ']' {
			sc.discard(1)
			return nil
		}
		if i > 0 {
			if err := sc.next(','); err != nil {
				return scanError(src, sc, err, format.Pointer("samples", i))
			}
		}
		if _, err := sc.peek(); err != nil {
			return scanError(src, sc, err, format.Pointer("samples", i))
		}
		start := *sc
		// The buffer is reused: a Storyline copies what it keeps.
		buf, err = sc.value(buf[:0], true)
		if err != nil {
			return scanError(src, sc, err, format.Pointer("samples", i))
		}
		data, ok := checkedJSON(src, buf)
		if !ok {
			return located(src, buf, &start, format.Pointer("samples", i), "inspect sample")
		}
		obj := format.SplitObject(data)
		if obj == nil {
			return format.Errorf(src, start.line, format.Pointer("samples", i), "inspect sample is not a JSON object")
		}
		d := monolithSample(obj, LayoutJSON, []any{"samples", i})
		if err := emit(buildStoryline(d, &h, src)); err != nil {
			return err
		}
	}
}

// scanError locates a stream error at the scanner's line (nil stays nil).
func scanError(src format.Source, sc *docScanner, err error, pointer string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return format.Errorf(src, sc.line, pointer, "inspect log: the document ends early (truncated file?)")
	case errors.Is(err, errSyntax):
		return format.Errorf(src, sc.line, pointer, "inspect log: %v", err)
	}
	return format.Errorf(src, sc.line, pointer, "reading the inspect log: %w", err)
}

// located is the error for a value that is not valid JSON, which started
// where at was: the line and column of the problem in the file. The value
// is located as a document that starts with the spaces it was preceded by
// on its line, so that columns are the file's.
func located(src format.Source, data []byte, at *docScanner, pointer, what string) error {
	doc := append(bytes.Repeat([]byte{' '}, int(at.column()-1)), data...)
	var v jsonx.RawMessage
	pe := format.DocumentError(src, doc, what, jsonx.Unmarshal(doc, &v))
	if pe.Line > 0 {
		pe.Line += at.line - 1
	}
	pe.Pointer = pointer
	return pe
}

// checkedJSON is validJSON for a value of the log, which needs no check
// when detection validated the whole log (format.Source.Valid).
func checkedJSON(src format.Source, data []byte) ([]byte, bool) {
	if src.Valid {
		return data, true
	}
	return validJSON(data)
}

// validJSON returns data when it is valid JSON, else the same with
// Inspect's non-finite constants replaced when that makes it valid.
func validJSON(data []byte) ([]byte, bool) {
	if jsonx.Valid(data) {
		return data, true
	}
	if fixed, ok := nonFinite(data); ok && jsonx.Valid(fixed) {
		return fixed, true
	}
	return data, false
}

// monolithSample is a sample held in one JSON object: a samples element or
// an .eval entry. base locates it for warnings.
func monolithSample(obj map[string]jsonx.RawMessage, layout string, base []any) *sampleData {
	d := &sampleData{fields: obj, layout: layout, atSample: base,
		atMessage: func(i int) []any { return at(base, "messages", i) },
		atEvent:   func(i int) []any { return at(base, "events", i) }}
	d.messages, _ = format.SplitArray(obj["messages"])
	events, attached := obj["events"], obj["attachments"]
	// Logs from before events and attachments had their own members kept
	// both in "transcript".
	if tr := format.SplitObject(obj["transcript"]); tr != nil && format.IsNull(events) {
		events = tr["events"]
		if format.IsNull(attached) {
			attached = tr["content"]
		}
	}
	d.events, _ = format.SplitArray(events)
	if pools := format.SplitObject(obj["events_data"]); pools != nil {
		d.pool, _ = format.SplitArray(pools["messages"])
	}
	d.attach.byHash = map[string]jsonx.RawMessage{}
	format.EachMember(attached, func(key string, val []byte) {
		if len(val) > 0 && val[0] == '"' {
			d.attach.byHash[key] = val
		}
	})
	return d
}
