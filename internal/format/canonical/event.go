// Package canonical implements pchronicle's own canonical event wire schema
// (one JSON object per line; docs/formats.md, canonical section): strict decoding and
// encoding of single events, the stream rules that span lines (Validator),
// the deterministic canonical → Storyline normalization shared with the
// events store projections, and the format adapter for canonical JSONL files.
//
// Unlike the third-party adapters this package is strict: the wire schema is
// a versioned contract, so anything outside it is an error naming the field.
package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// WireVersion is the value of the "v" field this build reads and writes.
const WireVersion = 1

// Event kinds.
const (
	KindRunStart          = "run.start"
	KindRunEnd            = "run.end"
	KindMessage           = "message"
	KindToolCall          = "tool.call"
	KindToolResult        = "tool.result"
	KindUsage             = "usage"
	KindSubagentLink      = "subagent.link"
	KindContinuationLink  = "continuation.link"
	KindContextCompaction = "context.compaction"
	KindMark              = "mark"
	KindRaw               = "raw"
)

// Kinds lists every known kind, in documentation order.
var Kinds = []string{
	KindRunStart, KindRunEnd, KindMessage, KindToolCall, KindToolResult, KindUsage,
	KindSubagentLink, KindContinuationLink, KindContextCompaction, KindMark, KindRaw,
}

// KnownKind reports whether k is a kind of this wire version.
func KnownKind(k string) bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

// Wire field names, in the order EncodeEvent writes them.
const (
	fV             = "v"
	fEventID       = "event_id"
	fTraceID       = "trace_id"
	fRunID         = "run_id"
	fSessionID     = "session_id"
	fAgentID       = "agent_id"
	fSeq           = "seq"
	fTS            = "ts"
	fKind          = "kind"
	fParentEventID = "parent_event_id"
	fStepID        = "step_id"
	fToolCallID    = "tool_call_id"
	fPayload       = "payload"
)

// FieldError is a violation of the wire schema, located by field name
// ("seq", "payload.name"). Callers add the file and line.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// DecodeEvent decodes one wire line strictly: exactly one JSON object with
// only the schema's fields (no duplicates), each of the right type, all
// required fields present, a known kind and a payload that satisfies the
// kind's rules. ts is normalized to UTC with microsecond precision (the
// precision of the events relation); payload is kept as compact JSON text.
func DecodeEvent(line []byte) (model.Event, error) {
	fields, err := splitObject(line)
	if err != nil {
		return model.Event{}, err
	}
	var e model.Event
	for _, name := range []string{fV, fEventID, fRunID, fSessionID, fSeq, fTS, fKind, fPayload} {
		if fields.get(name) == nil {
			return model.Event{}, fieldErr(name, "required field is missing")
		}
	}
	v, err := wireInt(fields.get(fV), fV)
	if err != nil {
		return model.Event{}, err
	}
	if v != WireVersion {
		return model.Event{}, fieldErr(fV, "unsupported wire version %d (this build reads %d)", v, WireVersion)
	}
	for _, f := range requiredStrings(&e) {
		if *f.dst, err = wireString(fields.get(f.name), f.name); err != nil {
			return model.Event{}, err
		}
	}
	for _, f := range optionalStrings(&e) {
		if *f.dst, err = wireOptString(fields.get(f.name), f.name); err != nil {
			return model.Event{}, err
		}
	}
	if e.Seq, err = wireInt(fields.get(fSeq), fSeq); err != nil {
		return model.Event{}, err
	}
	if e.TS, err = wireTime(fields.get(fTS), fTS); err != nil {
		return model.Event{}, err
	}
	if e.Payload, err = wirePayload(fields.get(fPayload)); err != nil {
		return model.Event{}, err
	}
	// The payload is a member of the validated line: split it in place
	// rather than validating its text again.
	if err := check(&e, format.SplitObject(fields.get(fPayload))); err != nil {
		return model.Event{}, err
	}
	return e, nil
}

