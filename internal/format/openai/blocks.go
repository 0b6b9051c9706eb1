package openai

import (
	"bytes"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Content blocks of other producers inside this message list. Chats
// exported from Claude-based agents keep it but carry tool use in Anthropic
// Messages blocks (tool_use in assistant content, tool_result in the next
// user message, thinking); Gemini chats (role user/model) carry `parts`
// (text, thought, functionCall, functionResponse) instead of content;
// LLaMA-Factory writes content parts {type, value} (text, reasoning,
// tool_call); fast-agent histories keep MCP tools/call requests and their
// results in maps keyed by call id (tool_calls on the assistant message,
// tool_results on the next user message) and reasoning in channels. Each
// message stays one step.
type blocks struct {
	consumed   []string // message keys the blocks mapped
	text, kind string
	hasText    bool
	thinking   []string
	calls      []blockCall
	results    []blockResult
	channels   jsonx.RawMessage // fast-agent channels other than reasoning
	warnings   []blockWarning
}

type blockCall struct {
	id, name, key string // key: what its result is matched by
	args          jsonx.RawMessage
	extra         *string
}

type blockResult struct {
	key, link string
	text      string
	isError   bool
	extra     *string // what the result carries besides its content
}

// blockWarning is a deviation found in the blocks, located inside the
// message.
type blockWarning struct {
	msg   string
	parts []any
}

// messageBlocks reads a message's Gemini parts, content blocks or parts,
// and fast-agent maps, or returns nil when it has none of them.
func messageBlocks(m object) *blocks {
	if parts, ok := format.SplitArray(m.get("parts")); ok && format.IsNull(m.get("content")) {
		return geminiParts(parts)
	}
	var bl *blocks
	if elems, ok := format.SplitArray(m.get("content")); ok {
		if bl = valueParts(elems); bl == nil {
			bl = anthropicBlocks(elems)
		}
	}
	return fastAgentMaps(bl, m)
}

// anthropicBlocks returns the blocks of a content array that holds at least
// one tool_use, tool_result or thinking block, and nil for other content.
func anthropicBlocks(elems [][]byte) *blocks {
	var b blocks
	var rest [][]byte
	for _, e := range elems {
		blk := format.SplitObject(e)
		switch format.String(blk["type"]) {
		case "tool_use":
			id := format.String(blk["id"])
			b.calls = append(b.calls, blockCall{id: id, name: format.String(blk["name"]), key: id, args: blk["input"],
				extra: format.Extra(blk, "type", "id", "name", "input")})
		case "tool_result":
			text, _, _ := content(blk["content"])
			isErr, _ := format.Bool(blk["is_error"])
			b.results = append(b.results, blockResult{key: format.String(blk["tool_use_id"]), link: model.LinkByID, text: text, isError: isErr})
		case "thinking":
			b.thinking = append(b.thinking, format.String(blk["thinking"]))
		default:
			rest = append(rest, e)
		}
	}
	if len(b.calls)+len(b.results)+len(b.thinking) == 0 {
		return nil
	}
	if len(rest) > 0 {
		b.text, b.kind, b.hasText = content(format.JoinArray(rest))
	}
	return &b
}

// valueParts reads LLaMA-Factory content parts, every one {type, value}
// with a string value: text, reasoning, tool_call (value: {"name",
// "arguments"} JSON text, linked to the next tool message by order) and
// media (image_url, video_url, audio_url). It returns nil for content of
// another shape.
func valueParts(elems [][]byte) *blocks {
	if len(elems) == 0 || !bytes.Contains(elems[0], []byte(`"value"`)) {
		return nil // most content is not: spare the split
	}
	b := blocks{kind: format.KindText}
	var texts []string
	var kept [][]byte // the parts that are message content, for media
	media := false
	for i, e := range elems {
		p := format.SplitObject(e)
		typ, okType := stringValue(p["type"])
		value, okValue := stringValue(p["value"])
		if !okType || !okValue {
			return nil
		}
		switch typ {
		case "reasoning":
			b.thinking = append(b.thinking, value)
			continue
		case "tool_call":
			if c, ok := textCall([]byte(value)); ok {
				b.calls = append(b.calls, c)
				continue
			}
			b.warnings = append(b.warnings, blockWarning{"tool_call part is not {name, arguments} JSON; kept as text", []any{"content", i}})
		case "text":
		default:
			media = true
		}
		texts = append(texts, value)
		kept = append(kept, e)
	}
	switch {
	case media:
		b.text, b.kind, b.hasText = content(format.JoinArray(kept))
	case len(texts) > 0:
		b.text, b.hasText = strings.Join(texts, "\n"), true
	}
	return &b
}

// fastAgentMaps adds what a fast-agent message keeps beside its content:
// tool_calls {id: {method: "tools/call", params: {name, arguments}}},
// tool_results {id: {content, isError}} (MCP CallToolResult) and channels
// (reasoning → the step's reasoning; the others, such as timing, → extra).
func fastAgentMaps(bl *blocks, m object) *blocks {
	calls, results, chans := objectValue(m.get("tool_calls")), objectValue(m.get("tool_results")), objectValue(m.get("channels"))
	if calls == nil && results == nil && chans == nil {
		return bl
	}
	channels := format.SplitObject(chans)
	if bl == nil {
		bl = &blocks{}
		text, kind, ok := content(m.get("content"))
		bl.text, bl.kind, bl.hasText = text, kind, ok && text != ""
	}
	if calls != nil {
		bl.consumed = append(bl.consumed, "tool_calls")
		format.EachMember(calls, func(id string, raw []byte) {
			req := format.SplitObject(raw)
			params := format.SplitObject(req["params"])
			name, ok := stringValue(params["name"])
			if !ok {
				bl.warnings = append(bl.warnings, blockWarning{"tool_calls entry is not an MCP tools/call request {params: {name, arguments}}; skipped", []any{"tool_calls", id}})
				return
			}
			known := []string{"params"}
			if format.String(req["method"]) == "tools/call" {
				known = append(known, "method")
			}
			extra := format.Extra(req, known...)
			if rest := format.Extra(params, "name", "arguments"); rest != nil {
				extra = format.MergeExtra(extra, "params", jsonx.RawMessage(*rest))
			}
			bl.calls = append(bl.calls, blockCall{id: id, name: name, key: id, args: params["arguments"], extra: extra})
		})
	}
	if results != nil {
		bl.consumed = append(bl.consumed, "tool_results")
		format.EachMember(results, func(id string, raw []byte) {
			res := format.SplitObject(raw)
			if res == nil {
				bl.warnings = append(bl.warnings, blockWarning{"tool_results entry is not an MCP CallToolResult object; skipped", []any{"tool_results", id}})
				return
			}
			text, _, _ := content(res["content"])
			isErr, _ := format.Bool(res["isError"])
			bl.results = append(bl.results, blockResult{key: id, link: model.LinkByID, text: text, isError: isErr,
				extra: format.Extra(res, "content", "isError")})
		})
	}
	if channels != nil {
		bl.consumed = append(bl.consumed, "channels")
		if text, _, ok := content(channels["reasoning"]); ok && text != "" {
			bl.thinking = append(bl.thinking, text)
		}
		if rest := format.Extra(channels, "reasoning"); rest != nil {
			bl.channels = jsonx.RawMessage(*rest)
		}
	}
	return bl
}

// objectValue returns raw when it is a JSON object, else nil.
func objectValue(raw jsonx.RawMessage) jsonx.RawMessage {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return raw
		}
		return nil
	}
	return nil
}

