package openai

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// object is an item's members as the item handlers read them: a map split
// from the item (most layouts), or, when m is nil, the members a Codex line
// was scanned into, looked up by name in order. Hashing every line's names
// into a map, and clearing it, was a sixth of the Codex profile, for items
// of a handful of members looked up a few times each.
type object struct {
	m       map[string]jsonx.RawMessage
	members format.Members
}

func mapObject(m map[string]jsonx.RawMessage) object { return object{m: m} }

// get is the value of member name, the last one when repeated (as a split
// map keeps), or nil.
func (o object) get(name string) jsonx.RawMessage {
	if o.m != nil {
		return o.m[name]
	}
	return o.members.Get(name)
}

// lookup is get that also reports whether the object has member name.
func (o object) lookup(name string) (jsonx.RawMessage, bool) {
	if o.m != nil {
		raw, ok := o.m[name]
		return raw, ok
	}
	return o.members.Get(name), o.members.Has(name)
}

// toMap is the object as a map, for the few readers of whole objects
// (session metadata, untyped messages).
func (o object) toMap() map[string]jsonx.RawMessage {
	if o.m != nil {
		return o.m
	}
	return o.members.Map()
}

// extra is format.Extra(o, known...) with add (a member the mapping sets,
// nil for none) merged in as format.MergeExtra would.
func (o object) extra(add *format.Member, known ...string) *string {
	if o.m != nil {
		e := format.Extra(o.m, known...)
		if add != nil {
			e = format.MergeExtra(e, string(add.Name), add.Val)
		}
		return e
	}
	return o.members.Extra(add, known...)
}

// symbol is format.Symbol of a scanned value (no space around it), with
// the types and roles of most lines (and of chat messages and tool calls)
// matched as written rather than hashed into format's name cache.
func symbol(raw []byte) string {
	switch string(raw) {
	case `"response_item"`:
		return "response_item"
	case `"event_msg"`:
		return "event_msg"
	case `"message"`:
		return "message"
	case `"reasoning"`:
		return "reasoning"
	case `"function_call"`:
		return "function_call"
	case `"function_call_output"`:
		return "function_call_output"
	case `"custom_tool_call"`:
		return "custom_tool_call"
	case `"custom_tool_call_output"`:
		return "custom_tool_call_output"
	case `"token_count"`:
		return "token_count"
	case `"agent_message"`:
		return "agent_message"
	case `"agent_reasoning"`:
		return "agent_reasoning"
	case `"user_message"`:
		return "user_message"
	case `"user"`:
		return "user"
	case `"assistant"`:
		return "assistant"
	case `"system"`:
		return "system"
	case `"tool"`:
		return "tool"
	case `"function"`:
		return "function"
	}
	return format.Symbol(raw)
}
