package tau

import (
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// builder turns τ messages into steps and tool calls. Both benchmarks write
// OpenAI-style messages: τ-bench the litellm message as it came back
// (tool_calls[{id, type, function{name, arguments}}], answered by
// {role: tool, tool_call_id, name, content}); τ²-bench its own
// (tool_calls[{id, name, arguments, requestor}], answered by {role: tool,
// id, content, requestor, error}), where the simulated user calls tools of
// its own too.
type builder struct {
	sl        *model.Storyline
	model     *string          // the agent's model, for its steps
	pending   map[string][]int // unanswered calls by id, in call order
	unmatched int              // tool results that answer no call
	// textErrors: a result is an error when its text says so, as τ-bench's
	// environment writes a failed tool ("Error: <exception>") or an
	// unknown one ("Unknown action <name>"); τ² has an error flag.
	textErrors bool
}

func newBuilder(sl *model.Storyline, agentModel *string) *builder {
	return &builder{sl: sl, model: agentModel, pending: map[string][]int{}}
}

func (b *builder) warn(ptr, msg string) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{Pointer: ptr, Message: msg})
}

// messageKnown are the message members mapped to columns; the rest go to
// the step's extra.
var (
	messageKnown = []string{"role", "content", "tool_calls", "timestamp", "turn_idx", "usage", "cost"}
	// The simulated user's model usage is not the agent's: it stays in
	// extra, so that the run's totals count the agent alone.
	userKnown = messageKnown[:5]
)

// message maps one message (at JSON pointer ptr) to a step, or to one step
// per result for a τ² MultiToolMessage.
func (b *builder) message(obj map[string]jsonx.RawMessage, ptr, stepID string) {
	role := format.String(obj["role"])
	if role == "tool" {
		if list, ok := format.SplitArray(obj["tool_messages"]); ok {
			for i, e := range list {
				if m := format.SplitObject(e); m != nil {
					b.message(m, ptr+format.Pointer("tool_messages", i), stepID+"."+strconv.Itoa(i))
				}
			}
			return
		}
		b.toolResult(obj, ptr, stepID)
		return
	}
	st := model.Step{StepID: stepID, MessageKind: format.KindText}
	if t, ok := format.Time(obj["timestamp"]); ok {
		st.Timestamp = model.Time(t)
	}
	known := messageKnown
	switch role {
	case "system":
		st.Source = model.SourceSystem
	case "user":
		st.Source, known = model.SourceUser, userKnown
	case "assistant":
		st.Source = model.SourceAgent
		st.ModelName = b.model
		u := format.ParseUsage(obj["usage"])
		if c, ok := format.Float(obj["cost"]); ok && u.Cost == nil {
			u.Cost = model.Float(c)
		}
		u.Apply(&st)
	default:
		st.Source = model.SourceSystem
		b.warn(ptr+"/role", "unknown role "+strconv.Quote(role)+"; kept as a system step")
	}
	if text, kind, ok := format.Content(obj["content"]); ok && text != "" {
		st.MessageValue, st.MessageKind = model.StrAlways(text), kind
	}
	st.Extra = extra(obj, known...)
	if b.calls(stepID, obj["tool_calls"], ptr) > 0 && st.MessageValue == nil {
		st.MessageKind = "tool_calls_only"
	}
	b.sl.Steps = append(b.sl.Steps, st)
}

// calls records a message's tool calls and returns how many.
func (b *builder) calls(stepID string, raw jsonx.RawMessage, ptr string) int {
	elems, ok := format.SplitArray(raw)
	if !ok {
		if !format.IsNull(raw) {
			b.warn(ptr+"/tool_calls", "tool_calls is not an array; ignored")
		}
		return 0
	}
	for i, e := range elems {
		c := format.SplitObject(e)
		if c == nil {
			b.warn(ptr+format.Pointer("tool_calls", i), "tool call is not an object; skipped")
			continue
		}
		b.call(stepID, c)
	}
	return len(elems)
}

// call records one call, in either benchmark's shape.
func (b *builder) call(stepID string, c map[string]jsonx.RawMessage) {
	tc := model.ToolCall{StepID: stepID, ToolCallID: format.String(c["id"])}
	known := []string{"id", "name", "arguments"}
	if fn := format.SplitObject(c["function"]); fn != nil { // litellm / OpenAI
		tc.FunctionName = format.String(fn["name"])
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(fn["arguments"])
		known = append(known, "function")
		if format.String(c["type"]) == "function" {
			known = append(known, "type")
		}
	} else {
		tc.FunctionName = format.String(c["name"])
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(c["arguments"])
	}
	tc.Extra = extra(c, known...)
	b.pending[tc.ToolCallID] = append(b.pending[tc.ToolCallID], len(b.sl.ToolCalls))
	b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
}

// toolResult maps a tool message: a tool step whose text is the result,
// which also answers the earliest unanswered call with its id.
func (b *builder) toolResult(obj map[string]jsonx.RawMessage, ptr, stepID string) {
	st := model.Step{StepID: stepID, Source: model.SourceTool, MessageKind: format.KindText}
	if t, ok := format.Time(obj["timestamp"]); ok {
		st.Timestamp = model.Time(t)
	}
	text, kind, hasText := format.Content(obj["content"])
	if hasText {
		st.MessageValue, st.MessageKind = model.StrAlways(text), kind
	}
	idKey := "tool_call_id" // τ-bench
	if _, ok := obj[idKey]; !ok {
		idKey = "id" // τ²-bench
	}
	failed, _ := format.Bool(obj["error"])
	st.Extra = extra(obj, "role", "content", "timestamp", "turn_idx", idKey)
	b.sl.Steps = append(b.sl.Steps, st)
	id := format.String(obj[idKey])
	queue := b.pending[id]
	if len(queue) == 0 {
		b.unmatched++
		return
	}
	b.pending[id] = queue[1:]
	tc := &b.sl.ToolCalls[queue[0]]
	tc.ResultStepID, tc.ResultLink, tc.ResultStatus = model.Str(stepID), model.LinkByID, model.ResultOK
	if hasText {
		tc.Result = model.StrAlways(text)
	}
	if failed || b.textErrors && (strings.HasPrefix(text, "Error: ") || strings.HasPrefix(text, "Unknown action ")) {
		tc.ResultStatus = model.ResultError
	}
}

// finish adds the Storyline's summary warnings.
func (b *builder) finish() {
	if b.unmatched > 0 {
		b.warn("", strconv.Itoa(b.unmatched)+" tool result(s) answer no call")
	}
	if missing := format.UnansweredCalls(b.sl.ToolCalls); missing > 0 {
		b.warn("", strconv.Itoa(missing)+" tool call(s) have no result")
	}
}

// extra is format.Extra without the members whose value is null: τ's
// pydantic dumps write every optional field, and a null says nothing.
func extra(obj map[string]jsonx.RawMessage, known ...string) *string {
	known = known[:len(known):len(known)] // appends copy: the caller's list stays as it is
	for k, v := range obj {
		if format.IsNull(v) {
			known = append(known, k)
		}
	}
	return format.Extra(obj, known...)
}
