package langfuse

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// builder accumulates one Storyline's steps and calls.
type builder struct {
	sl      *model.Storyline
	byID    map[string][]int // unanswered calls by id
	pending []int            // unanswered calls, oldest first
}

func newBuilder(sl *model.Storyline) *builder { return &builder{sl: sl, byID: map[string][]int{}} }

// run is one Storyline being built: the trace's (agent nil) or a nested
// agent's.
type run struct {
	b         *builder
	agent     *observation
	prompted  bool // the first generation's input was taken
	ended     time.Time
	errored   bool
	counts    map[string]int // observations that are no step, by type
	subagents []model.SubagentRef
}

// observation maps one observation of the run.
func (r *run) observation(o *observation) {
	if end, ok := format.Time(o.obj["endTime"]); ok && end.After(r.ended) {
		r.ended = end
	}
	if format.String(o.obj["level"]) == "ERROR" {
		r.errored = true
	}
	switch o.typ {
	case "GENERATION":
		r.generation(o)
	case "TOOL":
		r.tool(o)
	case "EVENT":
		st := model.Step{StepID: o.id, Source: model.SourceSystem, MessageKind: "event", Timestamp: timeOrNil(o.start),
			MessageValue: model.Str(o.name), Extra: observationExtra(o.obj)}
		r.b.sl.Steps = append(r.b.sl.Steps, st)
	default:
		if r.counts == nil {
			r.counts = map[string]int{}
		}
		r.counts[o.typ]++
	}
}

// generation maps a model call: the first one's input gives the system
// and user turns that started the run (later inputs repeat the history);
// its output is an agent step with the model's text and tool calls.
func (r *run) generation(o *observation) {
	b := r.b
	if !r.prompted {
		r.prompted = true
		// An agent run given an earlier conversation (message history)
		// repeats it: only the turns after its last model or tool message
		// are this run's.
		in := messages(o.obj["input"], "user")
		first := 0
		for i, m := range in {
			if m.role == "assistant" || m.role == "model" || m.role == "tool" || len(m.calls)+len(m.results) > 0 {
				first = i + 1
			}
		}
		for i, m := range in[first:] {
			i += first
			var src string
			switch m.role {
			case "system", "developer":
				src = model.SourceSystem
			case "user", "human":
				src = model.SourceUser
			default:
				continue
			}
			if len(m.texts) == 0 {
				continue
			}
			b.sl.Steps = append(b.sl.Steps, model.Step{StepID: o.id + "/input/" + strconv.Itoa(i), Source: src, MessageKind: format.KindText,
				MessageValue: model.StrAlways(strings.Join(m.texts, "\n")), Timestamp: timeOrNil(o.start)})
		}
	}
	st := model.Step{StepID: o.id, Source: model.SourceAgent, MessageKind: format.KindText, Timestamp: timeOrNil(o.start)}
	if m := format.String(o.obj["model"]); m != "" {
		st.ModelName = model.Str(m)
		if b.sl.Run.AgentModelName == nil {
			b.sl.Run.AgentModelName = model.Str(m)
		}
	}
	usage(&st, o.obj)
	var texts []string
	var calls []call
	for _, m := range messages(o.obj["output"], "assistant") {
		if m.role == "assistant" || m.role == "model" {
			texts = append(texts, m.texts...)
			calls = append(calls, m.calls...)
		}
	}
	if len(calls) == 0 {
		calls = recordedCalls(o.obj)
	}
	if len(texts) > 0 {
		st.MessageValue = model.StrAlways(strings.Join(texts, "\n"))
	} else if len(calls) > 0 {
		st.MessageKind = "tool_calls_only"
	}
	st.Extra = observationExtra(o.obj)
	b.sl.Steps = append(b.sl.Steps, st)
	for _, c := range calls {
		tc := model.ToolCall{StepID: o.id, ToolCallID: c.id, FunctionName: c.name}
		if c.args != "" {
			tc.Arguments, tc.ArgumentsValid = model.StrAlways(c.args), jsonx.IsValid(c.args)
		}
		i := len(b.sl.ToolCalls)
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
		b.pending = append(b.pending, i)
		if c.id != "" {
			b.byID[c.id] = append(b.byID[c.id], i)
		}
	}
}

// recordedCalls reads the calls Langfuse extracted into toolCalls (JSON
// texts {id, arguments, …}) with their names in toolCallNames, for an
// output it could parse and this reader cannot.
func recordedCalls(obj map[string]jsonx.RawMessage) []call {
	list, _ := format.SplitArray(obj["toolCalls"])
	names, _ := format.SplitArray(obj["toolCallNames"])
	var out []call
	for i, e := range list {
		c := format.SplitObject(decoded(e))
		if c == nil {
			continue
		}
		var name string
		if i < len(names) {
			name = format.String(names[i])
		}
		out = append(out, call{format.String(c["id"]), name, argText(c["arguments"])})
	}
	return out
}

