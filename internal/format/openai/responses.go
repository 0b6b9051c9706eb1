package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// deferredCall is the key holding the arguments of a Responses item type
// that calls a tool and gets its result in a later *_output item with the
// same call_id, or "" for any other type. A switch, not a map: hashing the
// type of every item (twice for a call) showed in the Codex profile.
func deferredCall(typ string) (argKey string) {
	switch typ {
	case "function_call":
		return "arguments"
	case "custom_tool_call":
		return "input"
	case "local_shell_call", "computer_call":
		return "action"
	}
	return ""
}

// Hosted tool items carry their own result (inline), with the keys that hold
// the arguments and the result.
var hostedCalls = map[string][2]string{
	"web_search_call":       {"action", "results"},
	"file_search_call":      {"queries", "results"},
	"code_interpreter_call": {"code", "outputs"},
	"image_generation_call": {"", "result"},
	"mcp_call":              {"arguments", "output"},
}

// quietItems are item types kept as plain system steps without a warning.
var quietItems = map[string]bool{
	"item_reference": true, "mcp_list_tools": true, "mcp_approval_request": true,
	"mcp_approval_response": true, "compaction": true,
}

// itemStep carries where an item sits and what the surrounding file says
// about it.
type itemStep struct {
	id    string
	at    loc
	ts    *time.Time
	model *string
}

// item maps one Responses item to a step (and its tool call or result). It
// returns whether the step is an agent step, i.e. output of a model call.
func (b *builder) item(it object, is itemStep) bool {
	typ := symbol(it.get("type"))
	if typ == "" && it.get("role") != nil {
		return b.untypedMessage(it, is)
	}
	// The step is filled in place: copying a whole step into the slice
	// copied every pointer of it under the GC's write barrier.
	b.sl.Steps = append(b.sl.Steps, model.Step{})
	st := &b.sl.Steps[len(b.sl.Steps)-1]
	st.StepID, st.Timestamp = is.id, is.ts
	switch {
	case typ == "message":
		b.itemMessage(st, it, is)
	case typ == "reasoning":
		b.itemReasoning(st, it)
	case deferredCall(typ) != "":
		b.itemCall(st, typ, it, is)
	case strings.HasSuffix(typ, "_call_output"):
		b.itemOutput(st, it, is)
	case hostedCalls[typ] != [2]string{}:
		b.itemHosted(st, typ, it)
	default:
		if !quietItems[typ] {
			b.warnAt(is.at, "unknown item type "+strconv.Quote(typ)+"; kept as a system step")
		}
		st.Source, st.MessageKind = model.SourceSystem, typ
		if typ == "" {
			st.MessageKind = "unknown"
		}
		st.Extra = b.extra(it, nil, "type")
	}
	if st.Source == model.SourceAgent && st.ModelName == nil {
		st.ModelName = is.model
	}
	return st.Source == model.SourceAgent
}

// untypedMessage maps an "easy" {role, content} message, which may carry
// Chat Completions members (tool_calls, tool_call_id) as well.
func (b *builder) untypedMessage(it object, is itemStep) bool {
	b.chatMessage(is.id, is.at, it)
	st := &b.sl.Steps[len(b.sl.Steps)-1]
	if st.Timestamp == nil {
		st.Timestamp = is.ts
	}
	agent := st.Source == model.SourceAgent
	if agent && st.ModelName == nil {
		st.ModelName = is.model
	}
	return agent
}

func (b *builder) itemMessage(st *model.Step, it object, is itemStep) {
	role := symbol(it.get("role"))
	source, canonical, knownRole := roleSource(role)
	if !knownRole {
		b.warnAt(is.at, "unknown role "+strconv.Quote(role)+"; kept as a system step", "role")
	}
	st.Source = source
	text, kind, ok := content(it.get("content"))
	if ok {
		st.MessageValue = b.textOf(text)
	}
	if kind == format.KindMultimodal && isRefusalParts(it.get("content")) {
		kind = kindRefusal
	}
	st.MessageKind = kind
	known := [...]string{"type", "content", "role"} // an array: appending "role" allocated
	n := len(known) - 1
	if canonical {
		n++
	}
	st.Extra = b.extra(it, nil, known[:n]...)
}

// encryptedFlag is the extra member that says a reasoning item had
// encrypted content.
var encryptedFlag = format.Member{Name: []byte("encrypted_content"), Val: []byte("true")}

// itemReasoning keeps the readable summary (and reasoning text when
// present); encrypted content is opaque, so only its presence is flagged.
func (b *builder) itemReasoning(st *model.Step, it object) {
	st.Source, st.MessageKind = model.SourceAgent, kindReasoning
	var texts []string
	for _, key := range []string{"summary", "content"} {
		if t, _, ok := content(it.get(key)); ok && t != "" {
			texts = append(texts, t)
		}
	}
	if len(texts) > 0 {
		st.Reasoning = model.Str(strings.Join(texts, "\n"))
	}
	var flag *format.Member
	if !format.IsNull(it.get("encrypted_content")) {
		flag = &encryptedFlag
	}
	st.Extra = b.extra(it, flag, "type", "summary", "content", "encrypted_content")
}

func (b *builder) itemCall(st *model.Step, typ string, it object, is itemStep) {
	st.Source, st.MessageKind = model.SourceAgent, kindToolCallsOnly
	argKey := deferredCall(typ)
	name := format.Symbol(it.get("name"))
	if name == "" {
		name = strings.TrimSuffix(typ, "_call")
	}
	callID := format.String(it.get("call_id"))
	tc := model.ToolCall{StepID: st.StepID, ToolCallID: callID, FunctionName: name}
	tc.Arguments, tc.ArgumentsValid = b.arguments(it.get(argKey), is.at, argKey)
	known := [...]string{"call_id", "name", argKey, "type"} // an array: appending "type" allocated
	n := len(known) - 1
	if typ == "function_call" {
		n++
	}
	tc.Extra = b.extra(it, nil, known[:n]...)
	b.addCall(tc, callID)
}

