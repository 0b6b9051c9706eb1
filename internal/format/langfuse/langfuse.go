// Package langfuse reads Langfuse trace exports: a trace with its
// observations as the Langfuse UI and API give them ({trace, observations}
// from the trace page's export, or the public API's trace with its
// observations inline). Agents built on the Claude Agent SDK, the OpenAI
// Agents SDK, Pydantic AI and most frameworks reach Langfuse over
// OpenTelemetry, so one export format covers many producers. A trace is a
// Storyline; an agent observation nested inside it is a subagent
// Storyline. docs/formats.md (Langfuse section) documents the mapping.
package langfuse

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Layouts; runs.source_format is "langfuse/<layout>".
const (
	LayoutExport = "export" // {trace: {…}, observations: […]}
	LayoutTrace  = "trace"  // the API's trace: {id, projectId, timestamp, …, observations: […]}
)

type adapter struct{}

// New returns the Langfuse adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.Langfuse }

// isTrace recognizes a Langfuse trace object: its id, the project it
// belongs to and its timestamp, with the observations or scores Langfuse
// attaches.
func isTrace(o *format.Obj) bool {
	return o.Has("id") && o.Has("projectId") && o.Has("timestamp") && (o.Has("observations") || o.Has("scores"))
}

// Detect claims an object whose trace member is a Langfuse trace beside an
// observations list, or that is itself a trace with its observations.
func (adapter) Detect(p *format.Probe) (string, bool) {
	if p.Shape != format.ShapeObject {
		return "", false
	}
	switch f := p.First; {
	case f.Has("trace") && f.Has("observations") && isTrace(f.Sub("trace")):
		return LayoutExport, true
	case isTrace(f) && f.Has("observations") && f.Has("latency"):
		return LayoutTrace, true
	}
	return "", false
}

func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	if layout != LayoutExport && layout != LayoutTrace {
		return fmt.Errorf("langfuse: unknown layout %q", layout)
	}
	data, release, err := format.ReadWhole(ctx, r, src, "langfuse")
	if err != nil {
		return err
	}
	defer release()
	if !src.Valid && !jsonx.Valid(data) {
		var v jsonx.RawMessage
		return format.DocumentError(src, data, "langfuse", jsonx.Unmarshal(data, &v))
	}
	top := format.SplitObject(data)
	if top == nil {
		return format.Errorf(src, 0, "", "langfuse: the export is not a JSON object")
	}
	trace, ptr := top, ""
	if layout == LayoutExport {
		if trace = format.SplitObject(top["trace"]); trace == nil {
			return format.Errorf(src, 0, "/trace", "langfuse: trace is not an object")
		}
		ptr = "/trace"
	}
	// The export repeats the observations inside the trace, without their
	// input and output; the top-level list is the full one.
	list, listPtr := top["observations"], "/observations"
	if elems, _ := format.SplitArray(list); len(elems) == 0 && layout == LayoutExport {
		list, listPtr = trace["observations"], "/trace/observations"
	}
	elems, ok := format.SplitArray(list)
	if !ok && !format.IsNull(list) {
		return format.Errorf(src, 0, listPtr, "langfuse: observations is not an array")
	}
	t := newTree(src, trace, ptr)
	for i, e := range elems {
		o := format.SplitObject(e)
		if o == nil {
			t.warn(listPtr+format.Pointer(i), "observation is not an object; skipped")
			continue
		}
		t.add(o, listPtr+format.Pointer(i))
	}
	for _, sl := range t.storylines() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(sl); err != nil {
			return err
		}
	}
	return nil
}

// observation is one observation and what the tree knows of it.
type observation struct {
	obj        map[string]jsonx.RawMessage
	ptr        string
	id, parent string
	typ, name  string
	start      time.Time
	attrs      map[string]jsonx.RawMessage // metadata.attributes (OpenTelemetry span attributes)
	order      int
}

// tree groups a trace's observations into Storylines.
type tree struct {
	src      format.Source
	trace    map[string]jsonx.RawMessage
	ptr      string
	obs      []*observation
	byID     map[string]*observation
	roots    map[*observation]bool // rooted, once known
	warnings []model.Warning
}