// wireFields are a line's members by wire field (wireIndex); nil when
// absent. A fixed array, not a map: no allocation per line.
type wireFields [len(wireNames)][]byte

func (f *wireFields) get(name string) json.RawMessage { return f[wireIndex(name)] }

// splitObject reads line as exactly one JSON object and returns its members,
// rejecting unknown and duplicate fields. Valid lines take the fast path
// (one validation, then a zero-copy split); only invalid ones go through
// encoding/json, to word the error.
func splitObject(line []byte) (*wireFields, error) {
	if !jsonx.Valid(line) {
		return nil, invalidJSON(line)
	}
	var fields wireFields
	var ferr error
	isObject := format.EachMember(line, func(name string, val []byte) {
		i := wireIndex(name)
		switch {
		case ferr != nil:
		case i < 0:
			ferr = fieldErr(name, "unknown field")
		default:
			if fields[i] != nil {
				ferr = fieldErr(name, "duplicate field")
			}
			fields[i] = val
		}
	})
	if !isObject {
		return nil, errors.New("not a JSON object")
	}
	return &fields, ferr
}

// invalidJSON explains why line is not one valid JSON value.
func invalidJSON(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return errors.New("unexpected data after the JSON object")
}

type stringField struct {
	name string
	dst  *string
}

type optField struct {
	name string
	dst  **string
}

// requiredStrings and optionalStrings bind the string fields of e to their
// wire names, in schema order so that the first error reported is stable.
func requiredStrings(e *model.Event) []stringField {
	return []stringField{{fEventID, &e.EventID}, {fRunID, &e.RunID}, {fSessionID, &e.SessionID}, {fKind, &e.Kind}}
}

func optionalStrings(e *model.Event) []optField {
	return []optField{
		{fTraceID, &e.TraceID}, {fAgentID, &e.AgentID}, {fParentEventID, &e.ParentEventID},
		{fStepID, &e.StepID}, {fToolCallID, &e.ToolCallID},
	}
}

// wireNames are the wire fields, in schema order.
var wireNames = [...]string{fV, fEventID, fTraceID, fRunID, fSessionID, fAgentID, fSeq, fTS, fKind,
	fParentEventID, fStepID, fToolCallID, fPayload}

// wireIndex is the position of a wire field in wireNames, or -1.
func wireIndex(name string) int {
	for i, n := range wireNames {
		if n == name {
			return i
		}
	}
	return -1
}

func wireString(raw json.RawMessage, field string) (string, error) {
	s, ok := jsonString(raw)
	if !ok {
		return "", fieldErr(field, "must be a string")
	}
	return s, nil
}

// jsonString decodes raw, a member of a validated line, when it is a JSON
// string; one without escapes is copied without the codec.
func jsonString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if n := len(raw); n >= 2 && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && utf8.Valid(raw[1:n-1]) {
		return string(raw[1 : n-1]), true
	}
	var s string
	return s, jsonx.Unmarshal(raw, &s) == nil
}

// wireOptString reads an optional string: absent or null is nil.
func wireOptString(raw json.RawMessage, field string) (*string, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	s, err := wireString(raw, field)
	if err != nil {
		return nil, fieldErr(field, "must be a string or null")
	}
	if s == "" {
		return nil, fieldErr(field, "must not be empty (omit it or use null)")
	}
	return &s, nil
}

// wireInt accepts JSON integer literals only: 1.0 and 1e0 are not integers
// on the wire.
func wireInt(raw json.RawMessage, field string) (int64, error) {
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fieldErr(field, "must be an integer")
	}
	return v, nil
}

func wireTime(raw json.RawMessage, field string) (time.Time, error) {
	s, err := wireString(raw, field)
	if err != nil {
		return time.Time{}, fieldErr(field, "must be an RFC 3339 timestamp string")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fieldErr(field, "must be an RFC 3339 timestamp: %q", s)
	}
	return normalizeTime(t), nil
}

