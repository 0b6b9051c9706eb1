package inspect

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// sampleData is one sample × epoch as read from a log, whatever holds it: a
// samples element of the JSON form, a sample entry of an .eval zip, or the
// chunks of a chunked sample put together. Its raw values alias the bytes
// read for this sample only.
type sampleData struct {
	fields   map[string]jsonx.RawMessage // the sample's own members
	messages [][]byte                    // the final conversation
	events   [][]byte
	// messageList and eventList hold the messages and events split with
	// their members, when the sample's split did that (splitSample); else
	// each is split as it is read.
	messageList, eventList *format.List
	// pool is the message pool (events_data.messages, or a chunked
	// sample's messages sequence) that model events' input_refs index.
	pool   [][]byte
	attach attachments
	layout string
	// at* locate things for warnings, as JSON pointer parts.
	atSample  []any
	atMessage func(i int) []any
	atEvent   func(i int) []any
	// warnings raised while reading the sample's container.
	warnings []model.Warning
}

// sampleKnown are the sample members that columns hold or that are
// dropped (see docs/formats.md); error and error_retries come back to
// runs.extra without their ANSI tracebacks. Everything else goes to
// runs.extra as it is.
var sampleKnown = []string{"messages", "events", "attachments", "events_data", "message_refs", "input", "output",
	"scores", "score", "transcript", "uuid", "started_at", "completed_at", "timelines", "error", "error_retries"}

// builder maps one sample to a Storyline.
type builder struct {
	d   *sampleData
	h   *header
	src format.Source
	sl  *model.Storyline

	roles []string // per message index ("" for a message that is not an object)
	steps []int    // per message index: its step, or -1
	// pending maps a tool call id to its unanswered calls, earliest first.
	pending map[string][]int
	// toolSteps maps a tool_call_id to the tool step carrying its result,
	// for tool event timestamps.
	toolSteps map[string]int
	// ids maps message ids to message indexes; byCall and byText index
	// assistant messages by their first tool call id and their text: the
	// keys model events are matched with.
	ids    map[string]int
	byCall map[string]int
	byText map[string][]int
	// matched marks the messages a model event was attributed to.
	matched      map[int]bool
	unattributed int // model events that produced no message of the conversation
	missing      int // attachment references that did not resolve
}

func buildStoryline(d *sampleData, h *header, src format.Source) *model.Storyline {
	b := &builder{d: d, h: h, src: src,
		sl:      &model.Storyline{Run: model.Run{SourceFormat: format.Inspect + "/" + d.layout}, Warnings: d.warnings},
		pending: map[string][]int{}, toolSteps: map[string]int{},
		ids: map[string]int{}, byCall: map[string]int{}, byText: map[string][]int{}, matched: map[int]bool{}}
	b.identity()
	if !h.found {
		b.warn("the log has no eval spec (no header.json or _journal/start.json, or no eval member): run_id, agent and model are unknown", d.atSample...)
	}
	for i, raw := range d.messages {
		b.message(i, raw)
	}
	counts := b.events()
	b.run(counts)
	return b.finish()
}

func (b *builder) warn(msg string, at ...any) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{Pointer: format.Pointer(at...), Message: msg})
}

func at(base []any, parts ...any) []any {
	return append(append([]any(nil), base...), parts...)
}

// identity: session_id <sample id>/epoch-<n>, run_id the eval's.
func (b *builder) identity() {
	r := &b.sl.Run
	f := b.d.fields
	id := format.String(f["id"])
	if id == "" {
		id = "sample"
		b.warn(`sample has no id; its session_id starts with "sample"`, at(b.d.atSample, "id")...)
	}
	epoch, ok := format.Int(f["epoch"])
	if !ok {
		epoch = 1
		b.warn("sample has no epoch; taken as 1", at(b.d.atSample, "epoch")...)
	}
	r.SessionID = id + "/epoch-" + strconv.FormatInt(epoch, 10)
	r.RunID = b.h.runID
	if r.RunID == "" {
		r.RunID = fileID(b.src)
	}
	r.TrajectoryID = model.Str(format.String(f["uuid"]))
}

