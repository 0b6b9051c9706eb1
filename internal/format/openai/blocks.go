package openai

import (
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Anthropic Messages content blocks. Chats exported from Claude-based agents
// keep this message list but carry tool use in content blocks: tool_use in
// assistant messages, tool_result in the next user message, and reasoning
// in thinking blocks. Each message stays one step.
type blocks struct {
	rest     []byte   // the other blocks, as a JSON array; nil when there are none
	thinking []string // thinking and redacted_thinking texts
	uses     []map[string]jsonx.RawMessage
	results  []map[string]jsonx.RawMessage
}

// splitBlocks returns the blocks of a content array that holds at least one
// tool_use, tool_result or thinking block, and nil for any other content.
func splitBlocks(raw jsonx.RawMessage) *blocks {
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
			b.uses = append(b.uses, blk)
		case "tool_result":
			b.results = append(b.results, blk)
		case "thinking":
			b.thinking = append(b.thinking, format.String(blk["thinking"]))
		default:
			rest = append(rest, e)
		}
	}
	if len(b.uses)+len(b.results)+len(b.thinking) == 0 {
		return nil
	}
	if len(rest) > 0 {
		b.rest = append(append([]byte{'['}, joinJSON(rest)...), ']')
	}
	return &b
}

func joinJSON(parts [][]byte) []byte {
	var out []byte
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	return out
}

// resultsText is the step text of a message made only of tool results.
func (bl *blocks) resultsText() string {
	texts := make([]string, 0, len(bl.results))
	for _, r := range bl.results {
		text, _, _ := content(r["content"])
		texts = append(texts, text)
	}
	return strings.Join(texts, "\n")
}

// blockToolCalls records the tool_use blocks of step stepID as tool calls
// (arguments: the input object as compact JSON text) and returns how many.
func (b *builder) blockToolCalls(stepID string, at loc, bl *blocks) int {
	if bl == nil {
		return 0
	}
	for i, u := range bl.uses {
		id := format.String(u["id"])
		tc := model.ToolCall{StepID: stepID, ToolCallID: id, FunctionName: format.String(u["name"]),
			Extra: format.Extra(u, "type", "id", "name", "input")}
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(u["input"])
		if id == "" {
			b.warnAt(at, "tool_use block has no id; its result cannot be linked", "content", i)
		}
		b.addCall(tc, id)
	}
	return len(bl.uses)
}

// blockResults links the tool_result blocks carried by step stepID to their
// calls by tool_use_id.
func (b *builder) blockResults(stepID string, at loc, bl *blocks) {
	if bl == nil {
		return
	}
	for i, r := range bl.results {
		text, _, _ := content(r["content"])
		status := model.ResultOK
		if isErr, _ := format.Bool(r["is_error"]); isErr {
			status = model.ResultError
		}
		if !b.resolve(format.String(r["tool_use_id"]), model.LinkByID, model.StrAlways(text), status, stepID) {
			b.warnAt(at, "tool_result matches no unanswered tool_use", "content", i, "tool_use_id")
		}
	}
}
