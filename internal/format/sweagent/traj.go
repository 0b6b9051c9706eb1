package sweagent

import (
	"context"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// A SWE-agent .traj holds the same run twice: history is the conversation
// the model saw (system prompt, task, each action message and its
// templated observation), trajectory is the record of each step (action,
// raw observation, execution time, environment state), including turns the
// agent rejected and re-queried, which never reach the history. Steps come
// from the history; the trajectory fills in what the history lacks.

// histItem is one history entry.
type histItem struct {
	i      int
	m      map[string]jsonx.RawMessage
	role   string
	action string   // the action as the agent ran it, trimmed
	calls  [][]byte // function calling: the message's tool_calls
	demo   bool     // a demonstration put into the history, not this run's work
}

func (h *histItem) isAction() bool {
	return h.role == "assistant" && !h.demo && (h.action != "" || len(h.calls) > 0)
}

// trajStep is one trajectory entry.
type trajStep struct {
	j      int
	m      map[string]jsonx.RawMessage
	action string
}

// normalizeTraj emits the run, or one Storyline per attempt of a retry run
// (SWE-agent's RetryAgent: "attempts" holds every attempt, and the top
// level repeats the chosen one, so it is not emitted again).
func normalizeTraj(ctx context.Context, top map[string]jsonx.RawMessage, src format.Source, layout string, emit format.Emit) error {
	attempts, _ := format.SplitArray(top["attempts"])
	if len(attempts) == 0 {
		b := newBuilder(src, layout)
		b.run(top, instanceID(top, fileID(src)))
		return emit(b.finish())
	}
	id := instanceID(top, fileID(src))
	info := format.SplitObject(top["info"])
	best, hasBest := format.Int(info["best_attempt_idx"])
	for n, raw := range attempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := newBuilder(src, layout, "attempts", n)
		att := format.SplitObject(raw)
		if att == nil {
			b.warn("attempt is not a JSON object; its Storyline has no steps")
			att = map[string]jsonx.RawMessage{}
		}
		b.run(att, id)
		b.sl.Run.SessionID = id + "/attempt-" + strconv.Itoa(n)
		if hasBest && best == int64(n) {
			retry := map[string]jsonx.RawMessage{}
			for _, k := range []string{"best_attempt_idx", "rloop_model_stats", "chooser"} {
				if v, ok := info[k]; ok {
					retry[k] = v
				}
			}
			if v, ok := info["model_stats"]; ok {
				retry["total_model_stats"] = v // every attempt's cost together
			}
			if e := format.Extra(retry); e != nil {
				b.sl.Run.Extra = format.MergeExtra(b.sl.Run.Extra, "retry", jsonx.RawMessage(*e))
			}
		}
		if err := emit(b.finish()); err != nil {
			return err
		}
	}
	return nil
}

// instanceID is replay_config.problem_statement.id (the instance a run
// solved; replay_config may be written as a JSON string), else derived.
func instanceID(top map[string]jsonx.RawMessage, derived string) string {
	ps := format.SplitObject(replayConfig(top)["problem_statement"])
	if id := format.String(ps["id"]); id != "" {
		return id
	}
	return derived
}

// replayConfig returns the replay_config object, decoding the JSON string
// SWE-agent 1.x writes.
func replayConfig(top map[string]jsonx.RawMessage) map[string]jsonx.RawMessage {
	raw := top["replay_config"]
	if len(raw) > 0 && raw[0] == '"' {
		s := []byte(format.String(raw))
		if !jsonx.Valid(s) {
			return nil
		}
		raw = s
	}
	return format.SplitObject(raw)
}

// run maps one .traj object (or one attempt).
func (b *builder) run(top map[string]jsonx.RawMessage, id string) {
	r := &b.sl.Run
	r.RunID, r.SessionID = id, id
	hist := b.historyItems(top["history"])
	traj := b.trajectorySteps(top["trajectory"])
	b.steps(hist, traj)
	cfg := format.SplitObject(replayConfig(top)["agent"])
	r.AgentModelName = model.Str(format.String(format.SplitObject(cfg["model"])["name"]))

	info := format.SplitObject(top["info"])
	b.outcome(info["exit_status"], info["submission"], nil)
	r.AgentVersion = model.Str(format.String(info["swe_agent_version"]))
	rest := format.Without(info, "exit_status", "submission", "swe_agent_version")
	if stats := format.SplitObject(info["model_stats"]); stats != nil {
		if c, ok := format.Float(stats["instance_cost"]); ok {
			r.ReportedCostUSD = model.Float(c)
		}
		r.ReportedPromptTokens = format.IntOf(stats["tokens_sent"])
		r.ReportedCompletionTokens = format.IntOf(stats["tokens_received"])
		if e := format.Extra(stats, "instance_cost", "tokens_sent", "tokens_received"); e != nil {
			rest["model_stats"] = jsonx.RawMessage(*e)
		} else {
			delete(rest, "model_stats")
		}
	}
	keep := format.Without(top, "info", "attempts")
	for _, k := range []string{"history", "trajectory"} {
		if _, isArray := format.SplitArray(top[k]); isArray || format.IsNull(top[k]) {
			delete(keep, k) // read above; a value of another shape stays
		}
	}
	if e := format.Extra(rest); e != nil {
		keep["info"] = jsonx.RawMessage(*e)
	}
	r.Extra = format.StripExtra(format.Extra(keep))
}

