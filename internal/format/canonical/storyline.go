package canonical

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// messageKindToolCallsOnly is the kind of an agent message without content
// whose only output is tool calls.
const messageKindToolCallsOnly = "tool_calls_only"

// Storylines is the deterministic canonical → Storyline normalization: one
// Storyline per session_id (sorted by session_id), built from the session's
// events in seq order (ties broken by event_id), finalized for file. The
// input order does not matter. Events are expected to satisfy the wire
// schema; inconsistencies between events (a result without a call, usage for
// an unknown step, ...) become warnings, never errors.
func Storylines(events []model.Event, file string) []*model.Storyline {
	bySession := map[string][]*model.Event{}
	for i := range events {
		e := &events[i]
		bySession[e.SessionID] = append(bySession[e.SessionID], e)
	}
	sessions := make([]string, 0, len(bySession))
	for s := range bySession {
		sessions = append(sessions, s)
	}
	sort.Strings(sessions)
	out := make([]*model.Storyline, 0, len(sessions))
	for _, s := range sessions {
		evs := bySession[s]
		sort.Slice(evs, func(i, j int) bool {
			if evs[i].Seq != evs[j].Seq {
				return evs[i].Seq < evs[j].Seq
			}
			return evs[i].EventID < evs[j].EventID
		})
		out = append(out, buildStoryline(evs, file))
	}
	return out
}

// builder accumulates one session's Storyline.
type builder struct {
	sl        model.Storyline
	stepIndex map[string]int  // step_id → index in sl.Steps
	declared  map[string]bool // step ids that message events will create
	lastAgent int             // index of the latest agent step, -1 before any
	results   []*model.Event
	usages    []pendingUsage
	refs      []model.SubagentRef
	counts    map[string]int64 // non-step kinds
	runExtra  map[string]json.RawMessage
	sawStart  bool
}

type pendingUsage struct {
	e         *model.Event
	lastAgent int
}

func buildStoryline(evs []*model.Event, file string) *model.Storyline {
	b := &builder{
		stepIndex: map[string]int{},
		declared:  map[string]bool{},
		lastAgent: -1,
		counts:    map[string]int64{},
		runExtra:  map[string]json.RawMessage{},
	}
	first := evs[0]
	b.sl.Run = model.Run{RunID: first.RunID, SessionID: first.SessionID, SourceFormat: format.Canonical}
	for _, e := range evs {
		if e.Kind == KindMessage {
			b.declared[stepIDOf(e)] = true
		}
	}
	for _, e := range evs {
		b.add(e)
	}
	b.linkResults()
	b.applyUsage()
	b.finish(evs)
	b.sl.Finalize(file)
	return &b.sl
}

func stepIDOf(e *model.Event) string {
	if e.StepID != nil {
		return *e.StepID
	}
	return e.EventID
}

func (b *builder) warn(e *model.Event, format string, args ...any) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{
		Message: fmt.Sprintf("event %s (seq %d): ", e.EventID, e.Seq) + fmt.Sprintf(format, args...),
	})
}

func (b *builder) add(e *model.Event) {
	if e.RunID != b.sl.Run.RunID {
		b.warn(e, "run_id %q differs from the session's run_id %q", e.RunID, b.sl.Run.RunID)
	}
	if b.sl.Run.AgentID == nil && e.AgentID != nil {
		b.sl.Run.AgentID = model.Str(*e.AgentID)
	}
	p, err := payloadObject(e.Payload)
	if err != nil {
		b.warn(e, "%v; payload ignored", err)
		p = map[string]json.RawMessage{}
	}
	switch e.Kind {
	case KindRunStart:
		b.runStart(e, p)
	case KindRunEnd:
		b.runEnd(e, p)
	case KindMessage:
		b.message(e, p)
	case KindToolCall:
		b.toolCall(e, p)
	case KindToolResult:
		b.results = append(b.results, e)
	case KindUsage:
		b.usages = append(b.usages, pendingUsage{e: e, lastAgent: b.lastAgent})
	case KindSubagentLink:
		b.refs = append(b.refs, model.SubagentRef{
			StepID:         model.Deref(e.StepID),
			SessionID:      format.String(p["session_id"]),
			TrajectoryID:   format.String(p["trajectory_id"]),
			TrajectoryPath: format.String(p["trajectory_path"]),
			ChildSessionID: format.String(p["child_session_id"]),
			Embedded:       string(p["embedded"]) == "true",
		})
	case KindContinuationLink:
		if b.sl.Run.ContinuedTrajectoryRef != nil {
			b.warn(e, "second continuation.link; the last one wins")
		}
		b.sl.Run.ContinuedTrajectoryRef = model.Str(format.String(p["ref"]))
	default: // context.compaction, mark, raw, and kinds of later versions
		b.counts[e.Kind]++
	}
}

