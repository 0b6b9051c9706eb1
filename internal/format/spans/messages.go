package spans

import (
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// msg is one message of a generation's input or output, whichever of the
// dialects Langfuse stored it in.
type msg struct {
	role    string
	texts   []string
	calls   []Call
	results []result
}

type result struct{ id, text string }

// Decoded is raw with one level of JSON-in-a-string undone: Langfuse keeps
// what OpenTelemetry attributes carried, often JSON text in a string.
func Decoded(raw jsonx.RawMessage) jsonx.RawMessage {
	raw = format.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return raw
	}
	s := strings.TrimSpace(format.String(raw))
	if len(s) > 0 && (s[0] == '{' || s[0] == '[') && jsonx.Valid([]byte(s)) {
		return jsonx.RawMessage(s)
	}
	return raw
}

// messages reads a generation's input or output: a message, a list of
// messages, {messages: [...]}, or an OpenAI Responses response ({output:
// [items]}). Three message dialects are read: Chat Completions and
// Anthropic Messages ({role, content} with tool_calls or tool_use /
// tool_result blocks), the OpenTelemetry GenAI parts ({role, parts: [text,
// tool_call, tool_call_response]}), and Responses items (message,
// function_call, function_call_output). A bare string is one message of
// the given role.
func messages(raw jsonx.RawMessage, role string) []msg {
	raw = Decoded(raw)
	if format.IsNull(raw) || len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '"':
		if s := format.String(raw); s != "" {
			return []msg{{role: role, texts: []string{s}}}
		}
		return nil
	case '[':
		elems, _ := format.SplitArray(raw)
		var out []msg
		for _, e := range elems {
			out = append(out, messages(e, role)...)
		}
		return out
	case '{':
		obj := format.SplitObject(raw)
		if list, ok := obj["messages"]; ok {
			return messages(list, role)
		}
		if out, ok := obj["output"]; ok && format.String(obj["object"]) == "response" {
			return messages(out, "assistant")
		}
		if m, ok := one(obj, role); ok {
			return []msg{m}
		}
	}
	return nil
}

// one reads a single message or Responses item.
func one(obj map[string]jsonx.RawMessage, role string) (msg, bool) {
	if r := format.String(obj["role"]); r != "" {
		role = r
	}
	m := msg{role: role}
	switch format.String(obj["type"]) {
	case "function_call":
		m.role = "assistant"
		m.calls = append(m.calls, Call{format.String(obj["call_id"]), format.String(obj["name"]), ArgText(obj["arguments"])})
		return m, true
	case "function_call_output":
		m.role = "tool"
		m.results = append(m.results, result{format.String(obj["call_id"]), text(obj["output"])})
		return m, true
	}
	_, hasContent := obj["content"]
	parts, hasParts := format.SplitArray(obj["parts"])
	if !hasContent && !hasParts && format.String(obj["role"]) == "" {
		return m, false
	}
	for _, p := range parts {
		m.part(format.SplitObject(p))
	}
	content := Decoded(obj["content"])
	if blocks, ok := format.SplitArray(content); ok {
		for _, p := range blocks {
			m.part(format.SplitObject(p))
		}
	} else if t := text(content); t != "" {
		m.texts = append(m.texts, t)
	}
	calls, _ := format.SplitArray(obj["tool_calls"])
	for _, c := range calls {
		co := format.SplitObject(c)
		fn := format.SplitObject(co["function"])
		m.calls = append(m.calls, Call{format.String(co["id"]), format.String(fn["name"]), ArgText(fn["arguments"])})
	}
	if m.role == "tool" && len(m.results) == 0 {
		m.results = append(m.results, result{format.String(obj["tool_call_id"]), strings.Join(m.texts, "\n")})
	}
	return m, true
}

// part reads one content block or part.
func (m *msg) part(p map[string]jsonx.RawMessage) {
	if p == nil {
		return
	}
	switch format.String(p["type"]) {
	case "text", "output_text", "input_text", "":
		if t := format.String(p["text"]); t != "" {
			m.texts = append(m.texts, t)
		} else if t := format.String(p["content"]); t != "" {
			m.texts = append(m.texts, t)
		}
	case "tool_use": // Anthropic
		m.calls = append(m.calls, Call{format.String(p["id"]), format.String(p["name"]), ArgText(p["input"])})
	case "tool_call": // OpenTelemetry GenAI
		m.calls = append(m.calls, Call{format.String(p["id"]), format.String(p["name"]), ArgText(p["arguments"])})
	case "tool_result": // Anthropic
		m.results = append(m.results, result{format.String(p["tool_use_id"]), text(p["content"])})
	case "tool_call_response": // OpenTelemetry GenAI
		m.results = append(m.results, result{format.String(p["id"]), text(p["response"])})
	}
}

// text is a content value as text: a string, text blocks joined, anything
// else compact JSON.
func text(raw jsonx.RawMessage) string {
	raw = Decoded(raw)
	if format.IsNull(raw) || len(raw) == 0 {
		return ""
	}
	if blocks, ok := format.SplitArray(raw); ok {
		var texts []string
		for _, b := range blocks {
			if t := format.String(format.SplitObject(b)["text"]); t != "" {
				texts = append(texts, t)
			}
		}
		if len(texts) == len(blocks) {
			return strings.Join(texts, "\n")
		}
	}
	if obj := format.SplitObject(raw); obj != nil {
		if blocks, ok := format.SplitArray(obj["content"]); ok && len(obj) == 1 {
			return text(jsonx.RawMessage(format.JoinArray(blocks)))
		}
	}
	if raw[0] == '"' {
		return format.String(raw)
	}
	return string(format.CompactJSON(raw))
}

// ArgText is a call's arguments as text: a string as written, anything
// else compact JSON.
func ArgText(raw jsonx.RawMessage) string {
	if t, _ := format.ArgumentsText(raw); t != nil {
		return *t
	}
	return ""
}