// historyItems reads the history; nil when it is absent or not an array.
func (b *builder) historyItems(raw jsonx.RawMessage) []histItem {
	var items []histItem
	b.eachObject(raw, "history", "history entry", func(i int, m map[string]jsonx.RawMessage) {
		h := histItem{i: i, m: m, role: format.String(m["role"]), action: strings.TrimSpace(format.String(m["action"]))}
		h.calls, _ = format.SplitArray(m["tool_calls"])
		h.demo, _ = format.Bool(m["is_demo"])
		items = append(items, h)
	})
	return items
}

// trajectorySteps reads the trajectory; nil when absent or not an array.
func (b *builder) trajectorySteps(raw jsonx.RawMessage) []trajStep {
	var steps []trajStep
	b.eachObject(raw, "trajectory", "trajectory step", func(j int, m map[string]jsonx.RawMessage) {
		steps = append(steps, trajStep{j: j, m: m, action: strings.TrimSpace(format.String(m["action"]))})
	})
	return steps
}

// alignment pairs trajectory steps with the history's model turns, in
// order, by what the model said and did (response and action): a step equal
// to a later turn is that turn's record; a step that matches none before
// the next turn is one the agent rejected (format, blocklist or bash syntax
// error) and re-queried, which never reaches the history; steps after the
// last turn are missing from the history (older versions did not add the
// final step).
type alignment struct {
	match    map[int]int   // history item position → trajectory step position
	before   map[int][]int // history item position → rejected steps placed before it
	trailing []int
}

func align(hist []histItem, traj []trajStep) alignment {
	a := alignment{match: map[int]int{}, before: map[int][]int{}}
	var turns []int
	for k := range hist {
		if hist[k].role == "assistant" && !hist[k].demo {
			turns = append(turns, k)
		}
	}
	next := 0
	for t := range traj {
		found := -1
		for k := next; k < len(turns); k++ {
			if sameTurn(&hist[turns[k]], &traj[t]) {
				found = k
				break
			}
		}
		switch {
		case found >= 0:
			a.match[turns[found]] = t
			next = found + 1
		case next < len(turns):
			a.before[turns[next]] = append(a.before[turns[next]], t)
		default:
			a.trailing = append(a.trailing, t)
		}
	}
	return a
}

// sameTurn compares the action and, when both record it, the model output
// (history content, trajectory response).
func sameTurn(h *histItem, ts *trajStep) bool {
	if h.action != ts.action {
		return false
	}
	content, resp := format.String(h.m["content"]), format.String(ts.m["response"])
	return content == "" || resp == "" || content == resp
}

// steps builds the steps and calls from the history, with the trajectory's
// rejected turns in place and its extra steps at the end.
func (b *builder) steps(hist []histItem, traj []trajStep) {
	al := align(hist, traj)
	mainAgent := ""
	if len(hist) > 0 {
		mainAgent = format.String(hist[0].m["agent"])
		b.sl.Run.AgentID = model.Str(mainAgent)
	}
	recorded := map[int]*trajStep{} // call index → its trajectory record
	for k := range hist {
		for _, t := range al.before[k] {
			b.rejected(&traj[t])
		}
		var ts *trajStep
		if t, ok := al.match[k]; ok {
			ts = &traj[t]
		}
		if first := b.historyItem(&hist[k], ts, mainAgent); first >= 0 && ts != nil {
			recorded[first] = ts
		}
	}
	for _, t := range al.trailing {
		b.executed(&traj[t])
	}
	// The raw observation of a recorded step answers a call the history
	// did not (the last action of a file is often unanswered there), and
	// is kept when the history shows it in another form.
	for i, ts := range recorded {
		tc := &b.sl.ToolCalls[i]
		obs := format.String(ts.m["observation"])
		if tc.ResultStatus == "" {
			b.answer(i, model.StrAlways(obs), model.ResultOK, linkInline, tc.StepID)
		} else if obs != "" && !strings.Contains(model.Deref(tc.Result), obs) {
			tc.Extra = format.MergeExtra(tc.Extra, "observation", ts.m["observation"])
		}
	}
}

