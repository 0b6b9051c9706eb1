package canonical

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Stream-rule violations, matched with errors.Is.
var (
	ErrDuplicateEvent = errors.New("duplicate event_id")
	ErrSeqOrder       = errors.New("seq not strictly increasing within session_id")
)

// Validator checks the rules that span events: event_id is unique, and seq
// strictly increases within each session_id in stream order. It remembers
// every event_id it has seen and the last seq of every session, so its
// memory grows with the stream; the zero value is not usable, call
// NewValidator.
type Validator struct {
	lastSeq map[string]int64
	seen    map[string]struct{}
	known   func(eventID string) bool
}

// NewValidator returns a Validator with no history.
func NewValidator() *Validator {
	return &Validator{lastSeq: map[string]int64{}, seen: map[string]struct{}{}}
}

// Seed makes v continue an existing stream, such as the events already in a
// store: lastSeq holds the highest stored seq per session_id (copied), and
// known, when non-nil, reports whether an event_id is already stored. Seed
// is called before the first Check.
func (v *Validator) Seed(lastSeq map[string]int64, known func(eventID string) bool) {
	for s, seq := range lastSeq {
		v.lastSeq[s] = seq
	}
	v.known = known
}

// LastSeq returns the highest seq accepted so far for session, if any.
func (v *Validator) LastSeq(session string) (int64, bool) {
	seq, ok := v.lastSeq[session]
	return seq, ok
}

// Check accepts e as the next event of the stream or says which rule it
// breaks. A rejected event leaves the Validator unchanged.
func (v *Validator) Check(e *model.Event) error {
	if _, dup := v.seen[e.EventID]; dup || (v.known != nil && v.known(e.EventID)) {
		return &FieldError{Field: fEventID, Err: fmt.Errorf("%w %q", ErrDuplicateEvent, e.EventID)}
	}
	if last, ok := v.lastSeq[e.SessionID]; ok && e.Seq <= last {
		return &FieldError{Field: fSeq, Err: fmt.Errorf("%w: %d after %d in session_id %q",
			ErrSeqOrder, e.Seq, last, e.SessionID)}
	}
	v.seen[e.EventID] = struct{}{}
	v.lastSeq[e.SessionID] = e.Seq
	return nil
}

// Read streams canonical JSONL from r, decoding each line strictly and
// checking it against the stream rules, and calls fn with each event (its
// _file_ set to src.File). The first bad line stops the read with a
// *format.ParseError naming the line; errors returned by fn are passed
// through unchanged.
func (v *Validator) Read(ctx context.Context, r io.Reader, src format.Source, fn func(line int64, e model.Event) error) error {
	return format.EachLine(ctx, r, func(line int64, text []byte) error {
		e, err := DecodeEvent(text)
		if err == nil {
			err = v.Check(&e)
		}
		if err != nil {
			return &format.ParseError{Path: src.Path, Line: line, Err: err}
		}
		e.File = src.File
		return fn(line, e)
	})
}

// ReadEvents is Read with a fresh Validator: it validates a stand-alone
// canonical JSONL stream.
func ReadEvents(ctx context.Context, r io.Reader, src format.Source, fn func(line int64, e model.Event) error) error {
	return NewValidator().Read(ctx, r, src, fn)
}
