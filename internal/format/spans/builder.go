package spans

import (
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// run is one Storyline being built: the trace's (agent nil) or a nested
// agent's.
type run struct {
	b         *builder
	agent     *Span
	prompted  bool // the first model call's input was taken
	ended     time.Time
	errored   bool
	counts    map[string]int // spans that are no step, by type
	subagents []model.SubagentRef
}

// builder accumulates one Storyline's steps and calls.
type builder struct {
	sl      *model.Storyline
	byID    map[string][]int // unanswered calls by id
	pending []int            // unanswered calls, oldest first
}

func newRun(sl *model.Storyline, agent *Span) *run {
	return &run{b: &builder{sl: sl, byID: map[string][]int{}}, agent: agent}
}

// span maps one span of the run.
func (r *run) span(s *Span) {
	if s.End.After(r.ended) {
		r.ended = s.End
	}
	if s.Error && s.Kind != Tool { // a failed tool is its call's result; the agent may go on
		r.errored = true
	}
	switch s.Kind {
	case LLM:
		r.generation(s)
	case Tool:
		r.tool(s)
	case Event:
		r.b.sl.Steps = append(r.b.sl.Steps, model.Step{StepID: s.ID, Source: model.SourceSystem, MessageKind: "event",
			Timestamp: timeOrNil(s.Start), MessageValue: model.Str(s.Name), Extra: s.Extra})
	default:
		if r.counts == nil {
			r.counts = map[string]int{}
		}
		r.counts[s.Type]++
	}
}

// generation maps a model call: the first one's input gives the system
// and user turns that started the run (later inputs repeat the history);
// its output is an agent step with the model's text and tool calls.
func (r *run) generation(s *Span) {
	b := r.b
	if !r.prompted {
		r.prompted = true
		// A call given an earlier conversation (message history) repeats
		// it: the turns up to its last model or tool message are copied
		// context (kept as rows, not counted); the turns after it are
		// this run's.
		in := messages(s.Input, "user")
		first := 0
		for i, m := range in {
			if m.role == "assistant" || m.role == "model" || m.role == "tool" || len(m.calls)+len(m.results) > 0 {
				first = i + 1
			}
		}
		for i, m := range in {
			var src string
			switch m.role {
			case "system", "developer":
				src = model.SourceSystem
			case "user", "human":
				src = model.SourceUser
			case "assistant", "model":
				src = model.SourceAgent
			default:
				continue
			}
			if len(m.texts) == 0 || src == model.SourceAgent && i >= first {
				continue
			}
			b.sl.Steps = append(b.sl.Steps, model.Step{StepID: s.ID + "/input/" + strconv.Itoa(i), Source: src, MessageKind: format.KindText,
				MessageValue: model.StrAlways(strings.Join(m.texts, "\n")), Timestamp: timeOrNil(s.Start), IsCopiedContext: i < first})
		}
	}
	st := model.Step{StepID: s.ID, Source: model.SourceAgent, MessageKind: format.KindText, Timestamp: timeOrNil(s.Start), Extra: s.Extra}
	if s.Model != "" {
		st.ModelName = model.Str(s.Model)
		if b.sl.Run.AgentModelName == nil {
			b.sl.Run.AgentModelName = model.Str(s.Model)
		}
	}
	s.Usage.Apply(&st)
	var texts []string
	var calls []Call
	for _, m := range messages(s.Output, "assistant") {
		if m.role == "assistant" || m.role == "model" {
			texts = append(texts, m.texts...)
			calls = append(calls, m.calls...)
		}
	}
	if len(calls) == 0 {
		calls = s.Calls
	}
	if len(texts) > 0 {
		st.MessageValue = model.StrAlways(strings.Join(texts, "\n"))
	} else if len(calls) > 0 {
		st.MessageKind = "tool_calls_only"
	}
	b.sl.Steps = append(b.sl.Steps, st)
	for _, c := range calls {
		tc := model.ToolCall{StepID: s.ID, ToolCallID: c.ID, FunctionName: c.Name}
		if c.Args != "" {
			tc.Arguments, tc.ArgumentsValid = model.StrAlways(c.Args), jsonx.IsValid(c.Args)
		}
		i := len(b.sl.ToolCalls)
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
		b.pending = append(b.pending, i)
		if c.ID != "" {
			b.byID[c.ID] = append(b.byID[c.ID], i)
		}
	}
}

// tool maps a tool execution: a tool step with its result, which answers
// the model's call with the span's call id, else the earliest unanswered
// call of its name. A tool no call asked for is a call of its own whose
// record holds its result.
func (r *run) tool(s *Span) {
	b := r.b
	name := s.ToolName
	if name == "" {
		name = s.Name
	}
	res := text(s.Output)
	st := model.Step{StepID: s.ID, Source: model.SourceTool, MessageKind: format.KindText, Timestamp: timeOrNil(s.Start), Extra: s.Extra}
	if res != "" {
		st.MessageValue = model.StrAlways(res)
	}
	b.sl.Steps = append(b.sl.Steps, st)
	i, link := b.answer(s.ToolCallID, name)
	if i < 0 {
		tc := model.ToolCall{StepID: s.ID, ToolCallID: s.ToolCallID, FunctionName: name, ResultLink: model.LinkInline}
		if args := ArgText(Decoded(s.Input)); args != "" {
			tc.Arguments, tc.ArgumentsValid = model.StrAlways(args), jsonx.IsValid(args)
		}
		i = len(b.sl.ToolCalls)
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	} else {
		b.sl.ToolCalls[i].ResultStepID, b.sl.ToolCalls[i].ResultLink = model.Str(s.ID), link
	}
	tc := &b.sl.ToolCalls[i]
	tc.ResultStatus, tc.Result = model.ResultOK, model.StrAlways(res)
	if s.Error {
		tc.ResultStatus = model.ResultError
	}
}

// answer finds the call a result answers and marks it answered: by id,
// else the earliest unanswered call of the name.
func (b *builder) answer(id, name string) (int, string) {
	take := func(i int) {
		b.pending = without(b.pending, i)
		for k, list := range b.byID {
			b.byID[k] = without(list, i)
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

func without(list []int, v int) []int {
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
func (r *run) subagent(s *Span, name, session string) {
	r.b.sl.Steps = append(r.b.sl.Steps, model.Step{StepID: s.ID, Source: model.SourceAgent, MessageKind: "subagent",
		MessageValue: model.Str(name), Timestamp: timeOrNil(s.Start)})
	r.subagents = append(r.subagents, model.SubagentRef{StepID: s.ID, SessionID: session, Embedded: true, ChildSessionID: session})
	if s.End.After(r.ended) {
		r.ended = s.End
	}
}

func (r *run) finish(src format.Source) *model.Storyline {
	sl := r.b.sl
	run := &sl.Run
	if a := r.agent; a != nil {
		if a.End.After(r.ended) {
			r.ended = a.End
		}
		r.errored = r.errored || a.Error
	}
	run.EndedAt = timeOrNil(r.ended)
	if r.errored {
		run.Status = model.StatusError
	}
	if len(r.subagents) > 0 {
		run.SubagentRefs = model.StrAlways(string(marshal(r.subagents)))
	}
	if len(r.counts) > 0 {
		run.Extra = format.MergeExtra(run.Extra, "observation_counts", marshal(r.counts))
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