func (b *builder) runStart(e *model.Event, p map[string]json.RawMessage) {
	if b.sawStart {
		b.warn(e, "second run.start ignored")
		return
	}
	b.sawStart = true
	r := &b.sl.Run
	if e.AgentID != nil {
		r.AgentID = model.Str(*e.AgentID)
	}
	r.AgentName = model.Str(format.String(p["agent_name"]))
	r.AgentVersion = model.Str(format.String(p["agent_version"]))
	r.AgentModelName = model.Str(format.String(p["agent_model_name"]))
	r.TrajectoryID = model.Str(format.String(p["trajectory_id"]))
	r.ParentSessionID = model.Str(format.String(p["parent_session_id"]))
	r.StartedAt = model.Time(e.TS)
	b.extraMember("run_start", format.Extra(p, knownPayloadKeys(KindRunStart)...))
}

func (b *builder) runEnd(e *model.Event, p map[string]json.RawMessage) {
	r := &b.sl.Run
	if r.EndedAt != nil {
		b.warn(e, "second run.end; the last one wins")
	}
	r.Status = format.String(p["status"])
	r.EndedAt = model.Time(e.TS)
	r.ReportedPromptTokens = optCount(p["prompt_tokens"])
	r.ReportedCompletionTokens = optCount(p["completion_tokens"])
	r.ReportedCachedTokens = optCount(p["cached_tokens"])
	r.ReportedCostUSD = optNumber(p["cost_usd"])
	r.ReportedStepCount = optCount(p["step_count"])
	b.extraMember("run_end", format.Extra(p, knownPayloadKeys(KindRunEnd)...))
}

func (b *builder) extraMember(key string, obj *string) {
	if obj != nil {
		b.runExtra[key] = json.RawMessage(*obj)
	}
}

func (b *builder) message(e *model.Event, p map[string]json.RawMessage) {
	id := stepIDOf(e)
	if _, dup := b.stepIndex[id]; dup {
		b.warn(e, "step_id %q already used by an earlier message; renamed", id)
		id += "#" + e.EventID
	}
	st := model.Step{
		StepID:          id,
		Source:          format.String(p["source"]),
		MessageKind:     format.String(p["message_kind"]),
		Reasoning:       model.Str(format.String(p["reasoning"])),
		ModelName:       model.Str(format.String(p["model_name"])),
		Timestamp:       model.Time(e.TS),
		IsCopiedContext: string(p["is_copied_context"]) == "true",
		Extra:           format.Extra(p, knownPayloadKeys(KindMessage)...),
	}
	if text, kind, ok := format.Content(p["content"]); ok {
		st.MessageValue = &text
		if st.MessageKind == "" {
			st.MessageKind = kind
		}
	}
	if text, _, ok := format.Content(p["observation"]); ok {
		st.Observation = &text
	}
	addTokens(&st, p)
	b.appendStep(st)
}

func (b *builder) appendStep(st model.Step) string {
	// A step added for an orphan tool.call may collide with a message's
	// explicit step_id; keep step ids unique.
	for id, n := st.StepID, 2; hasKey(b.stepIndex, st.StepID); n++ {
		st.StepID = id + "#" + strconv.Itoa(n)
	}
	b.stepIndex[st.StepID] = len(b.sl.Steps)
	if st.Source == model.SourceAgent {
		b.lastAgent = len(b.sl.Steps)
	}
	b.sl.Steps = append(b.sl.Steps, st)
	return st.StepID
}

