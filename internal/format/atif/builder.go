package atif

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Step message kinds beyond format.KindText/KindMultimodal.
const (
	kindToolCallsOnly = "tool_calls_only"
	kindSystemOp      = "system_op"
)

// builder accumulates one Storyline: the run row from the document root (or
// JSONL header), then steps one at a time, then links and totals in finish.
type builder struct {
	sl     *model.Storyline
	layout string // "atif" or "atif-jsonl", the source_format prefix
	warn   warnings
	// embedded maps the trajectory_id of each embedded child of this
	// document to the child's session_id, to resolve subagent refs.
	embedded map[string]string

	stepIDs   map[string]bool
	callsByID map[string][]int // tool_call_id → indexes into sl.ToolCalls
	calls     []callMeta       // parallel to sl.ToolCalls
	pending   []pendingResult  // results naming no call of their own step
	stepRest  map[int][]json.RawMessage
	refs      []model.SubagentRef

	firstModel                 string
	startFallback, endFallback time.Time
	success                    *bool
}

// callMeta is what a tool call keeps until finish builds its extra.
type callMeta struct {
	rest        object            // unmapped members of the call
	resultRest  []json.RawMessage // unmapped members of its result(s)
	hasIDResult bool
}

// result is one observation result, read and not yet linked.
type result struct {
	callID string
	text   *string
	isErr  bool
	rest   object // unmapped members, source_call_id included
	at     loc
}

type pendingResult struct {
	result
	stepIdx int
}

func newBuilder(id identity, layout string) *builder {
	b := &builder{
		sl:        &model.Storyline{},
		layout:    layout,
		stepIDs:   map[string]bool{},
		callsByID: map[string][]int{},
	}
	r := &b.sl.Run
	r.RunID, r.SessionID = id.runID, id.sessionID
	r.OriginalSessionID = model.Str(id.originalSessionID)
	r.TrajectoryID = model.Str(id.trajectoryID)
	r.ParentSessionID = model.Str(id.parentSessionID)
	return b
}

// scalarStepKeys are the step members that always map to a column.
var scalarStepKeys = []string{"step_id", "source", "message", "reasoning_content", "model_name", "is_copied_context"}

// addStep maps one step object. m is consumed: each mapping removes what it
// used, so what is left is the step's extra.
func (b *builder) addStep(m object, at loc) {
	idx := len(b.sl.Steps)
	b.sl.Steps = append(b.sl.Steps, model.Step{})
	st := &b.sl.Steps[idx]
	st.StepID = b.stepID(m["step_id"], idx, at)
	st.Source = b.source(m["source"], at)
	st.MessageKind = format.KindText
	if text, kind, ok := format.Content(m["message"]); ok {
		st.MessageValue, st.MessageKind = &text, kind
	}
	if text, _, ok := format.Content(m["reasoning_content"]); ok {
		st.Reasoning = &text
	}
	st.ModelName = model.Str(format.String(m["model_name"]))
	if b.firstModel == "" && st.ModelName != nil {
		b.firstModel = *st.ModelName
	}
	st.LLMCallCount = optInt(m, "llm_call_count")
	st.IsCopiedContext, _ = format.Bool(m["is_copied_context"])
	for _, k := range scalarStepKeys {
		delete(m, k)
	}
	st.Timestamp = b.stepTime(m, at)
	// The members' pointers are written only for members that are there.
	b.setMetrics(st, m, at)

	first := len(b.sl.ToolCalls)
	b.addCalls(m, st.StepID, at)
	hasObs := b.addObservation(idx, m, first, at)
	st = &b.sl.Steps[idx]
	switch {
	case st.MessageKind == format.KindMultimodal:
	case len(b.sl.ToolCalls) > first && (st.MessageValue == nil || *st.MessageValue == ""):
		st.MessageKind = kindToolCallsOnly
	case hasObs && st.Source == model.SourceSystem:
		st.MessageKind = kindSystemOp
	}
	st.Extra = extra(m)
}

// stepID returns the step's id as text, unique within the Storyline.
func (b *builder) stepID(raw json.RawMessage, idx int, at loc) string {
	id := format.String(raw)
	if id == "" {
		id = strconv.Itoa(idx + 1)
		b.warn.add("step-id-missing", at.at("step_id"), "step has no step_id; its position "+id+" is used")
	}
	if b.stepIDs[id] {
		dup := id
		id = dup + "#" + strconv.Itoa(idx+1)
		b.warn.add("step-id-dup", at.at("step_id"), "duplicate step_id "+quote(dup)+"; renamed "+quote(id))
	}
	b.stepIDs[id] = true
	return id
}