// message maps one message of the final conversation to a step.
func (b *builder) message(i int, raw []byte) {
	b.steps = append(b.steps, -1)
	resolved, missing := b.d.attach.resolve(raw)
	b.missing += missing
	var m format.Members
	var isObject bool
	if b.d.messageList != nil && sameBytes(resolved, raw) {
		m, isObject = b.d.messageList.Object(i)
	} else {
		m, isObject = format.AppendMembers(nil, resolved)
	}
	if !isObject {
		b.roles = append(b.roles, "")
		b.warn("message is not a JSON object; skipped", b.d.atMessage(i)...)
		return
	}
	role := format.String(m.Get("role"))
	b.roles = append(b.roles, role)
	if id := format.String(m.Get("id")); id != "" {
		if _, dup := b.ids[id]; !dup {
			b.ids[id] = i
		}
	}
	st := model.Step{StepID: strconv.Itoa(i), MessageKind: format.KindText}
	known := []string{"role", "content"}
	switch role {
	case "system":
		st.Source = model.SourceSystem
	case "user":
		st.Source = model.SourceUser
	case "assistant":
		st.Source = model.SourceAgent
	case "tool":
		st.Source = model.SourceTool
	default:
		st.Source = model.SourceSystem
		known = []string{"content"} // the role stays in extra
		b.warn("unknown role "+strconv.Quote(role)+"; kept as a system step", at(b.d.atMessage(i), "role")...)
	}
	c := readContent(m.Get("content"))
	st.MessageValue, st.MessageKind, st.Reasoning = c.text, c.kind, c.reasoning
	if c.redacted > 0 {
		m.Set("reasoning_redacted", mustJSON(c.redacted))
	}
	switch role {
	case "assistant":
		st.ModelName = model.Str(format.String(m.Get("model")))
		known = append(known, "model", "tool_calls")
		calls := b.toolCalls(i, st.StepID, m.Get("tool_calls"))
		switch {
		case calls > 0 && model.Deref(st.MessageValue) == "":
			st.MessageKind, st.MessageValue = kindToolCallsOnly, nil
		case st.MessageValue == nil && st.Reasoning != nil:
			st.MessageKind = kindReasoning
		}
		b.index(i, m.Get("tool_calls"), model.Deref(c.text))
	case "tool":
		b.result(i, &st, m)
	}
	st.Extra = format.StripExtra(m.Extra(nil, known...))
	b.steps[i] = len(b.sl.Steps)
	b.sl.Steps = append(b.sl.Steps, st)
}

// toolCalls records an assistant message's tool calls and returns how many.
func (b *builder) toolCalls(i int, stepID string, raw jsonx.RawMessage) int {
	elems, _ := format.SplitArray(raw)
	for k, e := range elems {
		call := format.SplitObject(e)
		if call == nil {
			b.warn("tool call is not a JSON object; skipped", at(b.d.atMessage(i), "tool_calls", k)...)
			continue
		}
		tc := model.ToolCall{StepID: stepID, ToolCallID: format.String(call["id"]), FunctionName: format.String(call["function"])}
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(call["arguments"])
		// view is Inspect's display rendering of the arguments: not kept.
		known := []string{"id", "function", "arguments", "view"}
		if format.String(call["type"]) == "function" {
			known = append(known, "type")
		}
		tc.Extra = format.StripExtra(validExtra(call, known...))
		b.pending[tc.ToolCallID] = append(b.pending[tc.ToolCallID], len(b.sl.ToolCalls))
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	}
	return len(elems)
}

// result links a tool message to the earliest unanswered call with its
// tool_call_id. A tool error makes the result an error; its message stands
// in for empty content.
func (b *builder) result(i int, st *model.Step, m format.Members) {
	id := format.String(m.Get("tool_call_id"))
	errObj := format.SplitObject(m.Get("error"))
	status := model.ResultOK
	if errObj != nil {
		status = model.ResultError
		if model.Deref(st.MessageValue) == "" {
			st.MessageValue = model.StrAlways(format.String(errObj["message"]))
		}
	}
	if id != "" {
		b.toolSteps[id] = len(b.sl.Steps)
	}
	q := b.pending[id]
	if len(q) == 0 {
		b.warn("tool result matches no unanswered call", at(b.d.atMessage(i), "tool_call_id")...)
		return
	}
	b.pending[id] = q[1:]
	tc := &b.sl.ToolCalls[q[0]]
	tc.Result, tc.ResultStatus, tc.ResultLink = st.MessageValue, status, model.LinkByID
	if tc.Result == nil {
		tc.Result = model.StrAlways("")
	}
	tc.ResultStepID = model.Str(st.StepID)
	if errObj != nil {
		tc.Extra = format.MergeExtra(tc.Extra, "error", m.Get("error"))
	}
}

