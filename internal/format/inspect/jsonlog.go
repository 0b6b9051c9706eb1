package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

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
	if src.Valid {
		// Detection validated these bytes, and held them all: a file of
		// at most its limit.
		buf := documents.Get().(*[]byte)
		defer documents.Put(buf)
		if int64(cap(*buf)) < sec.Size() {
			*buf = make([]byte, sec.Size())
		}
		data := (*buf)[:sec.Size()]
		if _, err := sec.ReadAt(data, 0); err != nil {
			return fmt.Errorf("%s: %w", src.Path, err)
		}
		return readDocument(ctx, data, src, emit)
	}
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

// documents are the buffers whole logs are read into, reused from one
// log to the next (a Storyline copies what it keeps): a new one per log
// allocated as many bytes as the logs have, for the GC to clear.
var documents = sync.Pool{New: func() any { return new([]byte) }}

// readDocument is readJSON of a whole log in memory that detection
// validated (format.Source.Valid): its members, samples and their members
// are split in one pass, where the stream's scanner found where each
// sample ends and the sample was split again.
func readDocument(ctx context.Context, data []byte, src format.Source, emit format.Emit) error {
	data, _ = format.TrimBOM(data)
	var parts headerParts
	deferred := -1 // where samples start, when they come too early
	var err error
	format.WalkMembers(data, jsonx.SkipWS(data, 0), func(keyRaw []byte, v int) int {
		if err != nil {
			return -1
		}
		switch key := format.String(keyRaw); {
		case key == "samples" && parts.complete():
			var end int
			end, err = readSampleArray(ctx, data, v, src, newHeader(parts), emit)
			return end
		case key == "samples":
			deferred = v
		case headerKeys[key]:
			end := format.SkipValue(data, v)
			parts.set(key, data[v:end])
			return end
		}
		return -1
	})
	if err != nil || deferred < 0 {
		return err
	}
	_, err = readSampleArray(ctx, data, deferred, src, newHeader(parts), emit)
	return err
}

// readSampleArray is readSamples of the samples array at data[v], in a
// validated document: it returns the index just after it.
func readSampleArray(ctx context.Context, data []byte, v int, src format.Source, h header, emit format.Emit) (int, error) {
	switch data[v] {
	case 'n':
		return format.SkipValue(data, v), nil
	case '[':
	default:
		return -1, format.Errorf(src, lineAt(data, v), "/samples", "inspect samples is not an array")
	}
	var err error
	n := 0
	end := format.WalkElements(data, v, func(e int) int {
		if err != nil {
			return -1
		}
		if err = ctx.Err(); err != nil {
			return -1
		}
		if data[e] != '{' {
			err = format.Errorf(src, lineAt(data, e), format.Pointer("samples", n), "inspect sample is not a JSON object")
			return -1
		}
		d, end := splitSample(data, e, LayoutJSON, []any{"samples", n})
		n++
		err = emit(buildStoryline(d, &h, src))
		return end
	})
	if err == nil {
		err = ctx.Err() // as the stream checks before reading the closing bracket
	}
	return end, err
}

// lineAt is the 1-based line of data[i].
func lineAt(data []byte, i int) int64 {
	return int64(bytes.Count(data[:i], []byte{'\n'})) + 1
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
		open := jsonx.SkipWS(data, 0)
		if open >= len(data) || data[open] != '{' {
			return format.Errorf(src, start.line, format.Pointer("samples", i), "inspect sample is not a JSON object")
		}
		d, _ := splitSample(data, open, LayoutJSON, []any{"samples", i})
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

// splitSample splits the sample object at raw[i] (valid JSON), held in
// one JSON object (a samples element or an .eval entry), and returns it
// with the index just after it. Its messages, events and attachments, and
// the members of each message and event, are split in the same pass as
// its own members: splitting each level's values again read an event's bytes once
// per level, which dominated the adapter's profile. base locates the
// sample for warnings.
func splitSample(raw []byte, i int, layout string, base []any) (*sampleData, int) {
	d := &sampleData{fields: make(map[string]jsonx.RawMessage, 16), layout: layout, atSample: base,
		atMessage: func(i int) []any { return at(base, "messages", i) },
		atEvent:   func(i int) []any { return at(base, "events", i) }}
	d.attach.byHash = map[string]jsonx.RawMessage{}
	var messages, events format.List
	var messagesListed, eventsListed bool
	end := format.WalkMembers(raw, i, func(keyRaw []byte, v int) int {
		key := format.Symbol(keyRaw)
		end := -1
		switch key { // a repeated member keeps its last value, as SplitObject does
		case "messages":
			if messagesListed = raw[v] == '['; messagesListed {
				end = format.SplitListAt(&messages, raw, v)
			}
		case "events":
			if eventsListed = raw[v] == '['; eventsListed {
				end = format.SplitListAt(&events, raw, v)
			}
		case "attachments":
			clear(d.attach.byHash)
			if raw[v] == '{' {
				end = format.WalkMembers(raw, v, func(name []byte, a int) int {
					aEnd := format.SkipValue(raw, a)
					if raw[a] == '"' {
						d.attach.byHash[format.String(name)] = raw[a:aEnd]
					}
					return aEnd
				})
			}
		}
		if end < 0 {
			end = format.SkipValue(raw, v)
		}
		d.fields[key] = raw[v:end]
		return end
	})
	if messagesListed {
		d.messages, d.messageList = messages.Elems, &messages
	}
	// Logs from before events and attachments had their own members kept
	// both in "transcript".
	if tr := format.SplitObject(d.fields["transcript"]); tr != nil && format.IsNull(d.fields["events"]) {
		d.events, _ = format.SplitArray(tr["events"])
		if format.IsNull(d.fields["attachments"]) {
			clear(d.attach.byHash)
			format.EachMember(tr["content"], func(key string, val []byte) {
				if len(val) > 0 && val[0] == '"' {
					d.attach.byHash[key] = val
				}
			})
		}
	} else if eventsListed {
		d.events, d.eventList = events.Elems, &events
	}
	if pools := format.SplitObject(d.fields["events_data"]); pools != nil {
		d.pool, _ = format.SplitArray(pools["messages"])
	}
	return d, end
}
