package export

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// canonicalWriter writes each Storyline as canonical events. A session_id
// seen again in the same export (a continuation segment in another file
// keeps its run's id) gets the suffix "#<n>", because the wire rules need
// seq to increase within a session; run.start records the original
// coordinates either way.
type canonicalWriter struct {
	lines
	used map[string]int
}

func (c *canonicalWriter) Write(dataset string, sl *model.Storyline) error {
	evs, err := CanonicalEvents(dataset, sl, exportedSession(c.used, sl.Run.SessionID))
	if err != nil {
		return err
	}
	for i := range evs {
		line, err := canonical.EncodeEvent(&evs[i])
		if err != nil {
			return fmt.Errorf("session %s: event %d: %w", sl.Run.SessionID, i, err)
		}
		if err := c.write(line); err != nil {
			return err
		}
	}
	return nil
}

// exportedSession is the session_id a Storyline's events get: its own, or
// for the nth Storyline of an export with that id "<id>#<n>" (used counts
// them).
func exportedSession(used map[string]int, sid string) string {
	used[sid]++
	if n := used[sid]; n > 1 {
		return fmt.Sprintf("%s#%d", sid, n)
	}
	return sid
}

// epoch stands in for a timestamp when a Storyline records none: the wire
// format requires ts, and a fixed value keeps exports deterministic.
var epoch = time.Unix(0, 0).UTC()

// CanonicalEvents returns a Storyline as canonical events under sessionID:
// run.start, then per step a message (and a usage event for its tokens),
// its tool.call events, and each tool.result right after its call or after
// the step that carried it, subagent.link / continuation.link, and run.end.
// Event ids are digests of (dataset, _file_, session, seq), so a re-export
// gives the same ids. Events are facts of the export, not of the original
// producer: ts falls back to the latest known time (or the epoch) where the
// Storyline has none.
func CanonicalEvents(dataset string, sl *model.Storyline, sessionID string) ([]model.Event, error) {
	b := &eventBuilder{sl: sl, dataset: dataset, session: sessionID, ts: epoch}
	if sl.Run.StartedAt != nil {
		b.ts = *sl.Run.StartedAt
	} else if len(sl.Steps) > 0 && sl.Steps[0].Timestamp != nil {
		b.ts = *sl.Steps[0].Timestamp
	}
	refs, err := subagentRefs(&sl.Run)
	if err != nil {
		return nil, err
	}
	b.runStart()
	calls := callsByStep(sl)
	deferred := map[string][]*model.ToolCall{} // results carried by a later step
	later := map[string]bool{}
	for _, st := range sl.Steps {
		later[st.StepID] = true
	}
	for i := range sl.Steps {
		st := &sl.Steps[i]
		delete(later, st.StepID)
		b.message(st)
		for _, tc := range deferred[st.StepID] {
			b.toolResult(tc)
		}
		for _, tc := range calls[st.StepID] {
			b.toolCall(tc)
			if !hasResult(tc) {
				continue
			}
			if rs := tc.ResultStepID; rs != nil && later[*rs] {
				deferred[*rs] = append(deferred[*rs], tc)
				continue
			}
			b.toolResult(tc)
		}
		delete(calls, st.StepID)
	}
	b.orphanCalls(calls)
	for _, r := range refs {
		b.subagentLink(r)
	}
	if ref := sl.Run.ContinuedTrajectoryRef; ref != nil && *ref != "" {
		b.add("continuation.link", nil, nil, map[string]any{"ref": *ref})
	}
	b.runEnd()
	return b.out, b.err
}

type eventBuilder struct {
	sl      *model.Storyline
	dataset string
	session string
	ts      time.Time
	out     []model.Event
	err     error
}

// add appends one event; payload keys with empty values are left out.
func (b *eventBuilder) add(kind string, stepID, callID *string, payload map[string]any) {
	if b.err != nil {
		return
	}
	for k, v := range payload {
		if isEmpty(v) {
			delete(payload, k)
		}
	}
	p, err := jsonx.Marshal(payload)
	if err != nil {
		b.err = fmt.Errorf("session %s: %s payload: %w", b.sl.Run.SessionID, kind, err)
		return
	}
	seq := int64(len(b.out))
	b.out = append(b.out, model.Event{
		EventID:    "ev-" + digest(24, b.dataset, b.sl.Run.File, b.session, fmt.Sprint(seq)),
		RunID:      orDefault(b.sl.Run.RunID, b.session),
		SessionID:  b.session,
		Seq:        seq,
		TS:         b.ts,
		Kind:       kind,
		StepID:     nonEmpty(stepID),
		ToolCallID: nonEmpty(callID),
		Payload:    string(p),
	})
}

func (b *eventBuilder) at(t *time.Time) {
	if t != nil {
		b.ts = *t
	}
}

