package openai

import (
	"strings"

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
	members []member
}

func mapObject(m map[string]jsonx.RawMessage) object { return object{m: m} }

// get is the value of member name, the last one when repeated (as a split
// map keeps), or nil.
func (o object) get(name string) jsonx.RawMessage {
	if o.m != nil {
		return o.m[name]
	}
	for i := len(o.members) - 1; i >= 0; i-- {
		if string(o.members[i].name) == name {
			return o.members[i].val
		}
	}
	return nil
}

// toMap is the object as a map, for the few readers of whole objects
// (session metadata, untyped messages).
func (o object) toMap() map[string]jsonx.RawMessage {
	if o.m != nil {
		return o.m
	}
	m := make(map[string]jsonx.RawMessage, len(o.members))
	for _, mb := range o.members {
		m[string(mb.name)] = mb.val
	}
	return m
}

// extra is format.Extra(o, known...) with add (a member the mapping sets,
// nil for none) merged in as format.MergeExtra would.
func (o object) extra(add *member, known ...string) *string {
	if o.m != nil {
		e := format.Extra(o.m, known...)
		if add != nil {
			e = format.MergeExtra(e, string(add.name), add.val)
		}
		return e
	}
	return membersExtra(o.members, known, add)
}

// membersExtra is format.ExtraNamed of members read from a validated line
// (values compacted without another check), written from the list: the
// names not known, sorted, a repeated one with its last value (add last of
// all, so that it wins).
func membersExtra(members []member, known []string, add *member) *string {
	var buf [16]member // most items fit: the list stays off the heap
	keep := buf[:0]
	for _, mb := range members {
		if !isKnown(known, mb.name) {
			keep = append(keep, mb)
		}
	}
	if add != nil {
		keep = append(keep, *add)
	}
	if len(keep) == 0 {
		return nil
	}
	// A stable insertion sort: items have a handful of members, and
	// slices.SortStableFunc moved keep (and its func) to the heap.
	for i := 1; i < len(keep); i++ {
		for j := i; j > 0 && string(keep[j].name) < string(keep[j-1].name); j-- {
			keep[j], keep[j-1] = keep[j-1], keep[j]
		}
	}
	size := 2
	for _, mb := range keep {
		size += len(mb.name) + len(mb.val) + 4
	}
	var b strings.Builder // its String is the text, without a copy
	b.Grow(size)
	b.WriteByte('{')
	var quoted [64]byte
	for i, mb := range keep {
		if i+1 < len(keep) && string(keep[i+1].name) == string(mb.name) {
			continue // a later value of the same name replaces this one
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(jsonx.AppendQuoted(quoted[:0], string(mb.name)))
		b.WriteByte(':')
		b.Write(jsonx.CompactValid(mb.val))
	}
	b.WriteByte('}')
	s := b.String()
	return &s
}

func isKnown(known []string, name []byte) bool {
	for _, k := range known {
		if string(name) == k {
			return true
		}
	}
	return false
}

// symbol is format.Symbol of a scanned value (no space around it), with
// the types and roles of most lines matched as written rather than hashed
// into format's name cache.
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
	}
	return format.Symbol(raw)
}