func (b *builder) itemOutput(st *model.Step, it object, is itemStep) {
	st.Source = model.SourceTool
	text, kind, ok := content(it.get("output"))
	st.MessageKind = kind
	result := b.textOf(text)
	if ok {
		st.MessageValue = result
	}
	st.Extra = b.extra(it, nil, "output")
	if !b.resolve(lookupKey(it.get("call_id")), model.LinkByID, result, model.ResultOK, st.StepID) {
		b.warnAt(is.at, "output matches no unanswered call", "call_id")
	}
}

// lookupKey is format.String(raw) for looking a call up: a string without
// escapes is raw's own bytes, not a copy of them, which was a fifth of the
// strings a Codex rollout allocated. It must not outlive the line.
func lookupKey(raw []byte) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if body := raw[1 : n-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			return unsafe.String(unsafe.SliceData(body), len(body))
		}
	}
	return format.String(raw)
}

// itemHosted maps a hosted tool item, which holds its own result.
func (b *builder) itemHosted(st *model.Step, typ string, it object) {
	st.Source, st.MessageKind = model.SourceAgent, kindToolCallsOnly
	keys := hostedCalls[typ]
	name := strings.TrimSuffix(typ, "_call")
	if n := format.String(it.get("name")); n != "" {
		name = n
	}
	tc := model.ToolCall{StepID: st.StepID, ToolCallID: format.String(it.get("id")), FunctionName: name, ResultLink: model.LinkInline}
	known := []string{"type", "id", "name"}
	if keys[0] != "" {
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(it.get(keys[0]))
		known = append(known, keys[0])
	}
	known = append(known, keys[1])
	if text, _, ok := content(it.get(keys[1])); ok {
		tc.Result = model.StrAlways(text)
	}
	tc.ResultStatus = model.ResultOK
	switch format.String(it.get("status")) {
	case "failed", "incomplete":
		tc.ResultStatus = model.ResultError
	}
	if !format.IsNull(it.get("error")) {
		tc.ResultStatus = model.ResultError
	}
	tc.Extra = b.extra(it, nil, known...)
	b.addCall(tc, "")
}

// normalizeResponses reads a bare Responses item, an array of items, items
// one per line, or a whole response object {object:"response", output,
// usage}. The file is one Storyline.
func normalizeResponses(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	data, release, err := format.ReadWhole(ctx, r, src, "openai")
	if err != nil {
		return err
	}
	defer release()
	b := newBuilder(layoutResponses, loc{})
	id := fileID(src)
	b.sl.Run.RunID, b.sl.Run.SessionID = id, id
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if !jsonx.Valid(trimmed) {
			return format.DocumentError(src, trimmed, "openai: read items", errors.New("invalid JSON"))
		}
		items, _ := decodeMessages(trimmed)
		b.items(items, loc{}, nil)
	default:
		if top, err := decodeObject(trimmed); err == nil {
			b.responseDocument(top)
			break
		}
		err := format.EachLine(ctx, bytes.NewReader(trimmed), func(n int64, line []byte) error {
			it, err := decodeObject(line)
			if err != nil {
				return elementError(src, loc{line: n}, err)
			}
			b.item(mapObject(it), itemStep{id: strconv.FormatInt(n, 10), at: loc{line: n}})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return emit(b.finish(src.File))
}

// items maps an item array found at `at`; step ids are the array indexes.
func (b *builder) items(items []map[string]jsonx.RawMessage, at loc, modelName *string) {
	for i, it := range items {
		if it == nil {
			b.warnAt(at, "item is not an object; skipped", i)
			continue
		}
		b.item(mapObject(it), itemStep{id: strconv.Itoa(i), at: at.elem(i), model: modelName})
	}
}

// responseDocument maps a single item, or a response object whose output
// items become the steps and whose usage goes to the last agent step.
func (b *builder) responseDocument(top map[string]jsonx.RawMessage) {
	if format.String(top["object"]) != "response" {
		b.item(mapObject(top), itemStep{id: "0"})
		return
	}
	run := &b.sl.Run
	if id := format.String(top["id"]); id != "" {
		run.RunID, run.SessionID = id, id
	}
	modelName, _ := stringValue(top["model"])
	run.AgentModelName = model.Str(modelName)
	if t, ok := format.Time(top["created_at"]); ok {
		run.StartedAt = model.Time(t)
	}
	switch format.String(top["status"]) {
	case "completed":
		run.Status = model.StatusCompleted
	case "incomplete":
		run.Status = model.StatusTruncated
	case "failed":
		run.Status = model.StatusError
	case "cancelled":
		run.Status = model.StatusCancelled
	}
	items, err := decodeMessages(top["output"])
	if err != nil {
		b.warn("output is not an array; ignored", "output")
	}
	b.items(items, loc{ptr: "/output"}, model.Str(modelName))
	for i := len(b.sl.Steps) - 1; i >= 0; i-- {
		if b.sl.Steps[i].Source == model.SourceAgent {
			format.ParseUsage(top["usage"]).Apply(&b.sl.Steps[i])
			break
		}
	}
	run.Extra = format.Extra(top, "id", "model", "created_at", "status", "output", "usage")
}
