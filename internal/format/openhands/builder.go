package openhands

import (
	"bytes"
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

// Result links this adapter adds to model.LinkByID.
const (
	linkByOrder = "order"  // legacy events carry no cause: the observation answers the latest waiting call
	linkInline  = "inline" // finish has no observation: its final thought is its result
	linkOrphan  = "orphan" // the observation's action is not in the file
)

// noCallActions are V0 actions that are not tool calls: conversation and
// control events (message, system prompt, agent state, pause/resume/stop),
// memory management (condensation) and recall, a knowledge lookup the
// controller issues for each user message. An action with
// tool_call_metadata is always a call: the model called a tool.
var noCallActions = map[string]bool{
	"message": true, "system": true, "recall": true, "change_agent_state": true, "null": true,
	"pause": true, "resume": true, "stop": true, "condensation": true, "condensation_request": true,
}

// actionEnvelope and observationEnvelope are the members of a V0 event
// that are not action args or observation extras; legacy events inline
// their args and extras beside them.
var (
	actionEnvelope      = []string{"id", "timestamp", "source", "message", "action", "cause", "timeout", "tool_call_metadata", "llm_metrics", "args"}
	observationEnvelope = []string{"id", "timestamp", "source", "message", "observation", "cause", "tool_call_metadata", "content", "extras", "success"}
)

// loc says where the Storyline's data sits: its line (jsonl), or 0 for a
// json document; warnings add a JSON pointer inside it. The event stream
// layout moves it to each event's line.
type loc struct {
	line int64
}

// builder accumulates one Storyline. Every value it maps is split from a
// validated line or document, so strings and content are read with
// format.ValidString and ValidContent, without a second scan.
type builder struct {
	src format.Source
	loc loc
	sl  *model.Storyline
	// calls maps an action event id to its tool call index, while it
	// waits for its observation; answered ids move to answered. callIDs
	// does the same by tool call id (V1 observations name both).
	calls    map[string]int
	callIDs  map[string]int
	answered map[string]bool
	waiting  []string // event ids of waiting calls, oldest first (legacy linking)
	recalls  map[string]int
	seen     map[string]bool // ids of every event seen (for cause checks)
	meta     map[int]json.RawMessage
	stepIDs  map[string]bool
	counted  map[string]string // model_response id → step id whose usage was counted
	finished bool
	invalid  []json.RawMessage
	anyModel string
	v1       v1State
	// agentSpoke: a legacy event without source after an agent action is
	// the agent's.
	agentSpoke bool
}

func newBuilder(src format.Source, layout string, l loc) *builder {
	return &builder{src: src, loc: l,
		sl:    &model.Storyline{Run: model.Run{SourceFormat: format.OpenHands + "/" + layout}},
		calls: map[string]int{}, callIDs: map[string]int{}, answered: map[string]bool{}, recalls: map[string]int{},
		seen: map[string]bool{}, meta: map[int]json.RawMessage{}, stepIDs: map[string]bool{}, counted: map[string]string{}}
}

func (b *builder) warn(msg string, parts ...any) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{Line: b.loc.line, Pointer: format.Pointer(parts...), Message: msg})
}

// identity sets run and session ids: the data's id when it has one, else
// the derived one. A record's id is made unique within its file later
// (outputRecords.Finish).
func (b *builder) identity(dataID, derived string) {
	r := &b.sl.Run
	if dataID == "" {
		dataID = derived
	}
	r.RunID, r.SessionID = dataID, dataID
}

// record maps an output line (or a trajectory object): its history gives
// the steps; every other member goes to runs.extra, and some also to
// columns. It returns the record's own id ("" when it has none).
func (b *builder) record(obj map[string]jsonx.RawMessage, hist history, derived string) (id string) {
	id = recordID(obj)
	b.identity(id, derived)
	r := &b.sl.Run
	if hist.isArray {
		b.events(hist.elems, hist.events, "history")
		delete(obj, "history")
	} else if _, ok := obj["history"]; ok {
		b.warn("history is not an array; kept in runs.extra", "history")
	} else {
		b.warn("record has no history; the Storyline has no steps")
	}
	delete(obj, "instance_id")
	if meta := format.SplitObject(obj["metadata"]); meta != nil {
		if a := format.ValidString(meta["agent_class"]); a != "" {
			r.AgentName = model.Str(a)
		}
		// V0 names the model in llm_config, V1 (benchmarks) in llm.
		for _, k := range []string{"llm_config", "llm"} {
			if m := format.ValidString(format.SplitObject(meta[k])["model"]); m != "" && r.AgentModelName == nil {
				r.AgentModelName = model.Str(m)
			}
		}
	}
	if m := format.SplitObject(obj["metrics"]); m != nil {
		if c, ok := format.Float(m["accumulated_cost"]); ok {
			r.ReportedCostUSD = model.Float(c)
		}
		if u := format.SplitObject(m["accumulated_token_usage"]); u != nil {
			r.ReportedPromptTokens = format.IntOf(u["prompt_tokens"])
			r.ReportedCompletionTokens = format.IntOf(u["completion_tokens"])
			r.ReportedCachedTokens = format.IntOf(u["cache_read_tokens"])
		}
	}
	if raw, ok := obj["error"]; ok && !format.IsNull(raw) && format.ValidString(raw) != "" {
		r.Status = model.StatusError
	}
	b.outcome(obj)
	r.Extra = format.StripExtra(extra(obj))
	return id
}

