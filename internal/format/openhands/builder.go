package openhands

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// defaultAgent is runs.agent_name when metadata.agent_class is absent.
const defaultAgent = "openhands"

// noCallActions are actions that give a step but no tool call: messages,
// the system prompt, the final answer and agent-state changes answer to no
// observation.
var noCallActions = map[string]bool{"message": true, "system": true, "finish": true, "change_agent_state": true, "null": true}

// loc says where the Storyline's data sits: its line (jsonl), or 0 for a
// json document; warnings add a JSON pointer inside it.
type loc struct {
	line int64
}

// builder accumulates one Storyline.
type builder struct {
	src    format.Source
	layout string
	loc    loc
	sl     *model.Storyline
	// calls maps an action event id to its tool call index, while it
	// waits for its observation; answered ids move to answered.
	calls    map[string]int
	answered map[string]bool
	seen     map[string]bool // ids of every event seen (for cause checks)
	meta     map[int]json.RawMessage
	stepIDs  map[string]bool
	counted  map[string]string // model_response id → step id whose usage was counted
	finished bool
	invalid  []json.RawMessage
	anyModel string
}

func newBuilder(src format.Source, layout string, l loc) *builder {
	return &builder{src: src, layout: layout, loc: l,
		sl:    &model.Storyline{Run: model.Run{SourceFormat: format.OpenHands + "/" + layout}},
		calls: map[string]int{}, answered: map[string]bool{}, seen: map[string]bool{},
		meta: map[int]json.RawMessage{}, stepIDs: map[string]bool{}, counted: map[string]string{}}
}

func (b *builder) warn(msg string, parts ...any) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{Line: b.loc.line, Pointer: format.Pointer(parts...), Message: msg})
}

// idSet makes session ids taken from the data unique within one file.
type idSet map[string]int

// identity sets run and session ids: the data's id when it has one (a
// repeat gets #n, with the original kept), else the derived one.
func (b *builder) identity(ids idSet, dataID, derived string) {
	r := &b.sl.Run
	if dataID == "" {
		r.RunID, r.SessionID = derived, derived
		return
	}
	r.RunID, r.SessionID = dataID, dataID
	n := ids[dataID]
	ids[dataID] = n + 1
	if n == 0 {
		return
	}
	for {
		n++
		cand := dataID + "#" + strconv.Itoa(n)
		if ids[cand] == 0 {
			ids[cand] = 1
			r.SessionID, r.OriginalSessionID = cand, model.Str(dataID)
			return
		}
	}
}

// record maps an output line (or a trajectory object): its history gives
// the steps; every other member goes to runs.extra, and some also to
// columns.
func (b *builder) record(obj map[string]jsonx.RawMessage, ids idSet, derived string) {
	b.identity(ids, format.String(obj["instance_id"]), derived)
	r := &b.sl.Run
	if elems, isArray := format.SplitArray(obj["history"]); isArray {
		b.events(elems, "history")
		delete(obj, "history")
	} else if _, ok := obj["history"]; ok {
		b.warn("history is not an array; kept in runs.extra", "history")
	} else {
		b.warn("record has no history; the Storyline has no steps")
	}
	delete(obj, "instance_id")
	if meta := format.SplitObject(obj["metadata"]); meta != nil {
		if a := format.String(meta["agent_class"]); a != "" {
			r.AgentName = model.Str(a)
		}
		if llm := format.SplitObject(meta["llm_config"]); llm != nil {
			r.AgentModelName = model.Str(format.String(llm["model"]))
		}
	}
	if m := format.SplitObject(obj["metrics"]); m != nil {
		if c, ok := format.Float(m["accumulated_cost"]); ok {
			r.ReportedCostUSD = model.Float(c)
		}
		if u := format.SplitObject(m["accumulated_token_usage"]); u != nil {
			if v, ok := format.Int(u["prompt_tokens"]); ok {
				r.ReportedPromptTokens = model.Int(v)
			}
			if v, ok := format.Int(u["completion_tokens"]); ok {
				r.ReportedCompletionTokens = model.Int(v)
			}
			if v, ok := format.Int(u["cache_read_tokens"]); ok {
				r.ReportedCachedTokens = model.Int(v)
			}
		}
	}
	if raw, ok := obj["error"]; ok && !format.IsNull(raw) && format.String(raw) != "" {
		r.Status = model.StatusError
	}
	r.Extra = format.StripExtra(format.Extra(obj))
}