// normalizeTime is the one rounding rule for ts: UTC, truncated to the
// microsecond precision of the events relation.
func normalizeTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func wirePayload(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return "", fieldErr(fPayload, "must be a JSON object")
	}
	c, ok := jsonx.Compact(raw)
	if !ok {
		var b bytes.Buffer
		return "", fieldErr(fPayload, "invalid JSON: %w", json.Compact(&b, raw))
	}
	return string(c), nil
}

// Check validates a single event against the wire schema: the envelope rules
// DecodeEvent applies after typing, and the payload rules of its kind. It is
// what EncodeEvent runs before writing, so producers building model.Event
// values directly get the same guarantees as decoded lines.
func Check(e *model.Event) error {
	payload, err := payloadObject(e.Payload)
	if err != nil {
		return envelopeErr(e, err)
	}
	return check(e, payload)
}

// envelopeErr is the first envelope error of e, else err: Check reports
// the envelope's errors before the payload's.
func envelopeErr(e *model.Event, err error) error {
	if eerr := checkEnvelope(e); eerr != nil {
		return eerr
	}
	return err
}

// check is Check with the payload's members already split.
func check(e *model.Event, payload map[string]json.RawMessage) error {
	if err := checkEnvelope(e); err != nil {
		return err
	}
	return checkPayload(e, payload)
}

func checkEnvelope(e *model.Event) error {
	for _, f := range requiredStrings(e) {
		if *f.dst == "" && f.name != fKind {
			return fieldErr(f.name, "must be a non-empty string")
		}
	}
	for _, f := range optionalStrings(e) {
		if *f.dst != nil && **f.dst == "" {
			return fieldErr(f.name, "must not be empty (omit it or use null)")
		}
	}
	if e.Seq < 0 {
		return fieldErr(fSeq, "must be >= 0, got %d", e.Seq)
	}
	if e.TS.IsZero() {
		return fieldErr(fTS, "is required")
	}
	if !KnownKind(e.Kind) {
		return fieldErr(fKind, "unknown kind %q", e.Kind)
	}
	return nil
}

func payloadObject(text string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if len(text) > 0 && text[0] == '{' {
		obj = format.Object([]byte(text))
	}
	if obj == nil {
		return nil, fieldErr(fPayload, "must be a JSON object")
	}
	return obj, nil
}

// EncodeEvent returns the wire line of e (no trailing newline), with fields
// in schema order and absent optional fields omitted, so that
// DecodeEvent(EncodeEvent(e)) == e apart from _file_. It fails when e would
// not decode.
func EncodeEvent(e *model.Event) ([]byte, error) {
	if err := Check(e); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(e.Payload) + 256)
	b.WriteString(`{"v":`)
	b.WriteString(strconv.Itoa(WireVersion))
	writeString(&b, fEventID, e.EventID)
	writeOpt(&b, fTraceID, e.TraceID)
	writeString(&b, fRunID, e.RunID)
	writeString(&b, fSessionID, e.SessionID)
	writeOpt(&b, fAgentID, e.AgentID)
	b.WriteString(`,"seq":`)
	b.WriteString(strconv.FormatInt(e.Seq, 10))
	writeString(&b, fTS, normalizeTime(e.TS).Format(time.RFC3339Nano))
	writeString(&b, fKind, e.Kind)
	writeOpt(&b, fParentEventID, e.ParentEventID)
	writeOpt(&b, fStepID, e.StepID)
	writeOpt(&b, fToolCallID, e.ToolCallID)
	b.WriteString(`,"payload":`)
	payload, err := wirePayload([]byte(e.Payload)) // Check proved it an object
	if err != nil {
		return nil, err
	}
	b.WriteString(payload)
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeString(b *bytes.Buffer, name, value string) {
	b.WriteString(`,"` + name + `":`)
	b.Write(jsonx.AppendQuoted(b.AvailableBuffer(), value))
}

func writeOpt(b *bytes.Buffer, name string, value *string) {
	if value != nil {
		writeString(b, name, *value)
	}
}