func (b *builder) source(raw json.RawMessage, at loc) string {
	s := strings.ToLower(format.String(raw))
	switch s {
	case model.SourceSystem, model.SourceUser, model.SourceAgent, model.SourceTool:
		return s
	case "assistant":
		b.warn.add("source-assistant", at.at("source"), `source "assistant" read as "agent"`)
		return model.SourceAgent
	case "":
		b.warn.add("source-missing", at.at("source"), `step has no source; "unknown" is used`)
		return "unknown"
	}
	b.warn.add("source-bad", at.at("source"), "unknown step source "+quote(s)+" kept as written")
	return s
}

// stepTime reads timestamp, falling back to NVIDIA NeMo's
// extra.invocation.start_timestamp (epoch seconds) when it is absent.
func (b *builder) stepTime(m object, at loc) *time.Time {
	if raw := m["timestamp"]; !format.IsNull(raw) {
		if t, ok := format.Time(raw); ok {
			delete(m, "timestamp")
			return model.Time(t)
		}
		b.warn.add("timestamp-bad", at.at("timestamp"), "unparseable step timestamp kept in extra")
		return nil
	}
	delete(m, "timestamp")
	ex := m["extra"]
	if len(ex) == 0 || !strings.Contains(string(ex), `"invocation"`) {
		return nil
	}
	if t, ok := format.Time(member(member(ex, "invocation"), "start_timestamp")); ok {
		return model.Time(t)
	}
	return nil
}

// tokenArrays are per-token metrics that can hold one number per prompt
// token: only their lengths are kept, under the second name.
var tokenArrays = [][2]string{
	{"prompt_token_ids", "prompt_token_ids_len"},
	{"completion_token_ids", "completion_token_ids_len"},
	{"logprobs", "logprobs_len"},
}

// setMetrics maps the step metrics and leaves their unmapped rest in
// m["metrics"] (or removes it). step locates the step.
func (b *builder) setMetrics(st *model.Step, m object, step loc) {
	raw := m["metrics"]
	if format.IsNull(raw) {
		delete(m, "metrics")
		return
	}
	at := step.at("metrics")
	mm, ok := objectOf(raw)
	if !ok {
		b.warn.add("metrics-bad", at, "metrics is not an object; kept in extra")
		return
	}
	st.PromptTokens = optInt(mm, "prompt_tokens")
	st.CompletionTokens = optInt(mm, "completion_tokens")
	st.CachedTokens = optInt(mm, "cached_tokens")
	st.CostUSD = optFloat(mm, "cost_usd")
	for _, k := range tokenArrays {
		if v, ok := mm[k[0]]; ok {
			if n, isArray := arrayLen(v); isArray {
				delete(mm, k[0])
				mm[k[1]] = json.RawMessage(strconv.Itoa(n))
			}
		}
	}
	if ex := mm["extra"]; !format.IsNull(ex) {
		if e, ok := objectOf(ex); ok {
			st.ReasoningTokens = optInt(e, "reasoning_tokens")
			putRaw(mm, "extra", rest(e))
		}
	}
	putRaw(m, "metrics", rest(mm))
}

// addCalls maps a step's tool_calls. A value that is not an array of
// objects stays in the step's extra. step locates the step.
func (b *builder) addCalls(m object, stepID string, step loc) {
	raw := m["tool_calls"]
	if format.IsNull(raw) {
		delete(m, "tool_calls")
		return
	}
	at := step.at("tool_calls")
	calls, ok := objectsOf(raw)
	if !ok {
		b.warn.add("tool-calls-bad", at, "tool_calls is not an array of objects; kept in extra")
		return
	}
	delete(m, "tool_calls")
	for i, c := range calls {
		if c == nil {
			b.warn.add("tool-call-null", at.at(i), "null tool call skipped")
			continue
		}
		id, looseID := takeField(c, "tool_call_id", "id")
		name, looseName := takeField(c, "function_name", "name")
		if looseID || looseName {
			b.warn.add("loose-call", at.at(i), "tool call uses {id,name,arguments} instead of {tool_call_id,function_name,arguments}")
		}
		if id == "" {
			b.warn.add("tool-call-id-missing", at.at(i), "tool call has no tool_call_id")
		}
		args, valid := format.ArgumentsText(c["arguments"])
		delete(c, "arguments")
		b.callsByID[id] = append(b.callsByID[id], len(b.sl.ToolCalls))
		b.sl.ToolCalls = append(b.sl.ToolCalls, model.ToolCall{
			StepID: stepID, ToolCallID: id, FunctionName: name, Arguments: args, ArgumentsValid: valid,
		})
		b.calls = append(b.calls, callMeta{rest: c})
	}
}

// takeField reads and removes c[key], or else the loose producers' alt key
// (loose is then true).
func takeField(c object, key, alt string) (v string, loose bool) {
	if raw, ok := c[key]; ok {
		delete(c, key)
		return format.String(raw), false
	}
	raw, ok := c[alt]
	if !ok {
		return "", false
	}
	delete(c, alt)
	return format.String(raw), true
}
