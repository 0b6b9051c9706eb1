package openhands

import (
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// OpenHands V1 (software-agent-sdk) events carry their type in "kind":
// ActionEvent (one tool call of the model), ObservationEvent /
// AgentErrorEvent / UserRejectObservation (its result, naming the call by
// tool_call_id and the action by action_id), MessageEvent,
// SystemPromptEvent, and non-conversation events (state updates, token
// logs, condensation, hooks, errors). docs/formats.md (OpenHands, V1
// events) has the mapping.

// v1Kinds are the kinds that are not "...Event"-named.
var v1Kinds = map[string]bool{"Condensation": true, "CondensationRequest": true, "UserRejectObservation": true}

// v1Kind returns the event's kind when it is a V1 event: a string kind
// ending in Event (or a known other kind) next to id and source.
func v1Kind(ev map[string]jsonx.RawMessage) (string, bool) {
	raw, ok := ev["kind"]
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	kind := format.ValidString(raw)
	return kind, isV1Kind(kind)
}

func isV1Kind(kind string) bool {
	return strings.HasSuffix(kind, "Event") || v1Kinds[kind]
}

// notSteps are V1 events that are no conversation step: they are counted
// in runs.extra.event_counts, and state updates also give run columns.
var notSteps = map[string]bool{"ConversationStateUpdateEvent": true, "TokenEvent": true, "LLMCompletionLogEvent": true}

// v1State is what a V1 event stream says about the run as a whole.
type v1State struct {
	counts  map[string]int
	state   map[string]jsonx.RawMessage // last value per state key
	errored bool
}

func (b *builder) v1Event(i int, kind string, ev map[string]jsonx.RawMessage, at func(int, ...any) []any) {
	if notSteps[kind] {
		if b.v1.counts == nil {
			b.v1.counts = map[string]int{}
		}
		b.v1.counts[kind]++
		if kind == "ConversationStateUpdateEvent" {
			if b.v1.state == nil {
				b.v1.state = map[string]jsonx.RawMessage{}
			}
			if key := format.ValidString(ev["key"]); key != "" {
				b.v1.state[key] = ev["value"]
			}
		}
		return
	}
	id, eventID, ts := b.eventIdentity(i, ev, at, true)
	b.seen[eventID] = true
	delete(ev, "kind")
	dropNulls(ev)
	src := format.ValidString(ev["source"])
	st := model.Step{StepID: id, Source: source(src), MessageKind: format.KindText, Timestamp: ts}
	switch kind {
	case "ActionEvent":
		b.v1Action(&st, eventID, ev, i, at)
	case "ObservationEvent", "AgentErrorEvent", "UserRejectObservation":
		b.v1Observation(&st, kind, ev, i, at)
	case "MessageEvent":
		msg := format.SplitObject(ev["llm_message"])
		st.MessageValue, st.MessageKind = format.ValidContentText(msg["content"])
		st.Reasoning = model.Str(format.ValidString(msg["reasoning_content"]))
		rest := format.Without(msg, "content", "reasoning_content", "role")
		if format.ValidString(msg["role"]) != src && !(src == "agent" && format.ValidString(msg["role"]) == "assistant") {
			rest["role"] = msg["role"]
		}
		dropNulls(rest)
		setOrDrop(ev, "llm_message", rest)
	case "SystemPromptEvent":
		st.Source = model.SourceSystem
		st.MessageValue, _ = format.ValidContentText(format.SplitObject(ev["system_prompt"])["text"])
		delete(ev, "system_prompt")
	case "ConversationErrorEvent":
		st.Source, st.MessageKind = model.SourceSystem, "system_op"
		st.MessageValue = model.Str(format.ValidString(ev["detail"]))
		delete(ev, "detail")
		b.v1.errored = true
	case "Condensation", "CondensationSummaryEvent", "CondensationRequest", "PauseEvent", "InterruptEvent", "HookExecutionEvent":
		st.Source, st.MessageKind = model.SourceSystem, "system_op"
		if s := format.ValidString(ev["summary"]); s != "" {
			st.MessageValue = model.StrAlways(s)
			delete(ev, "summary")
		}
	default:
		st.Source, st.MessageKind = model.SourceSystem, "system_op"
		b.warn("unknown OpenHands event kind "+strconv.Quote(kind)+"; kept as a system step", at(i, "kind")...)
	}
	if source(src) == st.Source || st.Source == model.SourceTool && src == "environment" {
		delete(ev, "source") // implied by the step source
	}
	ev["kind"] = jsonx.AppendQuoted(nil, kind) // as mustJSON writes it, without the encoder
	st.Extra = format.StripExtra(extra(ev))
	b.sl.Steps = append(b.sl.Steps, st)
}

// v1Action maps an ActionEvent: its thought is the step text and its
// tool_call the call (id, name, the model's arguments); the parsed action
// that ran goes to the call's extra.
func (b *builder) v1Action(st *model.Step, eventID string, ev map[string]jsonx.RawMessage, i int, at func(int, ...any) []any) {
	st.MessageValue, st.MessageKind = format.ValidContentText(ev["thought"])
	if st.MessageValue != nil && *st.MessageValue == "" {
		st.MessageValue = nil
	}
	st.Reasoning = model.Str(format.ValidString(ev["reasoning_content"]))
	delete(ev, "thought")
	delete(ev, "reasoning_content")
	call := format.SplitObject(ev["tool_call"])
	tc := model.ToolCall{StepID: st.StepID, ToolCallID: format.ValidString(ev["tool_call_id"]), FunctionName: format.ValidString(ev["tool_name"])}
	if tc.ToolCallID == "" {
		tc.ToolCallID = format.ValidString(call["id"])
	}
	if tc.FunctionName == "" {
		tc.FunctionName = format.ValidString(call["name"])
	}
	if tc.ToolCallID == "" {
		tc.ToolCallID = "oh-" + st.StepID
		b.warn("action has no tool_call_id", at(i, "tool_call_id")...)
	}
	if raw, ok := call["arguments"]; ok {
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(raw)
	} else if action := format.SplitObject(ev["action"]); action != nil {
		tc.Arguments, tc.ArgumentsValid = model.StrAlways(model.Deref(extra(format.Without(action, "kind")))), true
	}
	x := format.Without(call, "id", "name", "arguments")
	dropNulls(x)
	if action, ok := ev["action"]; ok {
		x["action"] = action
	}
	tc.Extra = extra(x)
	delete(ev, "tool_call")
	delete(ev, "action")
	delete(ev, "tool_call_id")
	delete(ev, "tool_name")
	if st.MessageValue == nil {
		st.MessageKind = "tool_calls_only"
	}
	if tc.FunctionName == "finish" {
		b.finished = true
	}
	b.calls[eventID] = len(b.sl.ToolCalls)
	if _, dup := b.callIDs[tc.ToolCallID]; !dup {
		b.callIDs[tc.ToolCallID] = len(b.sl.ToolCalls)
	}
	b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
}

// v1Observation links a result to its call, by tool_call_id, else by
// action_id. One whose action is not in the file keeps its result as a
// call of its own (result_link orphan), with a warning.
func (b *builder) v1Observation(st *model.Step, kind string, ev map[string]jsonx.RawMessage, i int, at func(int, ...any) []any) {
	st.Source = model.SourceTool
	status := model.ResultOK
	switch kind {
	case "AgentErrorEvent":
		st.MessageValue, status = model.StrAlways(format.ValidString(ev["error"])), model.ResultError
		delete(ev, "error")
	case "UserRejectObservation":
		st.MessageValue, status = model.StrAlways(format.ValidString(ev["rejection_reason"])), model.ResultError
		delete(ev, "rejection_reason")
	default:
		obs := format.SplitObject(ev["observation"])
		// The SDK's observations hold their text in content (text
		// parts); earlier releases in output (commands) or message.
		for _, k := range []string{"content", "output", "message"} {
			if raw, ok := obs[k]; ok {
				st.MessageValue, st.MessageKind = format.ValidContentText(raw)
				delete(obs, k)
				break
			}
		}
		if isErr, _ := format.Bool(obs["is_error"]); isErr || exitNonZero(obs["exit_code"], obs["metadata"]) {
			status = model.ResultError
		} else if isErr, _ := format.Bool(obs["error"]); isErr {
			status = model.ResultError
		}
		dropNulls(obs)
		setOrDrop(ev, "observation", obs)
	}
	callID, actionID := format.ValidString(ev["tool_call_id"]), format.ValidString(ev["action_id"])
	idx, ok := b.callIDs[callID]
	if !ok || b.sl.ToolCalls[idx].ResultStatus != "" {
		idx, ok = b.calls[actionID]
	}
	if ok && b.sl.ToolCalls[idx].ResultStatus == "" {
		tc := &b.sl.ToolCalls[idx]
		tc.Result, tc.ResultStatus, tc.ResultLink, tc.ResultStepID = orEmpty(st.MessageValue), status, model.LinkByID, model.Str(st.StepID)
		delete(ev, "tool_call_id")
		delete(ev, "action_id")
		delete(ev, "tool_name")
		return
	}
	what := "tool call " + strconv.Quote(callID)
	if callID == "" {
		what = "action " + strconv.Quote(actionID)
	}
	b.warn("observation answers "+what+", whose action is not in the file; its result is kept as an orphan call", at(i)...)
	tc := model.ToolCall{StepID: st.StepID, ToolCallID: callID, FunctionName: format.ValidString(ev["tool_name"]),
		Result: orEmpty(st.MessageValue), ResultStatus: status, ResultLink: linkOrphan}
	if tc.ToolCallID == "" {
		tc.ToolCallID = "oh-" + st.StepID
	}
	delete(ev, "tool_call_id")
	delete(ev, "tool_name")
	b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
}

// v1Finish applies what the stream's state updates said: the last
// execution_status gives the status when the steps do not (finished →
// completed, error or stuck → error, paused → cancelled); the last stats
// give the reported totals (every LLM usage of the conversation summed);
// the last value of every key and the counts of non-step events go to
// runs.extra.
func (b *builder) v1Finish() {
	r := &b.sl.Run
	if b.v1.errored && r.Status == "" {
		r.Status = model.StatusError
	}
	if exec := format.ValidString(b.v1.state["execution_status"]); r.Status == "" && !b.finished {
		switch exec {
		case "finished":
			r.Status = model.StatusCompleted
		case "error", "stuck":
			r.Status = model.StatusError
		case "paused":
			r.Status = model.StatusCancelled
		}
	}
	if usage := format.SplitObject(format.SplitObject(b.v1.state["stats"])["usage_to_metrics"]); usage != nil && r.ReportedCostUSD == nil {
		var cost float64
		var prompt, completion, cached int64
		for _, raw := range usage {
			m := format.SplitObject(raw)
			if c, ok := format.Float(m["accumulated_cost"]); ok {
				cost += c
			}
			u := format.SplitObject(m["accumulated_token_usage"])
			prompt += deref(format.IntOf(u["prompt_tokens"]))
			completion += deref(format.IntOf(u["completion_tokens"]))
			cached += deref(format.IntOf(u["cache_read_tokens"]))
		}
		r.ReportedCostUSD = model.Float(cost)
		if r.AgentModelName == nil { // the agent's LLM, else any
			for _, k := range []string{"agent", "default"} {
				if m := format.ValidString(format.SplitObject(usage[k])["model_name"]); m != "" {
					r.AgentModelName = model.Str(m)
					break
				}
			}
		}
		r.ReportedPromptTokens, r.ReportedCompletionTokens, r.ReportedCachedTokens = model.Int(prompt), model.Int(completion), model.Int(cached)
	}
	if len(b.v1.state) > 0 {
		r.Extra = format.MergeExtra(r.Extra, "conversation_state", jsonx.RawMessage(*extra(b.v1.state)))
	}
	if len(b.v1.counts) > 0 {
		r.Extra = format.MergeExtra(r.Extra, "event_counts", mustJSON(b.v1.counts))
	}
}

func orEmpty(s *string) *string {
	if s == nil {
		return model.StrAlways("")
	}
	return s
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// dropNulls removes null and empty-list members: V1 events write every
// optional field, and those carry nothing worth an extra key.
func dropNulls(m map[string]jsonx.RawMessage) {
	for k, v := range m {
		if format.IsNull(v) || string(v) == "[]" {
			delete(m, k)
		}
	}
}

// setOrDrop puts what is left of a nested object back into ev[key], or
// removes the key when nothing is left.
func setOrDrop(ev map[string]jsonx.RawMessage, key string, rest map[string]jsonx.RawMessage) {
	if e := extra(rest); e != nil {
		ev[key] = jsonx.RawMessage(*e)
	} else {
		delete(ev, key)
	}
}
