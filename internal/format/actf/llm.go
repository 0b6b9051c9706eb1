package actf

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
)

// message is one chat message decoded from an LLM payload, whatever the
// provider shape (OpenAI chat, Anthropic messages, Gemini contents).
type message struct {
	role       string
	text       *string
	kind       string
	reasoning  *string
	toolCallID string
	calls      []call
	// fingerprint identifies the message for history-prefix comparison.
	fingerprint string
}

type call struct {
	id   string
	name string
	args json.RawMessage
}

// inputMessages decodes an llm scope's input as chat messages. ok is false
// when the payload has no recognizable message list.
func inputMessages(raw json.RawMessage) ([]message, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '[' {
		return messageList(raw)
	}
	obj := subObject(raw)
	if obj == nil {
		return nil, false
	}
	if contents, ok := obj["contents"]; ok { // Gemini generateContent
		msgs, ok := messageList(contents)
		if sys := geminiSystem(obj["systemInstruction"]); sys != nil && ok {
			msgs = append([]message{*sys}, msgs...)
		}
		return msgs, ok
	}
	msgs, ok := messageList(obj["messages"])
	if !ok {
		return nil, false
	}
	if !format.IsNull(obj["system"]) { // Anthropic keeps the system prompt apart
		sys := contentMessage("system", obj["system"])
		msgs = append([]message{sys}, msgs...)
	}
	return msgs, true
}

func geminiSystem(raw json.RawMessage) *message {
	obj := subObject(raw)
	if obj == nil {
		return nil
	}
	m := contentMessage("system", obj["parts"])
	return &m
}

func messageList(raw json.RawMessage) ([]message, bool) {
	items, ok := format.Array(raw)
	if !ok {
		return nil, false
	}
	msgs := make([]message, 0, len(items))
	for _, item := range items {
		obj := subObject(item)
		if obj == nil || (format.IsNull(obj["role"]) && format.IsNull(obj["parts"])) {
			return nil, false
		}
		msgs = append(msgs, decodeMessage(obj, item))
	}
	return msgs, true
}

func decodeMessage(obj map[string]json.RawMessage, raw json.RawMessage) message {
	role := format.String(obj["role"])
	content := obj["content"]
	if _, ok := obj["parts"]; ok {
		content = obj["parts"]
	}
	m := contentMessage(role, content)
	m.toolCallID = first(format.String(obj["tool_call_id"]), format.String(obj["tool_use_id"]))
	m.calls = append(m.calls, openAICalls(obj["tool_calls"])...)
	if r := first(format.String(obj["reasoning_content"]), format.String(obj["reasoning"])); r != "" && m.reasoning == nil {
		m.reasoning = &r
	}
	m.fingerprint = string(format.CompactJSON(raw))
	return m
}

// contentMessage decodes a content value: a string, text parts, or
// provider blocks (Anthropic text/thinking/tool_use/tool_result, Gemini
// text/functionCall/functionResponse) of which the tool and thinking blocks
// become calls and reasoning.
func contentMessage(role string, content json.RawMessage) message {
	m := message{role: role, kind: format.KindText}
	var blocks []map[string]json.RawMessage
	isBlocks := bytes.HasPrefix(bytes.TrimSpace(content), []byte("["))
	if isBlocks {
		blocks, isBlocks = format.ObjectArray(content)
	}
	if isBlocks {
		if texts, ok := splitBlocks(&m, blocks); ok {
			if len(texts) > 0 {
				s := strings.Join(texts, "\n")
				m.text = &s
			}
			return m
		}
		m.calls, m.reasoning, m.toolCallID = nil, nil, ""
	}
	if text, kind, ok := format.Content(content); ok {
		m.text, m.kind = &text, kind
	}
	return m
}

// splitBlocks sorts content blocks into m; ok is false when a block is of a
// kind that only the generic JSON flattening can keep (images, documents).
func splitBlocks(m *message, blocks []map[string]json.RawMessage) (texts []string, ok bool) {
	var reasoning []string
	for _, b := range blocks {
		switch typ := format.String(b["type"]); {
		case typ == "tool_use":
			m.calls = append(m.calls, call{id: format.String(b["id"]), name: format.String(b["name"]), args: b["input"]})
		case typ == "thinking" || typ == "reasoning":
			reasoning = append(reasoning, first(format.String(b["thinking"]), format.String(b["text"])))
		case typ == "tool_result":
			m.toolCallID = format.String(b["tool_use_id"])
			if text, _, ok := format.Content(b["content"]); ok {
				texts = append(texts, text)
			}
		case b["functionCall"] != nil:
			fc := subObject(b["functionCall"])
			m.calls = append(m.calls, call{id: strOf(fc, "id"), name: strOf(fc, "name"), args: fc["args"]})
		case b["functionResponse"] != nil:
			fr := subObject(b["functionResponse"])
			m.toolCallID = strOf(fr, "id")
			texts = append(texts, string(format.CompactJSON(fr["response"])))
		case (typ == "" || typ == "text" || typ == "input_text" || typ == "output_text") && b["text"] != nil:
			texts = append(texts, format.String(b["text"]))
		default:
			return nil, false
		}
	}
	if len(reasoning) > 0 {
		r := strings.Join(reasoning, "\n")
		m.reasoning = &r
	}
	return texts, true
}

