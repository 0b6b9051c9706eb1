// Package spans turns a trace of agent spans — model calls, tool
// executions, agent runs, linked by their parents — into Storylines. It is
// the part that trace formats share: the Langfuse reader (observations)
// and the OpenTelemetry reader (OTLP spans with GenAI or OpenInference
// attributes) each turn their records into Spans and hand them here.
// docs/formats.md (Langfuse, OpenTelemetry) documents the mapping.
package spans

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Kind is what a span did.
type Kind int

const (
	Other Kind = iota // a span that is no step (a chain, a retrieval, a wrapper): its children are read
	LLM               // a model call: an agent step
	Tool              // a tool execution: a tool step answering a call
	Agent             // an agent run: a subagent Storyline when it is nested
	Event             // a point event: a system step
)

// Span is one record of a trace, as a trace format read it.
type Span struct {
	ID, Parent string
	Kind       Kind
	// Type names the record's own type (the Langfuse observation type, the
	// OpenInference span kind), for runs.extra.observation_counts.
	Type       string
	Name       string
	Start, End time.Time
	// Input and Output are the model call's messages (LLM), or the tool's
	// arguments and result (Tool), as JSON; see messages for the dialects.
	Input, Output jsonx.RawMessage
	Model         string
	Usage         format.Usage
	// ToolName and ToolCallID name the call a Tool span answers; AgentName
	// the agent an Agent span runs.
	ToolName, ToolCallID, AgentName string
	// Calls are tool calls recorded beside the output, used when none can
	// be read from it.
	Calls []Call
	Error bool
	Extra *string
	order int
}

// Call is one tool call a model made.
type Call struct{ ID, Name, Args string }

// Trace is what a trace says of itself.
type Trace struct {
	ID, Name     string
	Start        *time.Time
	Scores       *string
	Extra        *string
	SourceFormat string
	Warnings     []model.Warning
}

// tree groups a trace's spans into Storylines.
type tree struct {
	byID  map[string]*Span
	roots map[*Span]bool // rooted, once known
}

// Storylines maps one trace: the trace's own Storyline first, then one per
// nested agent run (see docs/formats.md). spans are taken in start order,
// their order given for ties.
func Storylines(src format.Source, tr Trace, spans []*Span) []*model.Storyline {
	t := &tree{byID: map[string]*Span{}, roots: map[*Span]bool{}}
	var warnings []model.Warning
	for i, s := range spans {
		s.order = i
		if s.ID == "" {
			s.ID = "span-" + strconv.Itoa(i)
		}
		if _, dup := t.byID[s.ID]; dup {
			warnings = append(warnings, model.Warning{Message: "span id " + strconv.Quote(s.ID) + " repeats; the first is kept as the parent of others"})
			continue
		}
		t.byID[s.ID] = s
	}
	spans = slices.Clone(spans)
	slices.SortStableFunc(spans, func(a, b *Span) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.order, b.order)
	})
	main := newRun(&model.Storyline{Run: model.Run{RunID: tr.ID, SessionID: tr.ID, SourceFormat: tr.SourceFormat,
		AgentName: model.Str(tr.Name), StartedAt: tr.Start, Scores: tr.Scores, Extra: tr.Extra}}, nil)
	main.b.sl.Warnings = append(append(main.b.sl.Warnings, tr.Warnings...), warnings...)
	runs := map[*Span]*run{nil: main}
	order := []*run{main}
	var get func(s *Span) *run
	get = func(s *Span) *run {
		if r := runs[s]; r != nil {
			return r
		}
		parent := get(t.owner(s))
		name := s.AgentName
		if name == "" {
			name = s.Name
		}
		session := tr.ID + "/" + s.ID
		r := newRun(&model.Storyline{Run: model.Run{RunID: tr.ID, SessionID: session, SourceFormat: tr.SourceFormat,
			AgentName: model.Str(name), StartedAt: timeOrNil(s.Start), ParentSessionID: model.Str(parent.b.sl.Run.SessionID), Extra: s.Extra}}, s)
		parent.subagent(s, name, session)
		runs[s] = r
		order = append(order, r)
		return r
	}
	for _, s := range spans {
		if t.nested(s) {
			get(s) // its step in the parent comes at its start
			continue
		}
		get(t.owner(s)).span(s)
	}
	out := make([]*model.Storyline, len(order))
	for i, r := range order {
		out[i] = r.finish(src)
	}
	return out
}

// owner is the span whose Storyline s belongs to: its nearest ancestor
// that is a nested agent, or nil for the trace's own Storyline. A span
// whose parent is unknown belongs to the trace, and so does one whose
// parents loop.
func (t *tree) owner(s *Span) *Span {
	if !t.rooted(s) {
		return nil
	}
	for p := t.byID[s.Parent]; p != nil; p = t.byID[p.Parent] {
		if t.nested(p) {
			return p
		}
	}
	return nil
}

// nested says whether s is an agent run inside the trace's tree: an agent
// with a known parent, whose parents reach a root.
func (t *tree) nested(s *Span) bool {
	return s.Kind == Agent && t.byID[s.Parent] != nil && t.rooted(s)
}

// rooted says whether s's parents end at a span without a known parent,
// rather than loop.
func (t *tree) rooted(s *Span) bool {
	if r, ok := t.roots[s]; ok {
		return r
	}
	seen := map[*Span]bool{}
	p := s
	for p != nil && !seen[p] {
		seen[p] = true
		p = t.byID[p.Parent]
	}
	for q := range seen {
		t.roots[q] = p == nil
	}
	return p == nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return model.Time(t)
}

// marshal is json.Marshal of a value that always encodes.
func marshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