// events maps the event list; ptr names it in warnings ("" for a
// top-level array).
func (b *builder) events(elems [][]byte, ptr string) {
	at := func(i int, parts ...any) []any {
		if ptr == "" {
			return append([]any{i}, parts...)
		}
		return append([]any{ptr, i}, parts...)
	}
	for i, raw := range elems {
		ev := format.SplitObject(raw)
		if ev == nil {
			b.warn("event is not a JSON object; kept in runs.extra.invalid_events", at(i)...)
			b.invalid = append(b.invalid, append(json.RawMessage(nil), raw...))
			continue
		}
		b.event(i, ev, at)
	}
}

func (b *builder) event(i int, ev map[string]jsonx.RawMessage, at func(int, ...any) []any) {
	id := ""
	if v, ok := format.Int(ev["id"]); ok {
		id = strconv.FormatInt(v, 10)
	} else if s := format.String(ev["id"]); s != "" {
		id = s
	}
	if id == "" {
		id = "event-" + strconv.Itoa(i)
		b.warn("event has no id; step id "+strconv.Quote(id), at(i, "id")...)
	} else {
		delete(ev, "id")
	}
	eventID := id
	if b.stepIDs[id] {
		b.warn("event id "+strconv.Quote(id)+" repeats an earlier event; the step id gets a #n suffix", at(i, "id")...)
		for k := 2; ; k++ {
			if c := id + "#" + strconv.Itoa(k); !b.stepIDs[c] {
				id = c
				break
			}
		}
	}
	b.stepIDs[id] = true
	var ts *time.Time
	if raw, ok := ev["timestamp"]; ok {
		if t, ok := format.Time(raw); ok {
			ts = model.Time(t)
			delete(ev, "timestamp")
		} else if !format.IsNull(raw) {
			b.warn("timestamp is not a timestamp; kept in the step extra", at(i, "timestamp")...)
		}
	}
	_, isAction := ev["action"]
	_, isObs := ev["observation"]
	switch {
	case isAction:
		b.action(i, id, eventID, ts, ev, at)
		b.seen[eventID] = true
	case isObs:
		b.observation(i, id, ts, ev, at)
		b.seen[eventID] = true
	default:
		b.warn("event has neither action nor observation; kept as a system step", at(i)...)
		st := model.Step{StepID: id, Source: model.SourceSystem, MessageKind: "system_op", Timestamp: ts}
		if m := format.String(ev["message"]); m != "" {
			st.MessageValue = model.StrAlways(m)
			delete(ev, "message")
		}
		st.Extra = format.StripExtra(format.Extra(ev))
		b.sl.Steps = append(b.sl.Steps, st)
	}
}

// source maps an event source to a step source.
func source(s string) string {
	switch s {
	case "user":
		return model.SourceUser
	case "agent":
		return model.SourceAgent
	}
	return model.SourceSystem
}