// geminiParts maps Gemini parts: text (thought parts are reasoning),
// functionCall and functionResponse, matched by id when they carry one,
// else by function name.
func geminiParts(parts [][]byte) *blocks {
	b := blocks{consumed: []string{"parts"}}
	var texts []string
	for _, e := range parts {
		p := format.SplitObject(e)
		if t, ok := stringValue(p["text"]); ok {
			if thought, _ := format.Bool(p["thought"]); thought {
				b.thinking = append(b.thinking, t)
			} else {
				texts = append(texts, t)
			}
		}
		if fc := format.SplitObject(p["functionCall"]); fc != nil {
			id, name := format.String(fc["id"]), format.String(fc["name"])
			b.calls = append(b.calls, blockCall{id: id, name: name, key: callKey(id, name), args: fc["args"],
				extra: format.Extra(fc, "id", "name", "args")})
		}
		if fr := format.SplitObject(p["functionResponse"]); fr != nil {
			id, name := format.String(fr["id"]), format.String(fr["name"])
			link := model.LinkByID
			if id == "" {
				link = model.LinkByName
			}
			text, _, _ := content(fr["response"])
			b.results = append(b.results, blockResult{key: callKey(id, name), link: link, text: text})
		}
	}
	if len(texts) > 0 {
		b.text, b.kind, b.hasText = strings.Join(texts, "\n"), format.KindText, true
	}
	return &b
}

func callKey(id, name string) string {
	if id != "" {
		return id
	}
	return nameKeyPrefix + name
}

// onlyResults reports whether the message just returns tool results.
func (bl *blocks) onlyResults() bool {
	return bl != nil && len(bl.results) > 0 && !bl.hasText && len(bl.calls) == 0
}

// resultsText is the step text of a message made only of tool results.
func (bl *blocks) resultsText() string {
	texts := make([]string, len(bl.results))
	for i, r := range bl.results {
		texts[i] = r.text
	}
	return strings.Join(texts, "\n")
}

// blockToolCalls records the calls of step stepID (arguments: the input
// object as compact JSON text) and returns how many.
func (b *builder) blockToolCalls(stepID string, calls []blockCall) int {
	for _, c := range calls {
		tc := model.ToolCall{StepID: stepID, ToolCallID: c.id, FunctionName: c.name, Extra: c.extra}
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(c.args)
		b.addCall(tc, c.key)
	}
	return len(calls)
}

// blockResults links the results carried by step stepID to their calls.
func (b *builder) blockResults(stepID string, at loc, bl *blocks) {
	for i, r := range bl.results {
		status := model.ResultOK
		if r.isError {
			status = model.ResultError
		}
		call := b.take(r.key, nil)
		if call < 0 {
			b.warnAt(at, "tool result matches no unanswered call", "content", i)
			continue
		}
		b.answer(call, r.link, model.StrAlways(r.text), status, stepID)
		if r.extra != nil {
			tc := &b.sl.ToolCalls[call]
			tc.Extra = format.MergeExtra(tc.Extra, "result", jsonx.RawMessage(*r.extra))
		}
	}
}