// usage maps Langfuse's usageDetails (input, output, and the details it
// keeps under prefixed names) and the observation's total cost.
func usage(st *model.Step, obj map[string]jsonx.RawMessage) {
	u := format.SplitObject(obj["usageDetails"])
	st.PromptTokens = format.IntOf(u["input"], u["promptTokens"])
	st.CompletionTokens = format.IntOf(u["output"], u["completionTokens"])
	st.CachedTokens = format.IntOf(u["prompt_details.cache_read"], u["input_cached_tokens"], u["cache_read_input_tokens"], u["input_cache_read"])
	st.ReasoningTokens = format.IntOf(u["completion_details.reasoning"], u["output_reasoning_tokens"], u["output_reasoning"])
	if c, ok := format.Float(obj["totalCost"]); ok {
		st.CostUSD = model.Float(c)
	} else if c, ok := format.Float(format.SplitObject(obj["costDetails"])["total"]); ok {
		st.CostUSD = model.Float(c)
	}
}

// tool maps a tool execution: a tool step with its result, which answers
// the model's call with the same id (the span's gen_ai.tool.call.id), else
// the earliest unanswered call of its name. A tool no call asked for is a
// call of its own whose record holds its result.
func (r *run) tool(o *observation) {
	b := r.b
	name := format.String(o.attrs["gen_ai.tool.name"])
	if name == "" {
		name = format.String(o.attrs["tool.name"])
	}
	if name == "" {
		name = o.name
	}
	res := text(o.obj["output"])
	st := model.Step{StepID: o.id, Source: model.SourceTool, MessageKind: format.KindText, Timestamp: timeOrNil(o.start), Extra: observationExtra(o.obj)}
	if res != "" {
		st.MessageValue = model.StrAlways(res)
	}
	b.sl.Steps = append(b.sl.Steps, st)
	status := model.ResultOK
	if format.String(o.obj["level"]) == "ERROR" {
		status = model.ResultError
	}
	i, link := b.answer(format.String(o.attrs["gen_ai.tool.call.id"]), name)
	if i < 0 {
		tc := model.ToolCall{StepID: o.id, ToolCallID: format.String(o.attrs["gen_ai.tool.call.id"]), FunctionName: name, ResultLink: model.LinkInline}
		if args := argText(decoded(o.obj["input"])); args != "" {
			tc.Arguments, tc.ArgumentsValid = model.StrAlways(args), jsonx.IsValid(args)
		}
		i = len(b.sl.ToolCalls)
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	} else {
		b.sl.ToolCalls[i].ResultStepID, b.sl.ToolCalls[i].ResultLink = model.Str(o.id), link
	}
	tc := &b.sl.ToolCalls[i]
	tc.ResultStatus, tc.Result = status, model.StrAlways(res)
}

// answer finds the call a result answers and marks it answered: by id,
// else the earliest unanswered call of the name.
func (b *builder) answer(id, name string) (int, string) {
	take := func(i int) {
		b.pending = slicesDelete(b.pending, i)
		for k, list := range b.byID {
			b.byID[k] = slicesDelete(list, i)
		}
	}
	if list := b.byID[id]; id != "" && len(list) > 0 {
		i := list[0]
		take(i)
		return i, model.LinkByID
	}
	for _, i := range b.pending {
		if b.sl.ToolCalls[i].FunctionName == name {
			take(i)
			return i, model.LinkByName
		}
	}
	return -1, ""
}

func slicesDelete(list []int, v int) []int {
	out := list[:0]
	for _, x := range list {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// subagent records a nested agent's run: a step of this run where it
// started, linked to the agent's Storyline.
func (r *run) subagent(o *observation, session string) {
	name := format.String(o.attrs["gen_ai.agent.name"])
	if name == "" {
		name = o.name
	}
	r.b.sl.Steps = append(r.b.sl.Steps, model.Step{StepID: o.id, Source: model.SourceAgent, MessageKind: "subagent",
		MessageValue: model.Str(name), Timestamp: timeOrNil(o.start)})
	r.subagents = append(r.subagents, model.SubagentRef{StepID: o.id, SessionID: session, Embedded: true, ChildSessionID: session})
	if end, ok := format.Time(o.obj["endTime"]); ok && end.After(r.ended) {
		r.ended = end
	}
}

func (r *run) finish(src format.Source) *model.Storyline {
	sl := r.b.sl
	run := &sl.Run
	if r.agent != nil {
		if end, ok := format.Time(r.agent.obj["endTime"]); ok && end.After(r.ended) {
			r.ended = end
		}
		if format.String(r.agent.obj["level"]) == "ERROR" {
			r.errored = true
		}
	}
	run.EndedAt = timeOrNil(r.ended)
	if r.errored {
		run.Status = model.StatusError
	}
	if len(r.subagents) > 0 {
		b, _ := json.Marshal(r.subagents)
		run.SubagentRefs = model.StrAlways(string(b))
	}
	if len(r.counts) > 0 {
		b, _ := json.Marshal(r.counts)
		run.Extra = format.MergeExtra(run.Extra, "observation_counts", b)
	}
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		sl.Warnings = append(sl.Warnings, model.Warning{Message: strconv.Itoa(missing) + " tool call(s) have no result"})
	}
	if run.StartedAt == nil {
		run.StartedAt, _ = format.StepTimeRange(sl.Steps)
	}
	sl.Finalize(src.File)
	return sl
}