// recordID is the line's instance_id, else a resolver line's issue as
// owner/repo#number.
func recordID(obj map[string]jsonx.RawMessage) string {
	if id := format.ValidString(obj["instance_id"]); id != "" {
		return id
	}
	issue := format.SplitObject(obj["issue"])
	owner, repo, number := format.ValidString(issue["owner"]), format.ValidString(issue["repo"]), format.ValidString(issue["number"])
	if owner == "" || repo == "" || number == "" {
		return ""
	}
	return owner + "/" + repo + "#" + number
}

// splitHistory is the history of obj, split from a validated record
// (its events are split when they are mapped).
func splitHistory(obj map[string]jsonx.RawMessage) history {
	elems, isArray := format.SplitArray(obj["history"])
	return history{elems: elems, isArray: isArray}
}

// events maps the event list, the members of whose first len(evs)
// elements are split already (nil for one that is not an object); ptr
// names it in warnings ("" for a top-level array).
func (b *builder) events(elems [][]byte, evs []map[string]jsonx.RawMessage, ptr string) {
	at := func(i int, parts ...any) []any {
		if ptr == "" {
			return append([]any{i}, parts...)
		}
		return append([]any{ptr, i}, parts...)
	}
	for i, raw := range elems {
		var ev map[string]jsonx.RawMessage
		if i < len(evs) {
			ev = evs[i]
		} else {
			ev = format.SplitObject(raw)
		}
		if ev == nil {
			b.warn("event is not a JSON object; kept in runs.extra.invalid_events", at(i)...)
			b.invalid = append(b.invalid, append(json.RawMessage(nil), raw...))
			continue
		}
		b.event(i, ev, at)
	}
}

// event maps one event of either generation: V1 (software-agent-sdk)
// events are typed by kind, V0 events by an action or observation name.
func (b *builder) event(i int, ev map[string]jsonx.RawMessage, at func(int, ...any) []any) {
	if kind, ok := v1Kind(ev); ok {
		b.v1Event(i, kind, ev, at)
		return
	}
	_, isAction := ev["action"]
	_, isObs := ev["observation"]
	legacy := isLegacy(ev)
	id, eventID, ts := b.eventIdentity(i, ev, at, !legacy)
	switch {
	case isAction:
		b.action(i, id, eventID, ts, ev, at, legacy)
		b.seen[eventID] = true
	case isObs:
		b.observation(i, id, ts, ev, at, legacy)
		b.seen[eventID] = true
	default:
		b.warn("event has neither action nor observation; kept as a system step", at(i)...)
		st := model.Step{StepID: id, Source: model.SourceSystem, MessageKind: "system_op", Timestamp: ts}
		if m := format.ValidString(ev["message"]); m != "" {
			st.MessageValue = model.StrAlways(m)
			delete(ev, "message")
		}
		st.Extra = format.StripExtra(extra(ev))
		b.sl.Steps = append(b.sl.Steps, st)
	}
}

// isLegacy recognizes the flat form of early OpenHands histories (the
// resolver's output): no id and no source, args and extras inlined.
func isLegacy(ev map[string]jsonx.RawMessage) bool {
	_, hasID := ev["id"]
	_, hasSource := ev["source"]
	return !hasID && !hasSource
}