// toolCall adds a call to the step its event names, else to the latest
// agent step. A call with neither gets an agent step of its own, because
// every tool call belongs to a step.
func (b *builder) toolCall(e *model.Event, p map[string]json.RawMessage) {
	stepID := ""
	switch {
	case e.StepID != nil && (b.declared[*e.StepID] || hasKey(b.stepIndex, *e.StepID)):
		stepID = *e.StepID
	case e.StepID == nil && b.lastAgent >= 0:
		stepID = b.sl.Steps[b.lastAgent].StepID
	default:
		stepID = stepIDOf(e)
		b.warn(e, "tool.call %q has no message step; an agent step %q was added", *e.ToolCallID, stepID)
		stepID = b.appendStep(model.Step{StepID: stepID, Source: model.SourceAgent, Timestamp: model.Time(e.TS)})
	}
	args, valid := format.ArgumentsText(p["arguments"])
	b.sl.ToolCalls = append(b.sl.ToolCalls, model.ToolCall{
		StepID:         stepID,
		ToolCallID:     *e.ToolCallID,
		FunctionName:   format.String(p["name"]),
		Arguments:      args,
		ArgumentsValid: valid,
		Extra:          format.Extra(p, knownPayloadKeys(KindToolCall)...),
	})
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// linkResults gives each result, in seq order, to the first call with its
// tool_call_id that has no result yet; call ids are only locally unique, and
// a result may precede its call.
func (b *builder) linkResults() {
	for _, e := range b.results {
		tc := b.openCall(*e.ToolCallID)
		if tc == nil {
			b.warn(e, "tool.result for tool_call_id %q matches no open tool.call; dropped", *e.ToolCallID)
			continue
		}
		p, _ := payloadObject(e.Payload)
		tc.ResultLink = model.LinkByID
		tc.ResultStatus = format.String(p["status"])
		if tc.ResultStatus == "" {
			tc.ResultStatus = model.ResultOK
			if !format.IsNull(p["error"]) {
				tc.ResultStatus = model.ResultError
			}
		}
		if text, _, ok := format.Content(p["output"]); ok {
			tc.Result = &text
		} else if text, _, ok := format.Content(p["error"]); ok {
			tc.Result = &text
		}
		if e.StepID != nil && *e.StepID != tc.StepID {
			tc.ResultStepID = model.Str(*e.StepID)
		}
		if _, ok := p["error"]; ok {
			tc.Extra = format.MergeExtra(tc.Extra, "error", p["error"])
		}
		if extra := format.Extra(p, knownPayloadKeys(KindToolResult)...); extra != nil {
			tc.Extra = format.MergeExtra(tc.Extra, "result", json.RawMessage(*extra))
		}
	}
}

func (b *builder) openCall(id string) *model.ToolCall {
	for i := range b.sl.ToolCalls {
		tc := &b.sl.ToolCalls[i]
		if tc.ToolCallID == id && tc.ResultLink == "" {
			return tc
		}
	}
	return nil
}

// applyUsage adds each usage event's tokens to the step it names, else to
// the latest agent step at the time of the event.
func (b *builder) applyUsage() {
	for _, u := range b.usages {
		idx := u.lastAgent
		if u.e.StepID != nil {
			i, ok := b.stepIndex[*u.e.StepID]
			if !ok {
				b.warn(u.e, "usage names unknown step_id %q; dropped", *u.e.StepID)
				continue
			}
			idx = i
		}
		if idx < 0 {
			b.warn(u.e, "usage before any agent step; dropped")
			continue
		}
		p, _ := payloadObject(u.e.Payload)
		st := &b.sl.Steps[idx]
		addTokens(st, p)
		if st.ModelName == nil {
			st.ModelName = model.Str(format.String(p["model_name"]))
		}
		if extra := format.Extra(p, knownPayloadKeys(KindUsage)...); extra != nil {
			st.Extra = format.MergeExtra(st.Extra, "usage", json.RawMessage(*extra))
		}
	}
}

func addTokens(st *model.Step, p map[string]json.RawMessage) {
	addCount(&st.PromptTokens, p["prompt_tokens"])
	addCount(&st.CompletionTokens, p["completion_tokens"])
	addCount(&st.CachedTokens, p["cached_tokens"])
	addCount(&st.ReasoningTokens, p["reasoning_tokens"])
	addCount(&st.LLMCallCount, p["llm_call_count"])
	if v := optNumber(p["cost_usd"]); v != nil {
		if st.CostUSD != nil {
			*v += *st.CostUSD
		}
		st.CostUSD = v
	}
}

func addCount(dst **int64, raw json.RawMessage) {
	v := optCount(raw)
	if v == nil {
		return
	}
	if *dst != nil {
		*v += **dst
	}
	*dst = v
}

func optCount(raw json.RawMessage) *int64 {
	if v, ok := format.Int(raw); ok {
		return &v
	}
	return nil
}

func optNumber(raw json.RawMessage) *float64 {
	if v, ok := format.Float(raw); ok {
		return &v
	}
	return nil
}

// finish fills what depends on the whole session: defaults, the model name
// fallback, message kinds of content-less steps, and the run extra.
func (b *builder) finish(evs []*model.Event) {
	r := &b.sl.Run
	if r.StartedAt == nil {
		earliest := evs[0].TS
		for _, e := range evs {
			if e.TS.Before(earliest) {
				earliest = e.TS
			}
		}
		r.StartedAt = model.Time(earliest)
	}
	withCalls := map[string]bool{}
	for _, tc := range b.sl.ToolCalls {
		withCalls[tc.StepID] = true
	}
	for i := range b.sl.Steps {
		st := &b.sl.Steps[i]
		if st.MessageKind == "" {
			st.MessageKind = format.KindText
			if withCalls[st.StepID] {
				st.MessageKind = messageKindToolCallsOnly
			}
		}
		if r.AgentModelName == nil && st.Source == model.SourceAgent && st.ModelName != nil {
			r.AgentModelName = model.Str(*st.ModelName)
		}
	}
	if len(b.refs) > 0 {
		refs, _ := jsonx.Marshal(b.refs)
		r.SubagentRefs = model.Str(string(refs))
	}
	if len(b.counts) > 0 {
		counts := make(map[string]json.RawMessage, len(b.counts))
		for k, n := range b.counts {
			counts[k] = json.RawMessage(strconv.FormatInt(n, 10))
		}
		b.extraMember("event_counts", format.Extra(counts))
	}
	r.Extra = format.Extra(b.runExtra)
}