// impliedTypes are the message_type values a history entry's role
// implies; other values stay in the step extra.
var impliedTypes = map[string]string{"system": "system_prompt", "assistant": "action", "user": "observation", "tool": "observation"}

// historyItem maps one history entry to a step (and its calls), and returns
// the index of its first call, or -1.
func (b *builder) historyItem(h *histItem, ts *trajStep, mainAgent string) int {
	m := h.m
	id := strconv.Itoa(h.i)
	st := model.Step{StepID: id, IsCopiedContext: h.demo}
	st.MessageValue, st.MessageKind = format.ContentText(m["content"])
	drop := []string{"role", "content"}
	if a := format.String(m["agent"]); a == mainAgent {
		drop = append(drop, "agent")
	}
	if format.String(m["message_type"]) == impliedTypes[h.role] {
		drop = append(drop, "message_type")
	}
	first := -1
	switch h.role {
	case "system":
		st.Source = model.SourceSystem
	case "assistant":
		st.Source = model.SourceAgent
		if !h.demo { // a demonstration's action did not run here: it stays in extra
			drop = append(drop, "action", "tool_calls")
		}
		if th := strings.TrimSpace(format.String(m["thought"])); th == "" || strings.Contains(model.Deref(st.MessageValue), th) {
			drop = append(drop, "thought") // the parser's part of the content
		}
		if r := thinking(m["thinking_blocks"]); r != nil {
			st.Reasoning = r
			drop = append(drop, "thinking_blocks")
		} else if format.IsNull(m["thinking_blocks"]) || string(m["thinking_blocks"]) == "[]" {
			drop = append(drop, "thinking_blocks")
		}
		b.newTurn()
		first = b.actionCalls(h, ts)
		if first >= 0 && st.MessageValue == nil {
			st.MessageKind = "tool_calls_only"
		}
	case "user", "tool":
		st.Source = model.SourceUser
		answered := false
		if ids, ok := stringArray(m["tool_call_ids"]); ok {
			for _, cid := range ids {
				answered = b.answerID(cid, st.MessageValue, model.ResultOK, id) || answered
			}
		}
		if !answered && len(b.pending) > 0 {
			answered = b.answerNext(st.MessageValue, model.ResultOK, id)
		}
		switch {
		case answered:
			st.Source = model.SourceTool
			drop = append(drop, "tool_call_ids")
		case h.role == "tool":
			st.Source = model.SourceTool
			if h.demo {
				break
			}
			b.warn("tool message answers no call; kept as a tool step", "history", h.i)
		}
	default:
		st.Source = model.SourceSystem
		b.warn("unknown role "+strconv.Quote(h.role)+"; kept as a system step", "history", h.i, "role")
		drop = drop[1:] // keep the role
	}
	st.Extra = format.StripExtra(format.Extra(format.Without(m, drop...)))
	b.addStep(st)
	return first
}

// actionCalls records an action message's calls: its tool_calls (function
// calling), else one call of its text action. ts, the action's trajectory
// record, adds execution details to the first call.
func (b *builder) actionCalls(h *histItem, ts *trajStep) int {
	id := strconv.Itoa(h.i)
	first := -1
	var rec map[string]jsonx.RawMessage
	if ts != nil {
		rec = trajExtra(ts.m, "observation")
		if format.String(ts.m["response"]) == format.String(h.m["content"]) {
			delete(rec, "response")
		}
		if format.String(ts.m["thought"]) == format.String(h.m["thought"]) {
			delete(rec, "thought")
		}
	}
	if h.demo || (h.action == "" && len(h.calls) == 0) {
		return -1
	}
	if len(h.calls) == 0 {
		tc := commandCall(id, "action-"+id, h.action)
		tc.Extra = format.Extra(rec)
		return b.addCall(tc)
	}
	for k, raw := range h.calls {
		c := format.SplitObject(raw)
		if c == nil {
			b.warn("tool call is not a JSON object; ignored", "history", h.i, "tool_calls", k)
			continue
		}
		fn := format.SplitObject(c["function"])
		tc := model.ToolCall{StepID: id, ToolCallID: format.String(c["id"]), FunctionName: format.String(fn["name"])}
		if tc.ToolCallID == "" {
			tc.ToolCallID = "action-" + id + "-" + strconv.Itoa(k)
		}
		if tc.FunctionName == "" {
			b.warn("tool call has no function name", "history", h.i, "tool_calls", k, "function")
		}
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(fn["arguments"])
		x := format.Without(c, "id", "function")
		if format.String(c["type"]) == "function" {
			delete(x, "type")
		}
		if first < 0 {
			for key, v := range rec {
				x[key] = v
			}
			x["action"] = mustJSON(h.action) // the command the agent ran for the call
		}
		tc.Extra = format.Extra(x)
		if i := b.addCall(tc); first < 0 {
			first = i
		}
	}
	return first
}