func newTree(src format.Source, trace map[string]jsonx.RawMessage, ptr string) *tree {
	return &tree{src: src, trace: trace, ptr: ptr, byID: map[string]*observation{}, roots: map[*observation]bool{}}
}

func (t *tree) warn(ptr, m string) {
	t.warnings = append(t.warnings, model.Warning{Pointer: ptr, Message: m})
}

func (t *tree) add(obj map[string]jsonx.RawMessage, ptr string) {
	o := &observation{obj: obj, ptr: ptr, id: format.String(obj["id"]), parent: format.String(obj["parentObservationId"]),
		typ: format.String(obj["type"]), name: format.String(obj["name"]), order: len(t.obs)}
	o.start, _ = format.Time(obj["startTime"])
	meta := format.SplitObject(decoded(obj["metadata"]))
	o.attrs = format.SplitObject(decoded(meta["attributes"]))
	if o.id == "" {
		o.id = "observation-" + strconv.Itoa(o.order)
	}
	if _, dup := t.byID[o.id]; dup {
		t.warn(ptr+"/id", "observation id "+strconv.Quote(o.id)+" repeats; the first is kept as the parent of others")
	} else {
		t.byID[o.id] = o
	}
	t.obs = append(t.obs, o)
}

// isAgent says whether an observation is an agent run of its own: Langfuse
// types it AGENT (OpenInference span kind AGENT, OpenTelemetry
// invoke_agent), or its span attributes name the agent
// (gen_ai.agent.name, as Pydantic AI's agent runs carry).
func (o *observation) isAgent() bool {
	return o.typ == "AGENT" || format.String(o.attrs["gen_ai.agent.name"]) != "" ||
		format.String(o.attrs["gen_ai.operation.name"]) == "invoke_agent"
}

// owner is the observation whose Storyline o belongs to: its nearest
// ancestor that is a nested agent, or nil for the trace's own Storyline.
// An observation whose parent is unknown belongs to the trace, and so does
// one whose parents loop.
func (t *tree) owner(o *observation) *observation {
	if !t.rooted(o) {
		return nil
	}
	for p := t.byID[o.parent]; p != nil; p = t.byID[p.parent] {
		if t.nested(p) {
			return p
		}
	}
	return nil
}

// nested says whether o is an agent run inside the trace's tree: an agent
// with a known parent, whose parents reach a root.
func (t *tree) nested(o *observation) bool {
	return o.isAgent() && t.byID[o.parent] != nil && t.rooted(o)
}

// rooted says whether o's parents end at an observation without a known
// parent, rather than loop.
func (t *tree) rooted(o *observation) bool {
	if r, ok := t.roots[o]; ok {
		return r
	}
	seen := map[*observation]bool{}
	p := o
	for p != nil && !seen[p] {
		seen[p] = true
		p = t.byID[p.parent]
	}
	for q := range seen {
		t.roots[q] = p == nil
	}
	return p == nil
}

// storylines builds the trace's Storyline and one per nested agent, the
// trace's first.
func (t *tree) storylines() []*model.Storyline {
	slices.SortStableFunc(t.obs, func(a, b *observation) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.order, b.order)
	})
	traceID := format.String(t.trace["id"])
	if traceID == "" {
		traceID = format.FileID(t.src, "trace")
		t.warn(t.ptr+"/id", "the trace has no id; named after the file")
	}
	main := t.newStoryline(traceID, nil)
	main.b.sl.Warnings = append(main.b.sl.Warnings, t.warnings...)
	runs := map[*observation]*run{nil: main}
	order := []*run{main}
	var get func(o *observation) *run
	get = func(o *observation) *run {
		if r := runs[o]; r != nil {
			return r
		}
		parent := get(t.owner(o))
		r := t.newStoryline(traceID, o)
		r.b.sl.Run.ParentSessionID = model.Str(parent.b.sl.Run.SessionID)
		parent.subagent(o, r.b.sl.Run.SessionID)
		runs[o] = r
		order = append(order, r)
		return r
	}
	for _, o := range t.obs {
		if t.nested(o) {
			get(o) // a nested agent: its step in the parent comes at its start
			continue
		}
		get(t.owner(o)).observation(o)
	}
	out := make([]*model.Storyline, len(order))
	for i, r := range order {
		out[i] = r.finish(t.src)
	}
	return out
}

