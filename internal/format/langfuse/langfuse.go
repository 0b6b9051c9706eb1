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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/spans"
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
	tr := spans.Trace{ID: format.String(trace["id"]), Name: format.String(trace["name"]), Scores: scores(trace["scores"]),
		SourceFormat: format.Langfuse + "/" + layout,
		Extra: format.Extra(withoutEmpty(trace), "id", "name", "timestamp", "scores", "observations", "projectId",
			"createdAt", "updatedAt", "bookmarked", "public", "corrections", "htmlPath")}
	if ts, ok := format.Time(trace["timestamp"]); ok {
		tr.Start = model.Time(ts)
	}
	if tr.ID == "" {
		tr.ID = format.FileID(src, "trace")
		tr.Warnings = append(tr.Warnings, model.Warning{Pointer: ptr + "/id", Message: "the trace has no id; named after the file"})
	}
	var all []*spans.Span
	for i, e := range elems {
		o := format.SplitObject(e)
		if o == nil {
			tr.Warnings = append(tr.Warnings, model.Warning{Pointer: listPtr + format.Pointer(i), Message: "observation is not an object; skipped"})
			continue
		}
		all = append(all, span(o))
	}
	for _, sl := range spans.Storylines(src, tr, all) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(sl); err != nil {
			return err
		}
	}
	return nil
}

// span reads one observation: its type says what it did, except that an
// observation whose span attributes name an agent (gen_ai.agent.name, as
// Pydantic AI's agent runs carry, or the invoke_agent operation) is an
// agent run whatever Langfuse typed it.
func span(obj map[string]jsonx.RawMessage) *spans.Span {
	meta := format.SplitObject(spans.Decoded(obj["metadata"]))
	attrs := format.SplitObject(spans.Decoded(meta["attributes"]))
	s := &spans.Span{ID: format.String(obj["id"]), Parent: format.String(obj["parentObservationId"]), Type: format.String(obj["type"]),
		Name: format.String(obj["name"]), Input: obj["input"], Output: obj["output"], Model: format.String(obj["model"]),
		ToolName: format.String(attrs["gen_ai.tool.name"]), ToolCallID: format.String(attrs["gen_ai.tool.call.id"]),
		AgentName: format.String(attrs["gen_ai.agent.name"]), Error: format.String(obj["level"]) == "ERROR", Extra: observationExtra(obj)}
	s.Start, _ = format.Time(obj["startTime"])
	s.End, _ = format.Time(obj["endTime"])
	if s.ToolName == "" {
		s.ToolName = format.String(attrs["tool.name"])
	}
	switch s.Type {
	case "GENERATION":
		s.Kind = spans.LLM
		s.Usage = usage(obj)
		s.Calls = recordedCalls(obj)
	case "TOOL":
		s.Kind = spans.Tool
	case "AGENT":
		s.Kind = spans.Agent
	case "EVENT":
		s.Kind = spans.Event
	}
	if s.AgentName != "" || format.String(attrs["gen_ai.operation.name"]) == "invoke_agent" {
		s.Kind = spans.Agent
	}
	return s
}

// recordedCalls reads the calls Langfuse extracted into toolCalls (JSON
// texts {id, arguments, …}) with their names in toolCallNames.
func recordedCalls(obj map[string]jsonx.RawMessage) []spans.Call {
	list, _ := format.SplitArray(obj["toolCalls"])
	names, _ := format.SplitArray(obj["toolCallNames"])
	var out []spans.Call
	for i, e := range list {
		c := format.SplitObject(spans.Decoded(e))
		if c == nil {
			continue
		}
		var name string
		if i < len(names) {
			name = format.String(names[i])
		}
		out = append(out, spans.Call{ID: format.String(c["id"]), Name: name, Args: spans.ArgText(c["arguments"])})
	}
	return out
}

// usage maps Langfuse's usageDetails (input, output, and the details it
// keeps under prefixed names) and the observation's total cost.
func usage(obj map[string]jsonx.RawMessage) format.Usage {
	u := format.SplitObject(obj["usageDetails"])
	out := format.Usage{
		Prompt:     format.IntOf(u["input"], u["promptTokens"]),
		Completion: format.IntOf(u["output"], u["completionTokens"]),
		Cached:     format.IntOf(u["prompt_details.cache_read"], u["input_cached_tokens"], u["cache_read_input_tokens"], u["input_cache_read"]),
		Reasoning:  format.IntOf(u["completion_details.reasoning"], u["output_reasoning_tokens"], u["output_reasoning"]),
	}
	if c, ok := format.Float(obj["totalCost"]); ok {
		out.Cost = model.Float(c)
	} else if c, ok := format.Float(format.SplitObject(obj["costDetails"])["total"]); ok {
		out.Cost = model.Float(c)
	}
	return out
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
	if m := format.SplitObject(spans.Decoded(obj["metadata"])); m != nil {
		delete(m, "resourceAttributes")
		delete(m, "scope")
		if attrs := format.SplitObject(spans.Decoded(m["attributes"])); attrs != nil {
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