// eventIdentity takes the event's id (as step id, made unique) and
// timestamp out of ev. An event without id gets event-<index>, with a
// warning when warnMissing.
func (b *builder) eventIdentity(i int, ev map[string]jsonx.RawMessage, at func(int, ...any) []any, warnMissing bool) (id, eventID string, ts *time.Time) {
	if v, ok := format.Int(ev["id"]); ok {
		id = strconv.FormatInt(v, 10)
	} else if s := format.ValidString(ev["id"]); s != "" {
		id = s
	}
	if id == "" {
		id = "event-" + strconv.Itoa(i)
		if warnMissing {
			b.warn("event has no id; step id "+strconv.Quote(id), at(i, "id")...)
		}
	} else {
		delete(ev, "id")
	}
	eventID = id
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
	if raw, ok := ev["timestamp"]; ok {
		if t, ok := format.Time(raw); ok {
			ts = model.Time(t)
			delete(ev, "timestamp")
		} else if !format.IsNull(raw) {
			b.warn("timestamp is not a timestamp; kept in the step extra", at(i, "timestamp")...)
		}
	}
	return id, eventID, ts
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

// inlined moves the members of a legacy event that are not envelope keys
// into an object, as the current form nests them in args / extras.
func inlined(ev map[string]jsonx.RawMessage, envelope []string) map[string]jsonx.RawMessage {
	out := map[string]jsonx.RawMessage{}
outer:
	for k, v := range ev {
		for _, e := range envelope {
			if k == e {
				continue outer
			}
		}
		out[k] = v
		delete(ev, k)
	}
	return out
}

func (b *builder) action(i int, id, eventID string, ts *time.Time, ev map[string]jsonx.RawMessage, at func(int, ...any) []any, legacy bool) {
	action := format.ValidString(ev["action"])
	src := format.ValidString(ev["source"])
	if legacy {
		// Legacy events name no source: the task message comes first,
		// everything after the agent's first action is the agent's.
		src = "user"
		if action != "message" || b.agentSpoke {
			src = "agent"
		}
	}
	if src == "agent" && action != "message" {
		b.agentSpoke = true
	}
	var args map[string]jsonx.RawMessage
	argsRaw, argsPresent := ev["args"]
	if argsPresent {
		args = format.SplitObject(argsRaw)
		if args == nil && !format.IsNull(argsRaw) {
			b.warn("args is not an object; kept in the step extra", at(i, "args")...)
		}
	} else if legacy {
		args = inlined(ev, actionEnvelope)
	}
	st := model.Step{StepID: id, Source: source(src), MessageKind: format.KindText, Timestamp: ts}
	// text takes the first non-empty args member among keys, else message.
	text := func(keys ...string) {
		for _, k := range keys {
			if t, kind, ok := textContent(args[k]); ok {
				st.MessageValue, st.MessageKind = model.StrAlways(t), kind
				delete(args, k)
				return
			}
		}
		if m := format.ValidString(ev["message"]); m != "" {
			st.MessageValue = model.StrAlways(m)
			delete(ev, "message")
		}
	}
	meta := format.SplitObject(ev["tool_call_metadata"])
	countedOn := b.usage(&st, meta)
	call := !noCallActions[action] || meta != nil
	var finalThought string
	switch action {
	case "message":
		text("content")
	case "system":
		st.Source = model.SourceSystem
		text("content")
	case "finish":
		st.Source = model.SourceAgent
		// Its result: the final thought, else the outputs, else (before
		// final_thought existed) the thought.
		finalThought = format.ValidString(args["final_thought"])
		if out := extra(format.SplitObject(args["outputs"])); finalThought == "" && out != nil {
			finalThought = *out
		}
		if finalThought == "" {
			finalThought = format.ValidString(args["thought"])
		}
		raw, had := args["final_thought"]
		text("thought", "final_thought")
		if _, kept := args["final_thought"]; had && !kept {
			args["final_thought"] = raw // the step text, and the call's argument too
		}
		b.finished = true
	case "change_agent_state", "null":
		st.MessageKind = "system_op"
		text()
	default:
		text("thought")
	}
	if action == "recall" {
		b.recalls[eventID] = len(b.sl.Steps)
	}
	if call {
		tc := model.ToolCall{StepID: id, ToolCallID: format.ValidString(meta["tool_call_id"]), FunctionName: format.ValidString(meta["function_name"])}
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
			if e := extra(args); e != nil {
				a = *e
			}
			tc.Arguments, tc.ArgumentsValid = model.StrAlways(a), true
		} else {
			tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(argsRaw)
		}
		delete(ev, "args")
		if meta != nil {
			delete(meta, "tool_call_id")
			delete(meta, "function_name")
			b.meta[len(b.sl.ToolCalls)] = append(json.RawMessage(nil), ev["tool_call_metadata"]...)
			if e := extra(meta); e != nil {
				ev["tool_call_metadata"] = json.RawMessage(*e)
			} else {
				delete(ev, "tool_call_metadata")
			}
		}
		if st.MessageValue == nil {
			st.MessageKind = "tool_calls_only"
		}
		if action == "finish" {
			// finish has no observation: the final thought is its result.
			tc.Result, tc.ResultStatus, tc.ResultLink = model.StrAlways(finalThought), model.ResultOK, linkInline
		} else {
			b.calls[eventID] = len(b.sl.ToolCalls) // a later action with the same id takes over
			b.waiting = append(b.waiting, eventID)
		}
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	} else if args != nil {
		if e := extra(args); e != nil {
			ev["args"] = json.RawMessage(*e)
		} else {
			delete(ev, "args")
		}
	}
	if source(src) == st.Source {
		delete(ev, "source") // implied by the step source
	}
	dropMessage(ev, st.MessageValue)
	st.Extra = format.StripExtra(extra(ev))
	if countedOn != "" {
		st.Extra = format.MergeExtra(st.Extra, "usage_counted_on", mustJSON(countedOn))
	}
	b.sl.Steps = append(b.sl.Steps, st)
}

