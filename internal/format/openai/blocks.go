package openai

import (
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Content blocks of other providers inside this message list. Chats
// exported from Claude-based agents keep it but carry tool use in Anthropic
// Messages blocks (tool_use in assistant content, tool_result in the next
// user message, thinking); Gemini chats (role user/model) carry `parts`
// (text, thought, functionCall, functionResponse) instead of content. Each
// message stays one step.
type blocks struct {
	fromParts  bool // Gemini parts (a mapped message key)
	text, kind string
	hasText    bool
	thinking   []string
	calls      []blockCall
	results    []blockResult
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
}

// messageBlocks reads a message's Anthropic content blocks or Gemini parts,
// or returns nil when it has neither.
func messageBlocks(m map[string]jsonx.RawMessage) *blocks {
	if parts, ok := format.SplitArray(m["parts"]); ok && format.IsNull(m["content"]) {
		return geminiParts(parts)
	}
	return anthropicBlocks(m["content"])
}

// anthropicBlocks returns the blocks of a content array that holds at least
// one tool_use, tool_result or thinking block, and nil for other content.
func anthropicBlocks(raw jsonx.RawMessage) *blocks {
	elems, ok := format.SplitArray(raw)
	if !ok {
		return nil
	}
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

// geminiParts maps Gemini parts: text (thought parts are reasoning),
// functionCall and functionResponse, matched by id when they carry one,
// else by function name.
func geminiParts(parts [][]byte) *blocks {
	b := blocks{fromParts: true}
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
				link = linkByName
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
func (b *builder) blockToolCalls(stepID string, at loc, bl *blocks) int {
	if bl == nil {
		return 0
	}
	for _, c := range bl.calls {
		tc := model.ToolCall{StepID: stepID, ToolCallID: c.id, FunctionName: c.name, Extra: c.extra}
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(c.args)
		b.addCall(tc, c.key)
	}
	return len(bl.calls)
}

// blockResults links the results carried by step stepID to their calls.
func (b *builder) blockResults(stepID string, at loc, bl *blocks) {
	if bl == nil {
		return
	}
	for i, r := range bl.results {
		status := model.ResultOK
		if r.isError {
			status = model.ResultError
		}
		if !b.resolve(r.key, r.link, model.StrAlways(r.text), status, stepID) {
			b.warnAt(at, "tool result matches no unanswered call", "content", i)
		}
	}
}