func (b *eventBuilder) runStart() {
	r := &b.sl.Run
	b.add("run.start", nil, nil, map[string]any{
		"agent_name":        r.AgentName,
		"agent_version":     r.AgentVersion,
		"agent_model_name":  r.AgentModelName,
		"trajectory_id":     r.TrajectoryID,
		"parent_session_id": r.ParentSessionID,
		// Unknown run.start keys land in runs.extra: the original identity
		// survives a re-import.
		"pchronicle_source": map[string]any{"dataset": b.dataset, "_file_": r.File, "session_id": r.SessionID,
			"original_session_id": r.OriginalSessionID, "source_format": r.SourceFormat},
	})
	if r.AgentID != nil && *r.AgentID != "" {
		b.out[len(b.out)-1].AgentID = model.Str(*r.AgentID)
	}
}

func (b *eventBuilder) message(st *model.Step) {
	b.at(st.Timestamp)
	var copied any
	if st.IsCopiedContext {
		copied = true
	}
	b.add("message", &st.StepID, nil, map[string]any{
		"source":            st.Source,
		"content":           st.MessageValue,
		"message_kind":      st.MessageKind,
		"reasoning":         st.Reasoning,
		"model_name":        st.ModelName,
		"observation":       st.Observation,
		"is_copied_context": copied,
		"llm_call_count":    st.LLMCallCount,
	})
	usage := map[string]any{
		"prompt_tokens":     st.PromptTokens,
		"completion_tokens": st.CompletionTokens,
		"cached_tokens":     st.CachedTokens,
		"reasoning_tokens":  st.ReasoningTokens,
		"cost_usd":          st.CostUSD,
	}
	for _, v := range usage {
		if !isEmpty(v) {
			b.add("usage", &st.StepID, nil, usage)
			return
		}
	}
}

func (b *eventBuilder) toolCall(tc *model.ToolCall) {
	var args any
	if tc.Arguments != nil {
		args = *tc.Arguments // a string is kept raw: arguments round-trip as text
	}
	b.add("tool.call", &tc.StepID, callID(tc), map[string]any{"name": orDefault(tc.FunctionName, "unknown"), "arguments": args})
}

func (b *eventBuilder) toolResult(tc *model.ToolCall) {
	status := model.ResultOK
	if tc.ResultStatus == model.ResultError {
		status = model.ResultError
	}
	var step *string
	if tc.ResultStepID != nil && *tc.ResultStepID != tc.StepID {
		step = tc.ResultStepID
	}
	b.add("tool.result", step, callID(tc), map[string]any{"output": tc.Result, "status": status})
}

// orphanCalls writes calls whose step the Storyline does not hold, in call
// order, so nothing is dropped.
func (b *eventBuilder) orphanCalls(calls map[string][]*model.ToolCall) {
	for i := range b.sl.ToolCalls {
		tc := &b.sl.ToolCalls[i]
		if _, ok := calls[tc.StepID]; !ok {
			continue
		}
		b.toolCall(tc)
		if hasResult(tc) {
			b.toolResult(tc)
		}
	}
}

func (b *eventBuilder) subagentLink(r model.SubagentRef) {
	if r.SessionID == "" && r.TrajectoryID == "" && r.TrajectoryPath == "" && r.ChildSessionID == "" {
		return
	}
	var embedded any
	if r.Embedded {
		embedded = true
	}
	b.add("subagent.link", &r.StepID, nil, map[string]any{"session_id": r.SessionID, "trajectory_id": r.TrajectoryID,
		"trajectory_path": r.TrajectoryPath, "child_session_id": r.ChildSessionID, "embedded": embedded})
}

func (b *eventBuilder) runEnd() {
	r := &b.sl.Run
	b.at(r.EndedAt)
	b.add("run.end", nil, nil, map[string]any{
		"status":            orDefault(r.Status, model.StatusUnknown),
		"prompt_tokens":     r.ReportedPromptTokens,
		"completion_tokens": r.ReportedCompletionTokens,
		"cached_tokens":     r.ReportedCachedTokens,
		"cost_usd":          r.ReportedCostUSD,
		"step_count":        r.ReportedStepCount,
	})
}

// callID is the call's id, or a stable stand-in for calls recorded without
// one (the wire format requires it).
func callID(tc *model.ToolCall) *string {
	return model.Str(orDefault(tc.ToolCallID, fmt.Sprintf("call-%d", tc.CallIndex)))
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case *string:
		return t == nil || *t == ""
	case *int64:
		return t == nil
	case *float64:
		return t == nil
	case map[string]any:
		return false
	case json.RawMessage:
		return t == nil
	}
	return false
}

func nonEmpty(p *string) *string {
	if p == nil || *p == "" {
		return nil
	}
	return p
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
