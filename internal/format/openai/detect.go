package openai

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/sweagent"
)

// rolloutTypes are the envelope types of Codex rollout lines.
var rolloutTypes = map[string]bool{
	"session_meta": true, "turn_context": true, "response_item": true, "event_msg": true, "compacted": true,
}

// itemTypes are the Responses item types that mark a bare item file.
var itemTypes = map[string]bool{
	"message": true, "reasoning": true, "function_call": true, "function_call_output": true,
	"custom_tool_call": true, "custom_tool_call_output": true, "local_shell_call": true,
	"local_shell_call_output": true, "computer_call": true, "computer_call_output": true,
	"web_search_call": true, "file_search_call": true, "code_interpreter_call": true,
	"image_generation_call": true, "mcp_call": true, "mcp_list_tools": true, "item_reference": true,
}

// Detect recognizes the layouts of docs/formats.md (OpenAI layouts) from the probe alone, in
// the order that keeps the more specific shapes first.
func (adapter) Detect(p *format.Probe) (string, bool) {
	switch p.Shape {
	case format.ShapeLines:
		return detectLine(p.First)
	case format.ShapeArray:
		return detectElement(p.First)
	case format.ShapeObject:
		return detectDocument(p.First)
	}
	return "", false
}

func detectLine(o *format.Obj) (string, bool) {
	switch {
	case o == nil:
		return "", false
	case o.Has("payload") && rolloutTypes[o.Str("type")]:
		return layoutCodex, true
	case isRequestLog(o):
		return layoutRequestLog, true
	case o.Has("messages"):
		return layoutChatJSONL, true
	case o.Has("conversations"):
		return conversationsLayout(o), true
	case o.Has("role") && (o.Has("content") || o.Has("tool_calls")) && !o.Has("type"):
		return layoutMessages, true
	case isItem(o):
		return layoutResponses, true
	}
	return "", false
}

func detectElement(o *format.Obj) (string, bool) {
	switch {
	case o == nil:
		return "", false
	case o.Has("messages"):
		return layoutChatArray, true
	case o.Has("conversations"):
		return conversationsLayout(o), true
	case isItem(o):
		return layoutResponses, true
	}
	return "", false
}

func detectDocument(o *format.Obj) (string, bool) {
	switch {
	case o == nil:
		return "", false
	case o.Has("session") && o.Has("items"):
		return layoutCodex, true
	case o.Has("payload") && rolloutTypes[o.Str("type")]:
		return layoutCodex, true // a rollout of a single line
	case o.Has("messages") && !sweagent.IsMiniSWEAgent(o): // mini-swe-agent has its own adapter
		return layoutWrapped, true
	case isItem(o), o.Str("object") == "response" && o.Has("output"):
		return layoutResponses, true
	}
	return "", false
}

// isRequestLog recognizes Batch API input/output and proxy log lines.
func isRequestLog(o *format.Obj) bool {
	if o.Has("custom_id") && (o.Has("body") || o.Has("response")) {
		return true
	}
	if o.Sub("body").Has("messages") || o.Sub("request").Has("messages") {
		return true
	}
	resp := o.Sub("response")
	return resp.Has("choices") || resp.Sub("body").Has("choices")
}

// conversationsLayout tells ShareGPT turns ({from, value}) from harbor
// rows ({role, content} turns plus episode metadata).
func conversationsLayout(o *format.Obj) string {
	turn := o.FirstElem("conversations")
	switch {
	case turn.Has("from"):
		return layoutShareGPT
	case turn.Has("role"), o.Has("episode"), o.Has("run_id"), o.Has("trial_name"):
		return layoutHarbor
	}
	return layoutShareGPT
}

// isItem recognizes a Responses item: a typed item, or an untyped "easy"
// message {role, content}, which is also what a bare chat message list
// holds.
func isItem(o *format.Obj) bool {
	return itemTypes[o.Str("type")] || (o.Has("role") && !o.Has("type"))
}