// textContent is format.Content of raw when raw has text (format.String
// of it is not empty), decoded once: a string's content is its text.
func textContent(raw jsonx.RawMessage) (text, kind string, ok bool) {
	text, kind, ok = format.ValidContent(raw)
	if raw = bytes.TrimSpace(raw); ok && text == "" && raw[0] == '"' {
		return "", "", false
	}
	return text, kind, ok
}

func mustJSON(v any) json.RawMessage {
	raw, _ := jsonx.Marshal(v)
	return raw
}

// usage applies tool_call_metadata.model_response to an action step:
// model → model_name; usage (prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens, completion_tokens_details
// reasoning_tokens) → token columns, counted once per model_response id: a
// later step of the same response gets no tokens and returns the step id
// they were counted on.
func (b *builder) usage(st *model.Step, meta map[string]jsonx.RawMessage) (countedOn string) {
	resp := format.SplitObject(meta["model_response"])
	if resp == nil {
		return ""
	}
	if m := format.ValidString(resp["model"]); m != "" {
		st.ModelName = model.Str(m)
		if b.anyModel == "" {
			b.anyModel = m
		}
	}
	if format.SplitObject(resp["usage"]) == nil {
		return ""
	}
	if rid := format.ValidString(resp["id"]); rid != "" {
		if on, ok := b.counted[rid]; ok {
			return on
		}
		b.counted[rid] = st.StepID
	}
	u := format.ParseUsage(resp["usage"])
	u.Cost = nil // the response's own cost is not OpenHands' accounting
	u.Apply(st)
	return ""
}

