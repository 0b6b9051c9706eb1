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
	line       int64
	obj        map[string]json.RawMessage
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

// decodeLine decodes one line. Events are kept until their session ends,
// so a valid object is copied once and split (its members alias the copy)
// rather than decoded value by value; anything else goes through the
// codec, for its values or its error.
func decodeLine(line int64, text []byte) (*event, error) {
	var obj map[string]json.RawMessage
	if jsonx.Valid(text) {
		obj = format.SplitObject(bytes.Clone(text))
	}
	if obj == nil {
		if err := jsonx.Unmarshal(text, &obj); err != nil {
			return nil, err
		}
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	e := &event{
		line:       line,
		obj:        obj,
		kind:       format.String(obj["kind"]),
		uuid:       format.String(obj["uuid"]),
		parentUUID: format.String(obj["parent_uuid"]),
		name:       format.String(obj["name"]),
	}
	if t, ok := format.Time(obj["timestamp"]); ok {
		e.ts = &t
	}
	e.phase = phaseOf(e.kind, format.String(obj["scope_category"]))
	profile := subObject(obj["category_profile"])
	if profile == nil {
		profile = subObject(obj["profile"])
	}
	meta := subObject(obj["metadata"])
	data := decodedData(obj["data"])
	e.scopeType = first(format.String(obj["category"]), format.String(obj["scope_type"]))
	if e.scopeType == "custom" && profile != nil {
		e.scopeType = first(format.String(profile["subtype"]), e.scopeType)
	}
	e.modelName = first(str(profile, "model_name"), format.String(obj["model_name"]),
		str(meta, "model_name"), str(meta, "model"))
	e.toolCallID = first(str(profile, "tool_call_id"), format.String(obj["tool_call_id"]),
		str(meta, "tool_call_id"))
	e.sessionID = str(meta, "session_id")
	e.parentSessionID = str(meta, "parent_session_id")
	e.payload = e.pick(obj, data)
	dataObj := subObject(data)
	if e.fromData && dataObj != nil {
		e.payload = withoutStatus(dataObj, e.payload)
	}
	e.status = first(format.String(obj["status"]), str(meta, "status"), str(dataObj, "reason"))
	e.errRaw = obj["error"]
	if format.IsNull(e.errRaw) && dataObj != nil {
		e.errRaw = dataObj["error"]
	}
	if ds := subObject(obj["data_schema"]); ds != nil {
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
// in ATOF 0.1 (where input/output do not exist).
func (e *event) pick(obj map[string]json.RawMessage, data json.RawMessage) json.RawMessage {
	key := "input"
	if e.phase == phaseEnd {
		key = "output"
	}
	if raw, ok := obj[key]; ok && !format.IsNull(raw) {
		return raw
	}
	if _, ok := obj[key]; ok {
		return nil
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
