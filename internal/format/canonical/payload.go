package canonical

import (
	"encoding/json"
	"strconv"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Payload field types.
type ptype int

const (
	pString ptype = iota // non-empty JSON string
	pCount               // JSON integer >= 0
	pNumber              // JSON number >= 0
	pBool
	pAny // any JSON value
)

func (t ptype) String() string {
	return [...]string{"a non-empty string", "an integer >= 0", "a number >= 0", "a boolean", "any JSON value"}[t]
}

type pfield struct {
	name     string
	typ      ptype
	required bool
	enum     []string
}

// kindSpec is the payload contract of one kind. Fields not listed are
// allowed (forward compatibility) and land in the extra columns.
type kindSpec struct {
	fields     []pfield
	toolCallID bool     // the envelope tool_call_id is required
	oneOf      []string // at least one of these payload fields is required
}

var tokenFields = []pfield{
	{name: "prompt_tokens", typ: pCount},
	{name: "completion_tokens", typ: pCount},
	{name: "cached_tokens", typ: pCount},
	{name: "reasoning_tokens", typ: pCount},
	{name: "cost_usd", typ: pNumber},
	{name: "llm_call_count", typ: pCount},
}

var runStatuses = []string{
	model.StatusCompleted, model.StatusError, model.StatusTruncated, model.StatusCancelled, model.StatusUnknown,
}

var specs = map[string]kindSpec{
	KindRunStart: {fields: []pfield{
		{name: "agent_name", typ: pString},
		{name: "agent_version", typ: pString},
		{name: "agent_model_name", typ: pString},
		{name: "trajectory_id", typ: pString},
		{name: "parent_session_id", typ: pString},
	}},
	KindRunEnd: {fields: []pfield{
		{name: "status", typ: pString, required: true, enum: runStatuses},
		{name: "prompt_tokens", typ: pCount},
		{name: "completion_tokens", typ: pCount},
		{name: "cached_tokens", typ: pCount},
		{name: "cost_usd", typ: pNumber},
		{name: "step_count", typ: pCount},
	}},
	KindMessage: {fields: append([]pfield{
		{name: "source", typ: pString, required: true,
			enum: []string{model.SourceSystem, model.SourceUser, model.SourceAgent, model.SourceTool}},
		{name: "content", typ: pAny},
		{name: "message_kind", typ: pString},
		{name: "reasoning", typ: pString},
		{name: "model_name", typ: pString},
		{name: "observation", typ: pAny},
		{name: "is_copied_context", typ: pBool},
	}, tokenFields...)},
	KindToolCall: {toolCallID: true, fields: []pfield{
		{name: "name", typ: pString, required: true},
		{name: "arguments", typ: pAny},
	}},
	KindToolResult: {toolCallID: true, fields: []pfield{
		{name: "output", typ: pAny},
		{name: "status", typ: pString, enum: []string{model.ResultOK, model.ResultError}},
		{name: "error", typ: pAny},
	}},
	KindUsage: {
		fields: append([]pfield{{name: "model_name", typ: pString}}, tokenFields...),
		oneOf:  []string{"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost_usd"},
	},
	KindSubagentLink: {
		fields: []pfield{
			{name: "session_id", typ: pString},
			{name: "trajectory_id", typ: pString},
			{name: "trajectory_path", typ: pString},
			{name: "child_session_id", typ: pString},
			{name: "embedded", typ: pBool},
		},
		oneOf: []string{"session_id", "trajectory_id", "trajectory_path", "child_session_id"},
	},
	KindContinuationLink:  {fields: []pfield{{name: "ref", typ: pString, required: true}}},
	KindContextCompaction: {},
	KindMark:              {fields: []pfield{{name: "name", typ: pString}}},
	KindRaw:               {},
}

// knownPayloadKeys lists the payload fields of kind that map to columns.
func knownPayloadKeys(kind string) []string {
	spec := specs[kind]
	keys := make([]string, len(spec.fields))
	for i, f := range spec.fields {
		keys[i] = f.name
	}
	return keys
}

func checkPayload(e *model.Event, payload map[string]json.RawMessage) error {
	spec := specs[e.Kind]
	if spec.toolCallID && e.ToolCallID == nil {
		return fieldErr(fToolCallID, "is required for kind %s", e.Kind)
	}
	for _, f := range spec.fields {
		raw, ok := payload[f.name]
		if !ok {
			if f.required {
				return fieldErr("payload."+f.name, "is required for kind %s", e.Kind)
			}
			continue
		}
		if err := checkValue(raw, f); err != nil {
			return err
		}
	}
	if len(spec.oneOf) == 0 {
		return nil
	}
	for _, name := range spec.oneOf {
		if _, ok := payload[name]; ok {
			return nil
		}
	}
	return fieldErr(fPayload, "kind %s needs at least one of %v", e.Kind, spec.oneOf)
}

func checkValue(raw json.RawMessage, f pfield) error {
	name := "payload." + f.name
	ok := true
	switch f.typ {
	case pString:
		var s string
		s, ok = jsonString(raw)
		ok = ok && s != ""
		if ok && len(f.enum) > 0 && !oneOf(s, f.enum) {
			return fieldErr(name, "must be one of %v, got %q", f.enum, s)
		}
	case pCount:
		v, err := strconv.ParseInt(string(raw), 10, 64)
		ok = err == nil && v >= 0
	case pNumber:
		v, err := strconv.ParseFloat(string(raw), 64)
		ok = err == nil && v >= 0
	case pBool:
		ok = string(raw) == "true" || string(raw) == "false"
	}
	if !ok {
		return fieldErr(name, "must be %s", f.typ)
	}
	return nil
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}