func (b *builder) observation(i int, id string, ts *time.Time, ev map[string]jsonx.RawMessage, at func(int, ...any) []any, legacy bool) {
	obs := format.ValidString(ev["observation"])
	st := model.Step{StepID: id, Source: model.SourceTool, MessageKind: format.KindText, Timestamp: ts}
	if raw, ok := ev["content"]; ok {
		if t, kind, ok := format.ValidContent(raw); ok {
			st.MessageValue, st.MessageKind = model.StrAlways(t), kind
		}
		delete(ev, "content")
	}
	extras := ev["extras"]
	if _, ok := ev["extras"]; !ok && legacy {
		if e := extra(inlined(ev, observationEnvelope)); e != nil {
			ev["extras"] = json.RawMessage(*e)
			extras = ev["extras"]
		}
	}
	cause := ""
	if v, ok := format.Int(ev["cause"]); ok {
		cause = strconv.FormatInt(v, 10)
	} else {
		cause = format.ValidString(ev["cause"])
	}
	if legacy && cause == "" && len(b.waiting) > 0 {
		cause = b.waiting[len(b.waiting)-1]
	}
	if k, ok := b.recalls[cause]; ok && obs == "recall" {
		b.recallObservation(k, cause, id, ts, st.MessageValue, ev)
		return
	}
	status := model.ResultOK
	if ok, known := format.Bool(ev["success"]); obs == "error" || nonZeroExit(extras) || known && !ok {
		status = model.ResultError
	}
	idx, linked := b.calls[cause]
	switch {
	case cause != "" && linked:
		b.answer(cause)
		tc := &b.sl.ToolCalls[idx]
		tc.Result, tc.ResultStatus, tc.ResultLink = orEmpty(st.MessageValue), status, model.LinkByID
		if legacy && format.ValidString(ev["cause"]) == "" {
			tc.ResultLink = linkByOrder
		}
		tc.ResultStepID = model.Str(id)
		// The observation repeats its action's tool_call_metadata: not kept twice.
		if m, ok := ev["tool_call_metadata"]; ok && string(m) == string(b.meta[idx]) {
			delete(ev, "tool_call_metadata")
		}
	case !b.answered[cause] && !b.seen[cause] && (cause != "" || legacy) && isToolResult(obs, ev):
		// A tool's result whose action is not in the file: kept as a call
		// of its own.
		meta := format.SplitObject(ev["tool_call_metadata"])
		tc := model.ToolCall{StepID: id, ToolCallID: format.ValidString(meta["tool_call_id"]), FunctionName: format.ValidString(meta["function_name"]),
			Result: orEmpty(st.MessageValue), ResultStatus: status, ResultLink: linkOrphan}
		if tc.ToolCallID == "" {
			tc.ToolCallID = "oh-" + id
		}
		if tc.FunctionName == "" {
			tc.FunctionName = obs
		}
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
		what := "observation cause " + strconv.Quote(cause) + " names no earlier event"
		if cause == "" {
			what = "observation follows no action waiting for it"
		}
		b.warn(what+"; its result is kept as an orphan call", at(i, "cause")...)
	default:
		st.Source, st.MessageKind = model.SourceSystem, "system_op"
		if m := format.ValidString(ev["message"]); model.Deref(st.MessageValue) == "" && m != "" {
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
	st.Extra = format.StripExtra(extra(ev))
	b.sl.Steps = append(b.sl.Steps, st)
}

// toolObservations are the V0 observations that are a tool's result.
var toolObservations = map[string]bool{"run": true, "run_ipython": true, "read": true, "write": true, "edit": true,
	"browse": true, "think": true, "mcp": true, "delegate": true, "download": true, "task_tracking": true}

// isToolResult: an observation that answers a tool call (its own
// tool_call_metadata says so, or its type is a tool's).
func isToolResult(obs string, ev map[string]jsonx.RawMessage) bool {
	_, hasMeta := ev["tool_call_metadata"]
	return hasMeta || toolObservations[obs]
}

// answer marks the call of action event eventID answered.
func (b *builder) answer(eventID string) {
	delete(b.calls, eventID)
	b.answered[eventID] = true
	for k, w := range b.waiting {
		if w == eventID {
			b.waiting = append(b.waiting[:k], b.waiting[k+1:]...)
			break
		}
	}
}

// recallObservation attaches the answer of a recall (a knowledge lookup,
// not a tool call) to the recall's step: its content is the step's
// observation, the rest of the event (with its id and timestamp) goes to
// the step extra as recall_observation.
func (b *builder) recallObservation(k int, cause, id string, ts *time.Time, content *string, ev map[string]jsonx.RawMessage) {
	delete(b.recalls, cause)
	ev["id"] = mustJSON(id)
	if ts != nil {
		ev["timestamp"] = mustJSON(ts)
	}
	st := &b.sl.Steps[k]
	st.Observation = content
	if st.Observation == nil {
		st.Observation = model.StrAlways("")
	}
	delete(ev, "cause")
	delete(ev, "observation")
	dropMessage(ev, content)
	if e := extra(ev); e != nil {
		st.Extra = format.StripExtra(format.MergeExtra(st.Extra, "recall_observation", json.RawMessage(*e)))
	}
}

// dropMessage removes the event message from what goes to the step extra
// when it is empty or repeats the step text.
func dropMessage(ev map[string]jsonx.RawMessage, text *string) {
	raw, ok := ev["message"]
	if !ok {
		return
	}
	if m := format.ValidString(raw); m == "" || m == model.Deref(text) {
		delete(ev, "message")
	}
}

// nonZeroExit reports whether exit_code (or metadata.exit_code, when
// exit_code is absent or null) of the object raw is a non-zero number.
// The two members are looked up without splitting raw into a map.
func nonZeroExit(raw jsonx.RawMessage) bool {
	var vals [2][]byte
	if !format.Fields(raw, exitKeys, vals[:]) {
		return false
	}
	return exitNonZero(vals[0], vals[1])
}

var exitKeys = []string{"exit_code", "metadata"}

// exitNonZero is nonZeroExit of an object whose exit_code and metadata
// members are code and meta.
func exitNonZero(code, meta []byte) bool {
	if format.IsNull(code) {
		var vals [1][]byte
		format.Fields(meta, exitKeys[:1], vals[:])
		code = vals[0]
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
	b.v1Finish()
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

// extra is format.Extra for members split from a validated line or
// document: their values are valid JSON, so they are compacted without
// being validated again (half the cost of an extra in profiles). A value
// left empty by a lookup of an absent member takes format.Extra's path.
func extra(obj map[string]jsonx.RawMessage) *string {
	var buf [16]string // most objects fit: the names stay off the heap
	names := buf[:0]
	for k, v := range obj {
		if len(v) == 0 {
			return format.Extra(obj)
		}
		names = append(names, k)
	}
	return format.ExtraNamed(obj, names, nil)
}
