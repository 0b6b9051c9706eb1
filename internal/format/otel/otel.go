// Package otel reads OpenTelemetry traces of agents written to files as
// OTLP JSON: one ExportTraceServiceRequest document ({"resourceSpans":
// […]}, as SDK exporters and tests dump them) or one per line (the
// Collector's file exporter). Spans are read through the GenAI semantic
// conventions (gen_ai.*) or OpenInference's (openinference.span.kind,
// llm.*, tool.*): model calls are agent steps, tool executions are tool
// calls linked to their results, agent runs nested in a trace are
// subagents. docs/formats.md (OpenTelemetry section) documents the mapping
// and the convention versions it follows.
package otel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/spans"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Layouts; runs.source_format is "otel/<layout>".
const (
	LayoutJSON  = "otlp-json"  // one {"resourceSpans": […]} document
	LayoutJSONL = "otlp-jsonl" // one per line (Collector file exporter)
)

type adapter struct{}

// New returns the OpenTelemetry adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.OTel }

// genAIEvidence are attribute keys only agent spans carry: an OTLP file
// without one in its detection prefix is some other service's trace.
var genAIEvidence = [][]byte{[]byte(`"gen_ai.`), []byte(`"openinference.span.kind"`)}

// Detect claims OTLP JSON traces — resourceSpans whose first element has
// scopeSpans (or the older instrumentationLibrarySpans) — that carry GenAI
// or OpenInference attributes.
func (adapter) Detect(p *format.Probe) (string, bool) {
	f := p.First
	if f == nil || !f.Has("resourceSpans") {
		return "", false
	}
	rs := f.FirstElem("resourceSpans")
	if !rs.Has("scopeSpans") && !rs.Has("instrumentationLibrarySpans") {
		return "", false
	}
	evidence := false
	for _, key := range genAIEvidence {
		evidence = evidence || bytes.Contains(p.Prefix, key)
	}
	switch {
	case !evidence:
	case p.Shape == format.ShapeObject:
		return LayoutJSON, true
	case p.Shape == format.ShapeLines:
		return LayoutJSONL, true
	}
	return "", false
}

func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	c := &collector{traces: map[string]*trace{}}
	switch layout {
	case LayoutJSON:
		data, release, err := format.ReadWhole(ctx, r, src, "otel")
		if err != nil {
			return err
		}
		defer release()
		if !src.Valid && !jsonx.Valid(data) {
			var v jsonx.RawMessage
			return format.DocumentError(src, data, "otel", jsonx.Unmarshal(data, &v))
		}
		if err := c.request(src, data, 0); err != nil {
			return err
		}
	case LayoutJSONL:
		err := format.EachLine(ctx, r, func(n int64, line []byte) error {
			if !jsonx.Valid(line) {
				var v jsonx.RawMessage
				return format.DocumentError(format.Source{Path: fmt.Sprintf("%s:%d", src.Path, n), File: src.File}, line, "otel", jsonx.Unmarshal(line, &v))
			}
			return c.request(src, line, n)
		})
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("otel: unknown layout %q", layout)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, id := range c.order {
		t := c.traces[id]
		if !t.agentic {
			continue // a trace with no model call, tool or agent span is no trajectory
		}
		for _, sl := range spans.Storylines(src, t.info(layout), t.spans) {
			if err := emit(sl); err != nil {
				return err
			}
		}
	}
	return nil
}

// trace gathers one trace's spans, which may come in several requests.
type trace struct {
	id       string
	spans    []*spans.Span
	resource map[string]jsonx.RawMessage // of the trace's first span
	agentic  bool
	warnings []model.Warning
}

// info is what the trace says of itself: its root span's name and start.
func (t *trace) info(layout string) spans.Trace {
	tr := spans.Trace{ID: t.id, SourceFormat: format.OTel + "/" + layout, Warnings: t.warnings}
	ids := map[string]bool{}
	for _, s := range t.spans {
		ids[s.ID] = true
	}
	for _, s := range t.spans {
		if !ids[s.Parent] {
			tr.Name = s.Name
			if !s.Start.IsZero() {
				tr.Start = model.Time(s.Start)
			}
			break
		}
	}
	if len(t.resource) > 0 {
		tr.Extra = format.Extra(map[string]jsonx.RawMessage{"resource": jsonx.RawMessage(*format.Extra(t.resource))})
	}
	return tr
}

// collector groups the spans of a file by trace, in order of first
// appearance.
type collector struct {
	traces map[string]*trace
	order  []string
}

// request reads one ExportTraceServiceRequest (at line n, 0 in a document).
func (c *collector) request(src format.Source, data []byte, n int64) error {
	top := format.SplitObject(data)
	if top == nil {
		return format.Errorf(src, n, "", "otel: the request is not a JSON object")
	}
	rss, ok := format.SplitArray(top["resourceSpans"])
	if !ok && !format.IsNull(top["resourceSpans"]) {
		return format.Errorf(src, n, "/resourceSpans", "otel: resourceSpans is not an array")
	}
	for i, rsRaw := range rss {
		rs := format.SplitObject(rsRaw)
		resource := attributes(format.SplitObject(rs["resource"])["attributes"])
		scopes, _ := format.SplitArray(rs["scopeSpans"])
		if legacy, ok := format.SplitArray(rs["instrumentationLibrarySpans"]); ok {
			scopes = append(scopes, legacy...)
		}
		for j, ssRaw := range scopes {
			ss := format.SplitObject(ssRaw)
			scope := format.SplitObject(ss["scope"])
			if scope == nil {
				scope = format.SplitObject(ss["instrumentationLibrary"])
			}
			list, _ := format.SplitArray(ss["spans"])
			for k, spRaw := range list {
				sp := format.SplitObject(spRaw)
				ptr := format.Pointer("resourceSpans", i, "scopeSpans", j, "spans", k)
				if sp == nil {
					c.warn("", model.Warning{Line: n, Pointer: ptr, Message: "span is not an object; skipped"})
					continue
				}
				s, id := span(sp, scope)
				t := c.traces[id]
				if t == nil {
					t = &trace{id: id, resource: resource}
					if id == "" {
						t.id = format.FileID(src, "trace")
					}
					c.traces[id] = t
					c.order = append(c.order, id)
				}
				t.spans = append(t.spans, s)
				t.agentic = t.agentic || s.Kind != spans.Other
			}
		}
	}
	return nil
}

func (c *collector) warn(traceID string, w model.Warning) {
	if t := c.traces[traceID]; t != nil {
		t.warnings = append(t.warnings, w)
		return
	}
	t := &trace{id: traceID}
	c.traces[traceID] = t
	c.order = append(c.order, traceID)
	t.warnings = append(t.warnings, w)
}

// firstAttr is the first of keys that the attributes hold, as text.
func firstAttr(attrs map[string]jsonx.RawMessage, keys ...string) string {
	for _, k := range keys {
		if v, ok := attrs[k]; ok && !format.IsNull(v) {
			return strings.TrimSpace(text(v))
		}
	}
	return ""
}

// text is an attribute value as text: a string as it is, anything else as
// compact JSON.
func text(v jsonx.RawMessage) string {
	v = format.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		return format.String(v)
	}
	return string(format.CompactJSON(v))
}
