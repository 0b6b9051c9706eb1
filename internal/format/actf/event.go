package actf

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// phase is what an event does to its scope.
type phase int

const (
	phaseOther phase = iota // an unknown kind: counted, otherwise ignored
	phaseStart
	phaseEnd
	phaseMark
	phaseHeader
)

// Scope types the mapping understands; every other one is counted in the
// run extra with a warning.
const (
	scopeAgent = "agent"
	scopeLLM   = "llm"
	scopeTool  = "tool"
)

// event is one line of any dialect, reduced to the fields the mapping uses.
// The dialects differ mostly in where a field lives (category vs
// scope_type, data vs input/output, category_profile vs profile vs the top
// level), so decoding is one lookup chain rather than one parser per
// dialect.
type event struct {
	line int64
	// raw is the line (a copy, which the other fields alias) when it is an
	// object, else nil.
	raw        []byte
	kind       string
	phase      phase
	uuid       string
	parentUUID string
	name       string
	ts         *time.Time
	scopeType  string
	modelName  string
	toolCallID string
	// payload is the start input or the end output (data in ATOF 0.1).
	payload json.RawMessage
	status  string
	errRaw  json.RawMessage
	// sessionID and parentSessionID come from metadata.
	sessionID       string
	parentSessionID string
	dataSchema      string
	fromData        bool // payload is the data field (ATOF 0.1)

	start *event // the matching start of an end event
}

// consumedKeys are the envelope keys the mapping reads; the rest of a line
// lands in extra.
var consumedKeys = []string{
	"kind", "atof_version", "schema_version", "uuid", "parent_uuid", "timestamp", "name",
	"scope_category", "category", "scope_type", "model_name", "tool_call_id",
	"input", "output", "status", "error",
}

// Members of a line that decodeLine reads, by index into lineKeys.
const (
	fKind = iota
	fUUID
	fParentUUID
	fName
	fTimestamp
	fScopeCategory
	fCategoryProfile
	fProfile
	fMetadata
	fData
	fCategory
	fScopeType
	fModelName
	fToolCallID
	fInput
	fOutput
	fStatus
	fError
	fDataSchema
	numFields
)

var lineKeys = [numFields]string{
	"kind", "uuid", "parent_uuid", "name", "timestamp", "scope_category", "category_profile", "profile",
	"metadata", "data", "category", "scope_type", "model_name", "tool_call_id", "input", "output",
	"status", "error", "data_schema",
}

// decodeLine decodes one line. Events are kept until their session ends,
// so a valid object is copied once and its members are looked up in the
// copy (which they alias), without a map per line; anything else goes
// through the codec, for its error (or null, which reads as {}).
func decodeLine(line int64, text []byte) (*event, error) {
	var raw []byte
	var obj [numFields][]byte
	if jsonx.Valid(text) {
		raw = bytes.Clone(text)
		if !format.Fields(raw, lineKeys[:], obj[:]) {
			raw = nil
		}
	}
	if raw == nil {
		var v map[string]json.RawMessage
		if err := jsonx.Unmarshal(text, &v); err != nil {
			return nil, err
		}
	}
	e := &event{
		line:       line,
		raw:        raw,
		kind:       format.Symbol(obj[fKind]),
		uuid:       format.String(obj[fUUID]),
		parentUUID: format.String(obj[fParentUUID]),
		name:       format.Symbol(obj[fName]),
	}
	if t, ok := format.Time(obj[fTimestamp]); ok {
		e.ts = &t
	}
	e.phase = phaseOf(e.kind, format.Symbol(obj[fScopeCategory]))
	profile := subObject(obj[fCategoryProfile])
	if profile == nil {
		profile = subObject(obj[fProfile])
	}
	meta := subObject(obj[fMetadata])
	data := decodedData(obj[fData])
	e.scopeType = first(format.Symbol(obj[fCategory]), format.Symbol(obj[fScopeType]))
	if e.scopeType == "custom" && profile != nil {
		e.scopeType = first(format.String(profile["subtype"]), e.scopeType)
	}
	e.modelName = first(str(profile, "model_name"), format.Symbol(obj[fModelName]),
		str(meta, "model_name"), str(meta, "model"))
	e.toolCallID = first(str(profile, "tool_call_id"), format.String(obj[fToolCallID]),
		str(meta, "tool_call_id"))
	e.sessionID = str(meta, "session_id")
	e.parentSessionID = str(meta, "parent_session_id")
	e.payload = e.pick(obj[fInput], obj[fOutput], data)
	dataObj := subObject(data)
	if e.fromData && dataObj != nil {
		e.payload = withoutStatus(dataObj, e.payload)
	}
	e.status = first(format.Symbol(obj[fStatus]), str(meta, "status"), str(dataObj, "reason"))
	e.errRaw = obj[fError]
	if format.IsNull(e.errRaw) && dataObj != nil {
		e.errRaw = dataObj["error"]
	}
	if ds := subObject(obj[fDataSchema]); ds != nil {
		e.dataSchema = str(ds, "name")
		if v := str(ds, "version"); v != "" {
			e.dataSchema += "@" + v
		}
	} else if profile != nil {
		e.dataSchema = str(profile, "$schema")
	}
	return e, nil
}

// pick returns the event's payload: input/output in the NAT dialects, data
// in ATOF 0.1 (where input/output do not exist). A member present in the
// line is never nil.
func (e *event) pick(input, output, data json.RawMessage) json.RawMessage {
	raw := input
	if e.phase == phaseEnd {
		raw = output
	}
	if raw != nil {
		if format.IsNull(raw) {
			return nil
		}
		return raw
	}
	e.fromData = true
	return data
}

// withoutStatus drops the end-status members (reason, error) that ATOF 0.1
// puts in data, so that they are not read as the scope's output; a data
// object holding nothing else is no output at all.
func withoutStatus(data map[string]json.RawMessage, payload json.RawMessage) json.RawMessage {
	_, reason := data["reason"]
	_, errKey := data["error"]
	if !reason && !errKey {
		return payload
	}
	rest := format.Extra(data, "reason", "error")
	if rest == nil {
		return nil
	}
	return json.RawMessage(*rest)
}

func phaseOf(kind, scopeCategory string) phase {
	switch kind {
	case "ScopeStart":
		return phaseStart
	case "ScopeEnd":
		return phaseEnd
	case "scope":
		switch scopeCategory {
		case "start":
			return phaseStart
		case "end":
			return phaseEnd
		}
	case "mark", "Mark":
		return phaseMark
	case "StreamHeader", "StreamHeaderEvent":
		return phaseHeader
	}
	return phaseOther
}

// decodedData unwraps data that a producer JSON-encoded into a string
// (seen in Relay captures); other values are returned unchanged.
func decodedData(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return raw
	}
	s := format.String(raw)
	if len(s) > 0 && (s[0] == '{' || s[0] == '[') && jsonx.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return raw
}

func subObject(raw json.RawMessage) map[string]json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return format.SplitObject(raw) // a member of a validated line
}

func str(obj map[string]json.RawMessage, key string) string {
	if obj == nil {
		return ""
	}
	raw := bytes.TrimSpace(obj[key])
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	return format.String(raw)
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