func (b *builder) action(i int, id, eventID string, ts *time.Time, ev map[string]jsonx.RawMessage, at func(int, ...any) []any) {
	action := format.String(ev["action"])
	src := format.String(ev["source"])
	args := format.SplitObject(ev["args"])
	_, argsPresent := ev["args"]
	if args == nil && argsPresent && !format.IsNull(ev["args"]) {
		b.warn("args is not an object; kept in the step extra", at(i, "args")...)
	}
	st := model.Step{StepID: id, Source: source(src), MessageKind: format.KindText, Timestamp: ts}
	// text takes the first non-empty args member among keys, else message.
	text := func(keys ...string) {
		for _, k := range keys {
			if v, ok := args[k]; ok && format.String(v) != "" {
				t, kind, _ := format.Content(v)
				st.MessageValue, st.MessageKind = model.StrAlways(t), kind
				delete(args, k)
				return
			}
		}
		if m := format.String(ev["message"]); m != "" {
			st.MessageValue = model.StrAlways(m)
			delete(ev, "message")
		}
	}
	meta := format.SplitObject(ev["tool_call_metadata"])
	countedOn := b.usage(&st, meta)
	call := !noCallActions[action]
	switch action {
	case "message":
		text("content")
	case "system":
		st.Source = model.SourceSystem
		text("content")
	case "finish":
		st.Source = model.SourceAgent
		text("final_thought", "thought")
		b.finished = true
	case "change_agent_state", "null":
		st.MessageKind = "system_op"
		text()
	default:
		text("thought")
	}
	if call {
		tc := model.ToolCall{StepID: id, ToolCallID: format.String(meta["tool_call_id"]), FunctionName: format.String(meta["function_name"])}
		if tc.ToolCallID == "" {
			tc.ToolCallID = "oh-" + id
		}
		if tc.FunctionName == "" {
			tc.FunctionName = action
		}
		if args != nil {
			// A non-empty thought is the step text (taken above); an empty
			// one carries nothing.
			delete(args, "thought")
			a := "{}"
			if e := format.Extra(args); e != nil {
				a = *e
			}
			tc.Arguments, tc.ArgumentsValid = model.StrAlways(a), true
		} else {
			tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(ev["args"])
		}
		delete(ev, "args")
		if meta != nil {
			delete(meta, "tool_call_id")
			delete(meta, "function_name")
			b.meta[len(b.sl.ToolCalls)] = append(json.RawMessage(nil), ev["tool_call_metadata"]...)
			if e := format.Extra(meta); e != nil {
				ev["tool_call_metadata"] = json.RawMessage(*e)
			} else {
				delete(ev, "tool_call_metadata")
			}
		}
		if st.MessageValue == nil {
			st.MessageKind = "tool_calls_only"
		}
		b.calls[eventID] = len(b.sl.ToolCalls) // a later action with the same id takes over
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	} else if args != nil {
		if e := format.Extra(args); e != nil {
			ev["args"] = json.RawMessage(*e)
		} else {
			delete(ev, "args")
		}
	}
	if source(src) == st.Source {
		delete(ev, "source") // implied by the step source
	}
	dropMessage(ev, st.MessageValue)
	st.Extra = format.StripExtra(format.Extra(ev))
	if countedOn != "" {
		st.Extra = format.MergeExtra(st.Extra, "usage_counted_on", mustJSON(countedOn))
	}
	b.sl.Steps = append(b.sl.Steps, st)
}

func mustJSON(v any) json.RawMessage {
	raw, _ := jsonx.Marshal(v)
	return raw
}

// usage applies tool_call_metadata.model_response to an action step:
// model → model_name; usage prompt_tokens / completion_tokens /
// prompt_tokens_details.cached_tokens → token columns, counted once per
// model_response id: a later step of the same response gets no tokens and
// returns the step id they were counted on.
func (b *builder) usage(st *model.Step, meta map[string]jsonx.RawMessage) (countedOn string) {
	resp := format.SplitObject(meta["model_response"])
	if resp == nil {
		return ""
	}
	if m := format.String(resp["model"]); m != "" {
		st.ModelName = model.Str(m)
		if b.anyModel == "" {
			b.anyModel = m
		}
	}
	u := format.SplitObject(resp["usage"])
	if u == nil {
		return ""
	}
	if rid := format.String(resp["id"]); rid != "" {
		if on, ok := b.counted[rid]; ok {
			return on
		}
		b.counted[rid] = st.StepID
	}
	if v, ok := format.Int(u["prompt_tokens"]); ok {
		st.PromptTokens = model.Int(v)
	}
	if v, ok := format.Int(u["completion_tokens"]); ok {
		st.CompletionTokens = model.Int(v)
	}
	if d := format.SplitObject(u["prompt_tokens_details"]); d != nil {
		if v, ok := format.Int(d["cached_tokens"]); ok {
			st.CachedTokens = model.Int(v)
		}
	}
	if d := format.SplitObject(u["completion_tokens_details"]); d != nil {
		if v, ok := format.Int(d["reasoning_tokens"]); ok {
			st.ReasoningTokens = model.Int(v)
		}
	}
	return ""
}