// index records an assistant message under the keys a model event can be
// matched by besides its id: its first tool call id, its text (textKey of
// its content, which the message's step already read).
func (b *builder) index(i int, toolCalls jsonx.RawMessage, text string) {
	if id := firstCallID(toolCalls); id != "" {
		b.byCall[id] = i
	}
	if text != "" {
		b.byText[text] = append(b.byText[text], i)
	}
}

// sameBytes reports whether a and b are the same bytes in memory: what
// resolve returns when nothing was replaced.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func firstCallID(raw jsonx.RawMessage) string {
	elems, _ := format.SplitArray(raw)
	if len(elems) == 0 {
		return ""
	}
	return format.String(format.SplitObject(elems[0])["id"])
}

// textKey is the text a message's content shows, for matching.
func textKey(raw jsonx.RawMessage) string {
	return model.Deref(readContent(raw).text)
}

// modelEvent is what a model event contributes: its output message and
// usage, attributed to the assistant message it produced.
type modelEvent struct {
	ts, model, output, uuid, completed, workingTime, errRaw, inputRefs, input jsonx.RawMessage
}

// events reads the sample's events: model events give agent steps their
// tokens, model and time; tool events give tool steps their time; every
// event is counted by type, and its timestamp bounds the run.
func (b *builder) events() map[string]int64 {
	counts := map[string]int64{}
	var first, last *time.Time
	var scratch format.Members
	for k := range b.d.events {
		var kind string
		var me modelEvent
		var id jsonx.RawMessage
		var members format.Members
		var ok bool
		if b.d.eventList != nil {
			members, ok = b.d.eventList.Object(k)
		} else {
			scratch, ok = format.AppendMembers(scratch[:0], b.d.events[k])
			members = scratch
		}
		for _, mb := range members {
			val := mb.Val
			switch string(mb.Name) {
			case "event":
				kind = format.String(val)
			case "timestamp":
				me.ts = val
			case "model":
				me.model = val
			case "output":
				me.output = val
			case "uuid":
				me.uuid = val
			case "completed":
				me.completed = val
			case "working_time":
				me.workingTime = val
			case "error":
				me.errRaw = val
			case "input_refs":
				me.inputRefs = val
			case "input":
				me.input = val
			case "id":
				id = val
			}
		}
		if !ok {
			b.warn("event is not a JSON object; skipped", b.d.atEvent(k)...)
			continue
		}
		if kind != "" {
			counts[kind]++
		}
		ts, hasTS := format.Time(me.ts)
		if hasTS {
			if first == nil || ts.Before(*first) {
				first = model.Time(ts)
			}
			if last == nil || ts.After(*last) {
				last = model.Time(ts)
			}
		}
		switch kind {
		case "model":
			if !b.modelEvent(&me) && format.IsNull(me.errRaw) {
				b.unattributed++
			}
		case "tool":
			if si, ok := b.toolSteps[format.String(id)]; ok && hasTS && b.sl.Steps[si].Timestamp == nil {
				b.sl.Steps[si].Timestamp = model.Time(ts)
			}
		}
	}
	b.sl.Run.StartedAt, b.sl.Run.EndedAt = first, last
	return counts
}

// Ways a model event is attributed to an assistant message, strongest
// first (the step's extra.model_call.match says which one applied).
const (
	matchID       = "id"           // the output message has the message's id
	matchToolCall = "tool_call_id" // the output's first tool call id is the message's
	matchInput    = "input"        // the call's input ends with the message just before it
	matchText     = "text"         // the output shows the same text
)

