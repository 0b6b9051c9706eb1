package actf

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
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
	// raw is the message of an input list as written, and fields its
	// members; pending until it is decoded, as only the messages after the
	// history an llm input repeats need to be.
	raw     json.RawMessage
	fields  messageFields
	pending bool
	// fingerprint identifies the message for history-prefix comparison:
	// its compact JSON (which may alias the event's line), made on demand.
	fingerprint   []byte
	fingerprinted bool
}

// decode decodes a message of an input list.
func (m *message) decode() {
	if m.pending {
		raw, fp, done := m.raw, m.fingerprint, m.fingerprinted
		*m = messageOf(&m.fields)
		m.raw, m.fingerprint, m.fingerprinted = raw, fp, done
	}
}

// same reports whether two input messages have the same fingerprint; the
// same text (history repeated as it was written) needs no compacting.
func same(a, b *message) bool {
	return bytes.Equal(a.raw, b.raw) || bytes.Equal(a.fp(), b.fp())
}

func (m *message) fp() []byte {
	if !m.fingerprinted && m.raw != nil {
		m.fingerprint = jsonx.CompactValid(format.TrimSpace(m.raw))
	}
	m.fingerprinted = true
	return m.fingerprint
}

type call struct {
	id   string
	name string
	args json.RawMessage
}

// Members of the payloads and messages the mapping reads.
var (
	inputKeys    = []string{"contents", "systemInstruction", "messages", "system"}
	partsKey     = []string{"parts"}
	messageKey   = []string{"message"}
	messageKeys  = []string{"role", "content", "parts", "tool_call_id", "tool_use_id", "tool_calls", "reasoning_content", "reasoning"}
	callKeys     = []string{"id", "name", "arguments", "function", "input"}
	functionKeys = []string{"name", "arguments"}
	// outputKeys are the members of an llm output: a message's (an output
	// can be one, read in the same pass) and those of the provider shapes.
	outputKeys = append(messageKeys[:numMessageFields:numMessageFields],
		"usage", "usageMetadata", "choices", "candidates", "message", "response", "text")
)

// Members of a message (messageKeys), by index.
const (
	mRole = iota
	mContent
	mParts
	mToolCallID
	mToolUseID
	mToolCalls
	mReasoningContent
	mReasoning
	numMessageFields
)

// messageFields are the members of a message that messageOf reads.
type messageFields [numMessageFields][]byte

// Members of an llm output beyond a message's (outputKeys), by index.
const (
	oUsage = numMessageFields + iota
	oUsageMetadata
	oChoices
	oCandidates
	oMessage
	oResponse
	oText
	numOutputFields
)

// inputMessages decodes an llm scope's input as chat messages. ok is false
// when the payload has no recognizable message list. The messages of the
// list are only checked; decode decodes one.
func inputMessages(raw json.RawMessage) ([]message, bool) {
	raw = format.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '[' {
		return messageList(raw)
	}
	var f [4][]byte
	if !subFields(raw, inputKeys, f[:]) {
		return nil, false
	}
	if f[0] != nil { // Gemini generateContent
		msgs, ok := messageList(f[0])
		if sys := geminiSystem(f[1]); sys != nil && ok {
			msgs = append([]message{*sys}, msgs...)
		}
		return msgs, ok
	}
	msgs, ok := messageList(f[2])
	if !ok {
		return nil, false
	}
	if !format.IsNull(f[3]) { // Anthropic keeps the system prompt apart
		sys := contentMessage("system", f[3])
		msgs = append([]message{sys}, msgs...)
	}
	return msgs, true
}

func geminiSystem(raw json.RawMessage) *message {
	var parts [1][]byte
	if !subFields(raw, partsKey, parts[:]) {
		return nil
	}
	m := contentMessage("system", parts[0])
	return &m
}

func messageList(raw json.RawMessage) ([]message, bool) {
	var buf [arrayBuf][]byte
	items, ok := array(raw, buf[:0])
	if !ok {
		return nil, false
	}
	msgs := make([]message, len(items))
	for i, item := range items {
		m := &msgs[i]
		if !subFields(item, messageKeys, m.fields[:]) || (format.IsNull(m.fields[mRole]) && format.IsNull(m.fields[mParts])) {
			return nil, false
		}
		m.raw, m.pending = item, true
	}
	return msgs, true
}

// array is format.Array for a member of a validated line (or an absent
// one), without validating it again. The elements are appended to buf:
// callers that only loop over them pass a buffer on their stack, where
// each array was an allocation or more (nil when absent or null).
func array(raw json.RawMessage, buf [][]byte) ([][]byte, bool) {
	if len(format.TrimSpace(raw)) == 0 {
		return nil, false
	}
	if format.IsNull(raw) {
		return nil, true
	}
	elems, ok := format.AppendElements(buf, raw)
	if len(elems) == 0 {
		elems = nil // as SplitArray leaves an empty array
	}
	return elems, ok
}

