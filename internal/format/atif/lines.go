package atif

import (
	"bytes"
	"context"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// normalizeLines streams ATIF-as-JSONL. A line is one of:
//   - a header ({"__header__": true, schema_version, session_id, agent, …})
//     that starts a Storyline whose steps are the following lines;
//   - a whole ATIF document (one trajectory per line), emitted at once;
//   - a step of the current Storyline.
//
// Only the Storyline being built is held in memory.
func normalizeLines(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	ln := &lineReader{ctx: ctx, src: src, emit: emit, ids: newSessions(src)}
	err := format.EachLine(ctx, r, ln.line)
	switch {
	case err == nil:
	case err == ln.bad || err == ln.emitErr || ctx.Err() != nil:
		return err
	default:
		return format.Errorf(src, 0, "", "atif: read: %w", err)
	}
	if ln.bad != nil {
		if ln.cur == nil {
			return ln.bad
		}
		// A step stream cut off while being written: keep the complete steps.
		ln.cur.b.warn.add("line-truncated", loc{line: ln.bad.Line}, "last line is not valid JSON (truncated stream?); skipped")
	}
	return ln.flush()
}

type lineReader struct {
	ctx     context.Context
	src     format.Source
	emit    format.Emit
	ids     *sessions
	cur     *node              // the header Storyline being built
	bad     *format.ParseError // an unreadable line, fatal unless it is the last
	emitErr error
}

func (l *lineReader) line(n int64, line []byte) error {
	if l.bad != nil {
		return l.bad
	}
	at := loc{line: n}
	if !jsonx.Valid(line) {
		l.bad = format.Errorf(l.src, n, "", "atif: invalid JSON line: %w", decodeError(line))
		return nil
	}
	// Steps and pending results keep members of the line until the
	// Storyline ends, and the line reader reuses its buffer.
	m := format.SplitObject(bytes.Clone(line))
	if m == nil {
		l.current(at).b.warn.add("line-not-object", at, "line is not a JSON object; skipped")
		return nil
	}
	switch {
	case m["__header__"] != nil:
		if err := l.flush(); err != nil {
			return err
		}
		l.cur = l.ids.root(m, at, prefixJSONL)
		l.cur.addInlineSteps()
	case m["steps"] != nil && (m["agent"] != nil || m["schema_version"] != nil):
		if err := l.flush(); err != nil {
			return err
		}
		doc := l.ids.root(m, at, prefixJSONL)
		doc.addInlineSteps()
		return l.send(doc)
	default:
		l.current(at).b.addStep(m, at)
	}
	return nil
}

// current returns the Storyline being built, starting a headerless one
// (identity from the file name) when steps come before any header.
func (l *lineReader) current(at loc) *node {
	if l.cur == nil {
		l.cur = l.ids.root(object{}, at, prefixJSONL)
		l.cur.b.warn.add("header-missing", at, "steps without a preceding __header__ line")
	}
	return l.cur
}

func (l *lineReader) flush() error {
	if l.cur == nil {
		return nil
	}
	n := l.cur
	l.cur = nil
	return l.send(n)
}

func (l *lineReader) send(n *node) error {
	if err := n.emit(l.ctx, l.src, l.emit); err != nil {
		l.emitErr = err
		return err
	}
	return nil
}