// modelEvent attributes a model event to the assistant message it
// produced, if any, and reports whether it did. Calls that produced no
// message of the final conversation (scorers, sub-conversations) stay
// unattributed.
func (b *builder) modelEvent(me *modelEvent) bool {
	out := format.SplitObject(me.output)
	choices, _ := format.SplitArray(out["choices"])
	if len(choices) == 0 {
		return false
	}
	choice := format.SplitObject(choices[0])
	msgRaw, _ := b.d.attach.resolve(choice["message"])
	msg := format.SplitObject(msgRaw)
	j, how := b.match(me, msg)
	if j < 0 {
		return false
	}
	b.matched[j] = true
	st := &b.sl.Steps[b.steps[j]]
	if u, ok := readUsage(out["usage"]); ok {
		st.PromptTokens, st.CompletionTokens, st.CachedTokens, st.ReasoningTokens, st.CostUSD = u.prompt, u.completion, u.cached, u.reasoning, u.cost
	}
	if st.ModelName == nil {
		st.ModelName = model.Str(format.String(me.model))
	}
	if t, ok := format.Time(me.ts); ok {
		st.Timestamp = model.Time(t)
	}
	call := map[string]jsonx.RawMessage{"match": mustJSON(how)}
	for key, raw := range map[string]jsonx.RawMessage{"uuid": me.uuid, "completed": me.completed,
		"working_time": me.workingTime, "stop_reason": choice["stop_reason"]} {
		if !format.IsNull(raw) {
			call[key] = raw
		}
	}
	st.Extra = format.MergeExtra(st.Extra, "model_call", rawExtra(call))
	return true
}

// match finds the unattributed assistant message a model event produced.
func (b *builder) match(me *modelEvent, msg map[string]jsonx.RawMessage) (int, string) {
	free := func(j int, ok bool) bool {
		return ok && j >= 0 && j < len(b.roles) && b.roles[j] == "assistant" && !b.matched[j]
	}
	if j, ok := b.ids[format.String(msg["id"])]; free(j, ok) {
		return j, matchID
	}
	if j, ok := b.byCall[firstCallID(msg["tool_calls"])]; free(j, ok) {
		return j, matchToolCall
	}
	if id := b.lastInputID(me); id != "" {
		if j, ok := b.ids[id]; free(j+1, ok) {
			return j + 1, matchInput
		}
	}
	if t := textKey(msg["content"]); t != "" {
		for _, j := range b.byText[t] {
			if free(j, true) {
				return j, matchText
			}
		}
	}
	return -1, ""
}

// lastInputID is the id of the last message of a model call's input:
// inline, or the last position of its input_refs ranges into the message
// pool.
func (b *builder) lastInputID(me *modelEvent) string {
	var last []byte
	if ranges, ok := format.SplitArray(me.inputRefs); ok && len(ranges) > 0 {
		r, _ := format.SplitArray(ranges[len(ranges)-1])
		if len(r) == 2 {
			if end, ok := format.Int(r[1]); ok && end >= 1 && end <= int64(len(b.d.pool)) {
				last = b.d.pool[end-1]
			}
		}
	} else if input, _ := format.SplitArray(me.input); len(input) > 0 {
		last = input[len(input)-1]
	}
	var id string
	format.EachMember(last, func(key string, val []byte) {
		if key == "id" {
			id = format.String(val)
		}
	})
	return id
}

// usage is an Inspect ModelUsage in step columns.
type usage struct {
	prompt, completion, cached, reasoning *int64
	cost                                  *float64
}

// readUsage maps a ModelUsage. Inspect's input_tokens excludes cache reads
// and writes, so prompt_tokens (which includes cached tokens) is their sum
// — except in logs written before Inspect 0.3.184, where some providers
// counted cache reads in input_tokens; total_tokens = input + output shows
// which.
func readUsage(raw jsonx.RawMessage) (usage, bool) {
	var u usage
	var in, out, total, read, write int64
	var hasIn, hasRead, seen bool
	format.EachMember(raw, func(key string, val []byte) {
		v, ok := format.Int(val)
		switch key {
		case "input_tokens":
			in, hasIn = v, ok
		case "output_tokens":
			if ok {
				out, u.completion = v, model.Int(v)
			}
		case "total_tokens":
			total = v
		case "input_tokens_cache_read":
			read, hasRead = v, ok
		case "input_tokens_cache_write":
			write = v
		case "reasoning_tokens":
			if ok {
				u.reasoning = model.Int(v)
			}
		case "total_cost":
			if f, ok := format.Float(val); ok {
				u.cost = model.Float(f)
			}
		default:
			return
		}
		seen = seen || ok
	})
	if hasIn {
		prompt := in
		if cache := read + write; cache > 0 && total != in+out {
			prompt += cache
		}
		u.prompt = model.Int(prompt)
	}
	if hasRead {
		u.cached = model.Int(read)
	}
	return u, seen
}