// arrayBuf is the size of the stack buffers passed to array: most arrays
// of a payload (messages, tool calls) are short.
const arrayBuf = 8

// objectArray is format.ObjectArray for a member of a validated line.
func objectArray(raw json.RawMessage) ([]map[string]json.RawMessage, bool) {
	elems, ok := array(raw, nil)
	if !ok {
		return nil, false
	}
	var out []map[string]json.RawMessage
	if elems != nil {
		out = make([]map[string]json.RawMessage, len(elems))
	}
	for i, e := range elems {
		if out[i] = format.SplitObject(e); out[i] == nil && !format.IsNull(e) {
			return nil, false
		}
	}
	return out, true
}

// isObject reports whether the member raw is an object (subObject non-nil).
func isObject(raw json.RawMessage) bool {
	raw = format.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func decodeMessage(raw json.RawMessage) message {
	var f messageFields
	subFields(raw, messageKeys, f[:])
	return messageOf(&f)
}

// messageOf decodes a message from its members.
func messageOf(f *messageFields) message {
	role := format.Symbol(f[mRole])
	content := f[mContent]
	if f[mParts] != nil {
		content = f[mParts]
	}
	m := contentMessage(role, content)
	m.toolCallID = first(format.String(f[mToolCallID]), format.String(f[mToolUseID]))
	if calls := openAICalls(f[mToolCalls]); len(m.calls) == 0 {
		if len(calls) > 0 {
			m.calls = calls // without a copy
		}
	} else {
		m.calls = append(m.calls, calls...)
	}
	if r := first(format.String(f[mReasoningContent]), format.String(f[mReasoning])); r != "" && m.reasoning == nil {
		m.reasoning = boxed(r)
	}
	return m
}

// contentMessage decodes a content value: a string, text parts, or
// provider blocks (Anthropic text/thinking/tool_use/tool_result, Gemini
// text/functionCall/functionResponse) of which the tool and thinking blocks
// become calls and reasoning.
func contentMessage(role string, content json.RawMessage) message {
	m := message{role: role, kind: format.KindText}
	var blocks []map[string]json.RawMessage
	isBlocks := bytes.HasPrefix(format.TrimSpace(content), []byte("["))
	if isBlocks {
		blocks, isBlocks = objectArray(content)
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
		m.text, m.kind = boxed(text), kind
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
	var buf [arrayBuf][]byte
	items, ok := array(raw, buf[:0])
	if format.IsNull(raw) || !ok {
		return nil
	}
	calls := make([]call, 0, len(items))
	for _, it := range items {
		var f [5][]byte
		if !subFields(it, callKeys, f[:]) && !format.IsNull(it) {
			return nil // not an array of objects
		}
		c := call{id: format.String(f[0]), name: format.Symbol(f[1]), args: f[2]}
		var fn [2][]byte
		if subFields(f[3], functionKeys, fn[:]) {
			c.name = first(symbolStr(fn[0]), c.name)
			c.args = fn[1]
		}
		if c.args == nil {
			c.args = f[4]
		}
		calls = append(calls, c)
	}
	return calls
}

// agentOutput decodes an llm scope's output as the assistant message, and
// returns the usage object found next to it. ok is false when the output is
// not a recognizable message.
func agentOutput(raw json.RawMessage) (m message, usage map[string]json.RawMessage, ok bool) {
	raw = format.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		s := format.String(raw)
		return message{role: "assistant", text: &s, kind: format.KindText}, nil, true
	}
	var f [numOutputFields][]byte
	if !subFields(raw, outputKeys, f[:]) {
		return message{}, nil, false
	}
	usage = subObject(f[oUsage])
	if usage == nil {
		usage = subObject(f[oUsageMetadata])
	}
	switch {
	case f[oChoices] != nil: // a whole chat completion
		choices, ok := objectArray(f[oChoices])
		if !ok || len(choices) == 0 || !isObject(choices[0]["message"]) {
			return message{}, usage, false
		}
		return decodeMessage(choices[0]["message"]), usage, true
	case f[oCandidates] != nil: // Gemini
		cands, ok := objectArray(f[oCandidates])
		if !ok || len(cands) == 0 || !isObject(cands[0]["content"]) {
			return message{}, usage, false
		}
		return decodeMessage(cands[0]["content"]), usage, true
	case isObject(f[oMessage]):
		return decodeMessage(f[oMessage]), usage, true
	case f[mContent] != nil || f[mToolCalls] != nil: // the output is the message
		return messageOf((*messageFields)(f[:numMessageFields])), usage, true
	case f[oResponse] != nil || f[oText] != nil: // Relay's {"response": "..."}
		return contentMessage("assistant", first2(f[oResponse], f[oText])), usage, true
	}
	return message{}, usage, false
}

// boxed is &s, allocated only where it is called: a variable whose
// address is taken moves to the heap where it is declared, which in an if
// statement's init is before the condition is tested.
func boxed(s string) *string {
	p := new(string)
	*p = s
	return p
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
