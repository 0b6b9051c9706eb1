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
// the order that keeps the more specific shapes first. It claims a file
// only on structure that makes it a conversation: a lone message or
// Responses item (one record per file, as OpenCode's storage tree writes
// them), an object that merely has role or content, and a single API
// request with its response are not trajectories (docs/formats.md,
// "What is not a trajectory").
func (adapter) Detect(p *format.Probe) (string, bool) {
	switch p.Shape {
	case format.ShapeLines:
		return detectLine(p.First, p.Second)
	case format.ShapeArray:
		return detectElement(p.First, p.Second)
	case format.ShapeObject:
		return detectDocument(p.First)
	}
	return "", false
}

// detectLine looks at a JSONL file's first line; second is the next line,
// which a file of bare messages or items must have too.
func detectLine(o, second *format.Obj) (string, bool) {
	switch {
	case o == nil:
		return "", false
	case o.Has("payload") && rolloutTypes[o.Str("type")]:
		return layoutCodex, true
	case isRequestLog(o):
		return layoutRequestLog, true
	case hasMessageList(o, "messages"):
		return layoutChatJSONL, true
	case o.Has("conversations"):
		return conversationsLayout(o), true
	case isMessage(o) && isMessage(second):
		return layoutMessages, true
	case isItem(o) && isItem(second):
		return layoutResponses, true
	}
	return "", false
}

// detectElement looks at an array's first element; second is the next
// element, which a bare array of Responses items must have too.
func detectElement(o, second *format.Obj) (string, bool) {
	switch {
	case o == nil:
		return "", false
	case hasMessageList(o, "messages"):
		return layoutChatArray, true
	case o.Has("conversations"):
		return conversationsLayout(o), true
	case isItem(o) && isItem(second):
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
	case hasMessageList(o, "messages") && !sweagent.IsMiniSWEAgent(o) && !isExchange(o): // mini-swe-agent has its own adapter
		return layoutWrapped, true
	case o.Str("object") == "response" && o.Has("output"):
		return layoutResponses, true
	}
	return "", false
}

// hasMessageList: k holds an array whose first element is a role message
// (an empty list proves nothing).
func hasMessageList(o *format.Obj, k string) bool {
	return o.FirstElem(k).Has("role")
}

// isExchange recognizes one chat completion request saved with its
// response ({messages, response: {choices}}, a gateway's or a test's
// fixture): a single model call, not an agent's conversation. Logs of many
// such calls are the request-log layout.
func isExchange(o *format.Obj) bool {
	return o.Has("choices") || o.Sub("response").Has("choices")
}

// isMessage recognizes a bare chat message: a role with content or tool
// calls, and no item type.
func isMessage(o *format.Obj) bool {
	return o.Has("role") && (o.Has("content") || o.Has("tool_calls")) && !o.Has("type")
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
// holds (Gemini's messages carry parts instead of content). A role without
// content (a message header whose parts live in other files) is not one.
func isItem(o *format.Obj) bool {
	if t := o.Str("type"); t != "" || o.Has("type") {
		return itemTypes[t]
	}
	return o.Has("role") && (o.Has("content") || o.Has("parts") || o.Has("tool_calls"))
}