func (b *builder) observation(i int, id string, ts *time.Time, ev map[string]jsonx.RawMessage, at func(int, ...any) []any) {
	obs := format.String(ev["observation"])
	st := model.Step{StepID: id, Source: model.SourceTool, MessageKind: format.KindText, Timestamp: ts}
	if raw, ok := ev["content"]; ok {
		if t, kind, ok := format.Content(raw); ok {
			st.MessageValue, st.MessageKind = model.StrAlways(t), kind
		}
		delete(ev, "content")
	}
	cause := ""
	if v, ok := format.Int(ev["cause"]); ok {
		cause = strconv.FormatInt(v, 10)
	} else {
		cause = format.String(ev["cause"])
	}
	idx, linked := b.calls[cause]
	if cause != "" && linked {
		delete(b.calls, cause)
		b.answered[cause] = true
		tc := &b.sl.ToolCalls[idx]
		status := model.ResultOK
		if obs == "error" || nonZeroExit(ev["extras"]) {
			status = model.ResultError
		}
		tc.Result, tc.ResultStatus, tc.ResultLink = st.MessageValue, status, model.LinkByID
		if tc.Result == nil {
			tc.Result = model.StrAlways("")
		}
		tc.ResultStepID = model.Str(id)
		// The observation repeats its action's tool_call_metadata: not kept twice.
		if m, ok := ev["tool_call_metadata"]; ok && string(m) == string(b.meta[idx]) {
			delete(ev, "tool_call_metadata")
		}
	} else {
		st.Source, st.MessageKind = model.SourceSystem, "system_op"
		if m := format.String(ev["message"]); model.Deref(st.MessageValue) == "" && m != "" {
			st.MessageValue = model.StrAlways(m)
			delete(ev, "message")
		}
		switch {
		case cause != "" && b.answered[cause]:
			b.warn("observation answers event "+strconv.Quote(cause)+" whose call already has a result; kept as a system step", at(i, "cause")...)
		case cause != "" && !b.seen[cause]:
			b.warn("observation cause "+strconv.Quote(cause)+" names no earlier event; kept as a system step", at(i, "cause")...)
		}
	}
	dropMessage(ev, st.MessageValue)
	st.Extra = format.StripExtra(format.Extra(ev))
	b.sl.Steps = append(b.sl.Steps, st)
}

// dropMessage removes the event message from what goes to the step extra
// when it is empty or repeats the step text.
func dropMessage(ev map[string]jsonx.RawMessage, text *string) {
	raw, ok := ev["message"]
	if !ok {
		return
	}
	if m := format.String(raw); m == "" || m == model.Deref(text) {
		delete(ev, "message")
	}
}

// nonZeroExit reports whether extras.exit_code (or
// extras.metadata.exit_code) is a non-zero number.
func nonZeroExit(raw jsonx.RawMessage) bool {
	ex := format.SplitObject(raw)
	if ex == nil {
		return false
	}
	code, ok := ex["exit_code"]
	if !ok {
		code = format.SplitObject(ex["metadata"])["exit_code"]
	}
	v, ok := format.Float(code)
	return ok && v != 0
}

// finish fills run columns derived from the steps, then Finalize.
func (b *builder) finish() *model.Storyline {
	sl := b.sl
	r := &sl.Run
	if r.AgentName == nil {
		r.AgentName = model.Str(defaultAgent)
	}
	if r.AgentModelName == nil {
		r.AgentModelName = model.Str(b.anyModel)
	}
	if r.Status == "" {
		r.Status = model.StatusUnknown
		if b.finished {
			r.Status = model.StatusCompleted
		}
	}
	if len(b.invalid) > 0 {
		raw, _ := jsonx.Marshal(b.invalid)
		r.Extra = format.MergeExtra(r.Extra, "invalid_events", raw)
	}
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		b.warn(fmt.Sprintf("%d tool call(s) have no result", missing))
	}
	r.StartedAt, r.EndedAt = format.StepTimeRange(sl.Steps)
	sl.Finalize(b.src.File)
	return sl
}