// newStoryline starts the trace's Storyline (agent nil) or a nested
// agent's.
func (t *tree) newStoryline(traceID string, agent *observation) *run {
	sl := &model.Storyline{Run: model.Run{RunID: traceID, SessionID: traceID, SourceFormat: format.Langfuse + "/" + LayoutExport}}
	if t.ptr == "" {
		sl.Run.SourceFormat = format.Langfuse + "/" + LayoutTrace
	}
	r := &run{b: newBuilder(sl), agent: agent}
	if agent == nil {
		sl.Run.AgentName = model.Str(format.String(t.trace["name"]))
		if ts, ok := format.Time(t.trace["timestamp"]); ok {
			sl.Run.StartedAt = model.Time(ts)
		}
		sl.Run.Scores = scores(t.trace["scores"])
		sl.Run.Extra = format.Extra(withoutEmpty(t.trace), "id", "name", "timestamp", "scores", "observations", "projectId",
			"createdAt", "updatedAt", "bookmarked", "public", "corrections", "htmlPath")
		return r
	}
	sl.Run.SessionID = traceID + "/" + agent.id
	name := format.String(agent.attrs["gen_ai.agent.name"])
	if name == "" {
		name = agent.name
	}
	sl.Run.AgentName = model.Str(name)
	sl.Run.StartedAt = timeOrNil(agent.start)
	sl.Run.Extra = observationExtra(agent.obj)
	return r
}

// scores are the trace's scores (evaluations: an LLM judge, a human, an
// API) as {name: value}. None of them is the run's reward: their meaning
// and direction (toxicity, correctness, …) are the project's own.
func scores(raw jsonx.RawMessage) *string {
	elems, _ := format.SplitArray(raw)
	out := map[string]jsonx.RawMessage{}
	for _, e := range elems {
		s := format.SplitObject(e)
		name := format.String(s["name"])
		if name == "" {
			continue
		}
		v := s["value"]
		if format.IsNull(v) {
			v = s["stringValue"]
		}
		out[name] = v
	}
	if len(out) == 0 {
		return nil
	}
	return format.Extra(out)
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return model.Time(t)
}

// withoutEmpty drops null, "" and empty list or object members.
func withoutEmpty(obj map[string]jsonx.RawMessage) map[string]jsonx.RawMessage {
	out := make(map[string]jsonx.RawMessage, len(obj))
	for k, v := range obj {
		if !format.EmptyJSON(v) && string(format.TrimSpace(v)) != `""` {
			out[k] = v
		}
	}
	return out
}

// observationKnown are the observation members mapped to columns or
// repeated elsewhere; the rest of a nested agent's go to its run's extra.
var observationKnown = []string{"id", "traceId", "projectId", "parentObservationId", "type", "name", "startTime", "endTime",
	"input", "output", "createdAt", "updatedAt", "usageDetails", "costDetails", "providedCostDetails", "inputCost", "outputCost",
	"totalCost", "inputUsage", "outputUsage", "totalUsage", "model", "internalModelId", "internalModel", "toolCalls",
	"toolCallNames", "toolDefinitions", "environment", "level", "latency", "timeToFirstToken", "completionStartTime",
	"usagePricingTierId", "usagePricingTierName", "promptId", "promptName", "promptVersion"}

func observationExtra(obj map[string]jsonx.RawMessage) *string {
	rest := withoutEmpty(obj)
	if m := format.SplitObject(decoded(obj["metadata"])); m != nil {
		delete(m, "resourceAttributes")
		delete(m, "scope")
		if attrs := format.SplitObject(decoded(m["attributes"])); attrs != nil {
			// Copies of input and output, and whole message histories.
			for k := range attrs {
				if k == "input.value" || k == "output.value" || strings.HasPrefix(k, "pydantic_ai.all_messages") || strings.HasPrefix(k, "logfire.") {
					delete(attrs, k)
				}
			}
			b, _ := json.Marshal(attrs)
			m["attributes"] = b
		}
		delete(rest, "metadata")
		if extra := format.Extra(withoutEmpty(m)); extra != nil {
			rest["metadata"] = jsonx.RawMessage(*extra)
		}
	}
	return format.Extra(rest, observationKnown...)
}