// openAICalls decodes tool_calls in the OpenAI shape ({id, function:{name,
// arguments}}) or the flattened NAT draft shape ({id, name, arguments}).
func openAICalls(raw json.RawMessage) []call {
	items, ok := format.ObjectArray(raw)
	if format.IsNull(raw) || !ok {
		return nil
	}
	calls := make([]call, 0, len(items))
	for _, it := range items {
		c := call{id: format.String(it["id"]), name: format.String(it["name"]), args: it["arguments"]}
		if fn := subObject(it["function"]); fn != nil {
			c.name = first(strOf(fn, "name"), c.name)
			c.args = fn["arguments"]
		}
		if c.args == nil {
			c.args = it["input"]
		}
		calls = append(calls, c)
	}
	return calls
}

// agentOutput decodes an llm scope's output as the assistant message, and
// returns the usage object found next to it. ok is false when the output is
// not a recognizable message.
func agentOutput(raw json.RawMessage) (m message, usage map[string]json.RawMessage, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		s := format.String(raw)
		return message{role: "assistant", text: &s, kind: format.KindText}, nil, true
	}
	obj := subObject(raw)
	if obj == nil {
		return message{}, nil, false
	}
	usage = subObject(obj["usage"])
	if usage == nil {
		usage = subObject(obj["usageMetadata"])
	}
	switch {
	case obj["choices"] != nil: // a whole chat completion
		choices, ok := format.ObjectArray(obj["choices"])
		if !ok || len(choices) == 0 || subObject(choices[0]["message"]) == nil {
			return message{}, usage, false
		}
		return decodeMessage(subObject(choices[0]["message"]), choices[0]["message"]), usage, true
	case obj["candidates"] != nil: // Gemini
		cands, ok := format.ObjectArray(obj["candidates"])
		if !ok || len(cands) == 0 || subObject(cands[0]["content"]) == nil {
			return message{}, usage, false
		}
		return decodeMessage(subObject(cands[0]["content"]), cands[0]["content"]), usage, true
	case subObject(obj["message"]) != nil:
		return decodeMessage(subObject(obj["message"]), obj["message"]), usage, true
	case obj["content"] != nil || obj["tool_calls"] != nil:
		return decodeMessage(obj, raw), usage, true
	case obj["response"] != nil || obj["text"] != nil: // Relay's {"response": "..."}
		return contentMessage("assistant", first2(obj["response"], obj["text"])), usage, true
	}
	return message{}, usage, false
}

func first2(a, b json.RawMessage) json.RawMessage {
	if a != nil {
		return a
	}
	return b
}

// tokens is a usage record in column terms.
type tokens struct {
	prompt, completion, cached, reasoning *int64
}

// usageTokens reads OpenAI (prompt_tokens, ..._details), Anthropic
// (input_tokens + cache tokens, which OpenAI counts inside prompt_tokens)
// and Gemini (promptTokenCount, ...) usage objects.
func usageTokens(u map[string]json.RawMessage) tokens {
	var t tokens
	if u == nil {
		return t
	}
	t.prompt = count(u, "prompt_tokens", "promptTokenCount")
	t.completion = count(u, "completion_tokens", "output_tokens", "candidatesTokenCount")
	t.cached = count(u, "cached_tokens", "cache_read_input_tokens", "cachedContentTokenCount")
	if d := subObject(u["prompt_tokens_details"]); d != nil && t.cached == nil {
		t.cached = count(d, "cached_tokens")
	}
	if d := subObject(u["completion_tokens_details"]); d != nil {
		t.reasoning = count(d, "reasoning_tokens")
	}
	if t.reasoning == nil {
		t.reasoning = count(u, "reasoning_tokens", "thoughtsTokenCount")
	}
	if in := count(u, "input_tokens"); in != nil && t.prompt == nil {
		total := *in
		for _, k := range []string{"cache_read_input_tokens", "cache_creation_input_tokens"} {
			if v := count(u, k); v != nil {
				total += *v
			}
		}
		t.prompt = &total
	}
	return t
}

func count(obj map[string]json.RawMessage, keys ...string) *int64 {
	for _, k := range keys {
		if v, ok := format.Int(obj[k]); ok && v >= 0 {
			return &v
		}
	}
	return nil
}