// rejected maps a trajectory step that is not in the history: a model turn
// the agent rejected and asked again; its action did not run.
func (b *builder) rejected(ts *trajStep) {
	st := b.trajStepBase(ts)
	st.MessageKind = kindFormatError
	rec := trajExtra(ts.m)
	delete(rec, "response")
	if ts.action != "" {
		rec["action"] = ts.m["action"]
	}
	if format.String(ts.m["observation"]) == "" {
		delete(rec, "observation")
	}
	st.Extra = format.StripExtra(format.Extra(rec))
	b.addStep(st)
	b.warn("this model output was rejected by the agent (format, blocklist or syntax error) and the model was asked again; its action did not run", "trajectory", ts.j)
}

// executed maps a trajectory step after the last history action: an
// action that ran (its observation is the result), or the agent's closing
// step when it has no action.
func (b *builder) executed(ts *trajStep) {
	st := b.trajStepBase(ts)
	rec := trajExtra(ts.m, "observation")
	delete(rec, "response")
	b.newTurn()
	if ts.action == "" {
		st.Source, st.MessageKind = model.SourceSystem, kindExit
		st.Extra = format.StripExtra(format.Extra(rec))
		b.addStep(st)
		return
	}
	tc := commandCall(st.StepID, "action-"+st.StepID, ts.action)
	tc.Extra = format.Extra(rec)
	i := b.addCall(tc)
	b.answer(i, model.StrAlways(format.String(ts.m["observation"])), model.ResultOK, linkInline, st.StepID)
	b.addStep(st)
}

// trajStepBase is the agent step of a trajectory-only entry: its text is
// the model response (else the thought).
func (b *builder) trajStepBase(ts *trajStep) model.Step {
	st := model.Step{StepID: "trajectory-" + strconv.Itoa(ts.j), Source: model.SourceAgent, MessageKind: format.KindText}
	resp := format.String(ts.m["response"])
	if resp == "" {
		resp = format.String(ts.m["thought"])
	}
	if resp != "" {
		st.MessageValue = model.StrAlways(resp)
	}
	return st
}

// trajExtra is what a trajectory step adds to the extra column: every
// member except action and those in skip (execution_time, state,
// extra_info, …). query, the whole message list sent to the model for that
// step (a copy of the history), is replaced by its length; an empty
// extra_info is dropped.
func trajExtra(m map[string]jsonx.RawMessage, skip ...string) map[string]jsonx.RawMessage {
	out := format.Without(m, append(skip, "action", "query")...)
	if q, ok := format.SplitArray(m["query"]); ok {
		out["query_messages"] = mustJSON(len(q))
	}
	if string(m["extra_info"]) == "{}" {
		delete(out, "extra_info")
	}
	if th := format.String(m["thought"]); th != "" && strings.Contains(format.String(m["response"]), strings.TrimSpace(th)) {
		delete(out, "thought")
	}
	return out
}

// thinking joins the text of Anthropic thinking blocks; nil when there is
// none or a block has no text (then the blocks stay in extra).
func thinking(raw jsonx.RawMessage) *string {
	blocks, ok := format.SplitArray(raw)
	if !ok || len(blocks) == 0 {
		return nil
	}
	var texts []string
	for _, blk := range blocks {
		t := format.String(format.SplitObject(blk)["thinking"])
		if t == "" {
			return nil
		}
		texts = append(texts, t)
	}
	return model.StrAlways(strings.Join(texts, "\n"))
}

// stringArray decodes a JSON array of strings.
func stringArray(raw jsonx.RawMessage) ([]string, bool) {
	elems, ok := format.SplitArray(raw)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		out = append(out, format.String(e))
	}
	return out, true
}
