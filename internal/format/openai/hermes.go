package openai

import (
	"bytes"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Tool use written into message text, as Hermes-style models and chat
// templates do (NousResearch Hermes function calling, Qwen, Harbor's trace
// export): the assistant ends its turn with one
// <tool_call>{"name", "arguments"}</tool_call> block per call, the results
// come back in a tool (or user) turn of <tool_response> blocks, one per
// call in call order, each {"name", "content"}, and the tool schema sits in
// a <tools> block of the system (or first user) turn. docs/formats.md
// (openai section) documents the mapping.
const (
	toolCallTag     = "tool_call"
	toolResponseTag = "tool_response"
	toolsTag        = "tools"
)

// textCall decodes one call written as JSON text {"name", "arguments"}
// (Hermes blocks, LLaMA-Factory tool_call parts, ShareGPT function_call
// values). ok is false for anything else: such text is never guessed at.
func textCall(text []byte) (c blockCall, ok bool) {
	text = bytes.TrimSpace(text)
	if !jsonx.Valid(text) {
		return blockCall{}, false
	}
	obj := format.SplitObject(text)
	name, ok := stringValue(obj["name"])
	if obj == nil || !ok || name == "" {
		return blockCall{}, false
	}
	return blockCall{name: name, args: obj["arguments"], extra: format.Extra(obj, "name", "arguments")}, true
}

// cutTagged calls take with the body of every <tag>…</tag> span of text, in
// order, and returns text without the spans take accepted (the pieces
// around them trimmed and joined by newlines), and how many spans were
// rejected or left unclosed.
func cutTagged(text, tag string, take func(body string) bool) (rest string, bad int) {
	open, close := "<"+tag+">", "</"+tag+">"
	if !strings.Contains(text, open) {
		return text, 0
	}
	var pieces []string
	piece, taken := 0, false // piece: where the current kept piece starts
	for at := 0; ; {
		i := strings.Index(text[at:], open)
		if i < 0 {
			break
		}
		i += at
		j := strings.Index(text[i+len(open):], close)
		if j < 0 {
			bad++
			break
		}
		end := i + len(open) + j + len(close)
		if take(text[i+len(open) : end-len(close)]) {
			pieces = append(pieces, text[piece:i])
			piece, taken = end, true
		} else {
			bad++
		}
		at = end
	}
	if !taken {
		return text, bad
	}
	pieces = append(pieces, text[piece:])
	kept := pieces[:0]
	for _, p := range pieces {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n"), bad
}

// splitToolCalls moves the well-formed <tool_call> blocks out of an
// assistant text; malformed ones stay in the text and are counted in bad.
func splitToolCalls(text string) (rest string, calls []blockCall, bad int) {
	rest, bad = cutTagged(text, toolCallTag, func(body string) bool {
		c, ok := textCall([]byte(body))
		if ok {
			calls = append(calls, c)
		}
		return ok
	})
	return rest, calls, bad
}

// toolResponses returns the bodies of the <tool_response> blocks of a
// turn, and its text outside them.
func toolResponses(text string) (bodies []string, rest string) {
	rest, _ = cutTagged(text, toolResponseTag, func(body string) bool {
		bodies = append(bodies, strings.TrimSpace(body))
		return true
	})
	return bodies, rest
}

// textResults links the <tool_response> blocks of step stepID to the
// waiting id-less calls: by the "name" a response carries when a call of
// that name waits, otherwise in call order. The step's own text is left as
// it is; each call's result is its block's body.
func (b *builder) textResults(stepID string, at loc, bodies []string) {
	for _, body := range bodies {
		i, link := -1, model.LinkByOrder
		if name, ok := stringValue(format.SplitObject(validJSON(body))["name"]); ok {
			i = b.take("", func(call int) bool { return b.sl.ToolCalls[call].FunctionName == name })
			link = model.LinkByName
		}
		if i < 0 {
			i, link = b.take("", nil), model.LinkByOrder
		}
		if i < 0 {
			b.warnAt(at, "<tool_response> matches no unanswered call", "content")
			continue
		}
		b.answer(i, link, model.StrAlways(body), model.ResultOK, stepID)
	}
}

// validJSON returns s as bytes when it is valid JSON, else nil (which
// SplitObject reads as no object).
func validJSON(s string) []byte {
	if raw := []byte(s); jsonx.Valid(raw) {
		return raw
	}
	return nil
}

// noteTools keeps the first <tools> schema seen in a system or user turn,
// for the run's extra tool_definitions: a JSON value, or one JSON value per
// line (as some chat templates write it).
func (b *builder) noteTools(at loc, text string) {
	if b.toolDefs != nil || !strings.Contains(text, "<"+toolsTag+">") {
		return
	}
	cutTagged(text, toolsTag, func(body string) bool {
		if b.toolDefs != nil {
			return false
		}
		if raw := validJSON(strings.TrimSpace(body)); raw != nil {
			b.toolDefs = format.CompactJSON(raw)
			return true
		}
		var lines [][]byte
		for _, line := range strings.Split(body, "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			raw := validJSON(line)
			if raw == nil {
				b.warnAt(at, "the <tools> block is not JSON; kept in the message text only", "content")
				return false
			}
			lines = append(lines, format.CompactJSON(raw))
		}
		b.toolDefs = format.JoinArray(lines)
		return true
	})
}