// run fills the run columns from the sample and the log header.
func (b *builder) run(counts map[string]int64) {
	r := &b.sl.Run
	f := b.d.fields
	r.AgentName, r.AgentModelName = model.Str(b.h.agent), model.Str(b.h.model)
	if t, ok := format.Time(f["started_at"]); ok {
		r.StartedAt = model.Time(t)
	}
	if t, ok := format.Time(f["completed_at"]); ok {
		r.EndedAt = model.Time(t)
	}
	if r.StartedAt == nil && r.EndedAt == nil {
		r.StartedAt, r.EndedAt = format.StepTimeRange(b.sl.Steps)
	}
	scoresRaw := f["scores"]
	if format.IsNull(scoresRaw) && !format.IsNull(f["score"]) {
		// logs older than the scores dict carried one unnamed score
		scoresRaw = jsonx.RawMessage(`{"score":` + string(f["score"]) + `}`)
	}
	set := readScores(scoresRaw)
	r.Scores, r.Reward = set.scores, set.reward
	if !set.converted {
		b.warn("score value of "+strconv.Quote(set.first)+" is not a number Inspect can convert; reward 0, as Inspect counts it",
			at(b.d.atSample, "scores", set.first, "value")...)
	}
	r.Status = runStatus(b.h.status, !format.IsNull(f["error"]), !format.IsNull(f["limit"]), r.Scores != nil)
	b.reported(f["model_usage"])

	extra := map[string]jsonx.RawMessage{}
	for k, v := range f {
		extra[k] = v
	}
	for _, k := range sampleKnown {
		delete(extra, k)
	}
	if e := format.SplitObject(f["error"]); e != nil {
		extra["error"] = rawExtra(e, "traceback_ansi")
	}
	if retries, ok := format.SplitArray(f["error_retries"]); ok && len(retries) > 0 {
		kept := make([][]byte, len(retries))
		for i, e := range retries {
			kept[i] = rawExtra(format.SplitObject(e), "traceback_ansi", "events")
		}
		extra["error_retries"] = format.JoinArray(kept)
	}
	if b.h.evalExtra != nil {
		extra["eval"] = b.h.evalExtra
	}
	if b.h.logExtra != nil {
		extra["log"] = b.h.logExtra
	}
	if len(counts) > 0 {
		byKind := make(map[string]jsonx.RawMessage, len(counts))
		for k, n := range counts {
			byKind[k] = mustJSON(n)
		}
		extra["event_counts"] = rawExtra(byKind)
	}
	if set.details != nil {
		extra["score_details"] = set.details
	}
	if b.unattributed > 0 {
		extra["unattributed_model_calls"] = mustJSON(b.unattributed)
	}
	r.Extra = format.StripExtra(validExtra(extra))
}

// reported sums a sample's model_usage over its models (which include
// graders and other calls outside the conversation) into the reported
// columns.
func (b *builder) reported(raw jsonx.RawMessage) {
	r := &b.sl.Run
	var prompt, completion, cached int64
	var cost float64
	var hasPrompt, hasCompletion, hasCached, hasCost bool
	format.EachMember(raw, func(_ string, val []byte) {
		u, ok := readUsage(val)
		if !ok {
			return
		}
		add := func(sum *int64, has *bool, v *int64) {
			if v != nil {
				*sum += *v
				*has = true
			}
		}
		add(&prompt, &hasPrompt, u.prompt)
		add(&completion, &hasCompletion, u.completion)
		add(&cached, &hasCached, u.cached)
		if u.cost != nil {
			cost += *u.cost
			hasCost = true
		}
	})
	if hasPrompt {
		r.ReportedPromptTokens = model.Int(prompt)
	}
	if hasCompletion {
		r.ReportedCompletionTokens = model.Int(completion)
	}
	if hasCached {
		r.ReportedCachedTokens = model.Int(cached)
	}
	if hasCost {
		r.ReportedCostUSD = model.Float(cost)
	}
}

// finish adds the Storyline-level warnings and finalizes it.
func (b *builder) finish() *model.Storyline {
	sl := b.sl
	if b.missing > 0 {
		b.warn(fmt.Sprintf("%d attachment reference(s) name no attachment of the sample; kept as written", b.missing), b.d.atSample...)
	}
	if n := format.UnansweredCalls(sl.ToolCalls); n > 0 {
		b.warn(fmt.Sprintf("%d tool call(s) have no result", n), b.d.atSample...)
	}
	sl.Finalize(b.src.File)
	return sl
}
