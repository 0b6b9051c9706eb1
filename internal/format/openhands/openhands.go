// Package openhands reads OpenHands trajectories: the evaluation output
// file output.jsonl (one object per instance with its event "history";
// the resolver's output has the same shape), a saved trajectory (a JSON
// array of events, or an object with "history"), and the event stream of
// the V1 software-agent-sdk (one event per line). Events of both
// generations are read: V0 events named by action / observation (and their
// early flat form), V1 events typed by kind. docs/formats.md (OpenHands
// section) documents the mapping field by field.
package openhands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Layouts; runs.source_format is "openhands/<layout>".
const (
	LayoutJSONL  = "jsonl"      // evaluation output: one instance per line
	LayoutJSON   = "json"       // a saved trajectory: an event array or {history}
	LayoutEvents = "sdk-events" // V1 event stream: one event per line, one conversation
)

type adapter struct{}

// New returns the OpenHands adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.OpenHands }

// v0Actions are the action names of OpenHands V0; they recognize the
// early flat events, which have no id or source to go by.
var v0Actions = map[string]bool{
	"message": true, "system": true, "start": true, "read": true, "write": true, "edit": true, "run": true,
	"run_ipython": true, "browse": true, "browse_interactive": true, "delegate": true, "think": true,
	"finish": true, "reject": true, "null": true, "pause": true, "resume": true, "stop": true,
	"change_agent_state": true, "recall": true, "condensation": true, "mcp": true,
}

// isEvent recognizes an OpenHands event and never a chat message (no
// role): V0, id + source + action or observation; V1, id + source + a
// kind ending in Event; early flat V0, a known action name (or an
// observation) without id and source.
func isEvent(o *format.Obj) bool {
	switch {
	case o == nil || o.Has("role"):
		return false
	case o.Has("id") && o.Has("source"):
		return o.Has("action") || o.Has("observation") || isV1Kind(o.Str("kind"))
	case !o.Has("id") && !o.Has("source"):
		return v0Actions[o.Str("action")] || (o.Has("observation") && o.Str("observation") != "")
	}
	return false
}

// Detect claims JSON Lines whose first line has a history whose first
// element is an event (jsonl) or is itself a V1 event (sdk-events), an
// array whose first element is an event, or one object with such a
// history (json).
func (adapter) Detect(p *format.Probe) (string, bool) {
	switch p.Shape {
	case format.ShapeLines:
		if p.First.Has("history") && isEvent(p.First.FirstElem("history")) {
			return LayoutJSONL, true
		}
		if isEvent(p.First) && isV1Kind(p.First.Str("kind")) {
			return LayoutEvents, true
		}
	case format.ShapeArray:
		if isEvent(p.First) {
			return LayoutJSON, true
		}
	case format.ShapeObject:
		if p.First.Has("history") && isEvent(p.First.FirstElem("history")) {
			return LayoutJSON, true
		}
	}
	return "", false
}

// Normalize emits one Storyline per output line (jsonl) or per document
// (json).
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	switch layout {
	case LayoutJSONL:
		recs := &outputRecords{ids: format.SessionIDs{}}
		return format.EachLine(ctx, r, func(n int64, line []byte) error {
			sl, id, err := recs.Record(src, n, line)
			if err != nil {
				return err
			}
			recs.Finish(sl, id)
			return emit(sl)
		})
	case LayoutEvents:
		b := newBuilder(src, LayoutEvents, loc{})
		b.identity("", fileID(src))
		i := 0
		at := func(_ int, parts ...any) []any { return parts } // the line locates the event
		err := format.EachLine(ctx, r, func(n int64, line []byte) error {
			ev, ok := scanRecord(line, nil)
			if !ok {
				var err error
				if ev, err = lineObject(src, n, line); err != nil {
					return err
				}
			}
			b.loc.line = n
			b.event(i, ev, at)
			i++
			return nil
		})
		if err != nil {
			return err
		}
		b.loc.line = 0
		return emit(b.finish())
	case LayoutJSON:
		data, release, err := format.ReadDocument(ctx, r, src, "openhands trajectory")
		if err != nil {
			return err
		}
		defer release()
		b := newBuilder(src, LayoutJSON, loc{})
		if elems, ok := format.SplitArray(data); ok {
			b.identity("", fileID(src))
			b.events(elems, nil, "")
		} else if obj := format.SplitObject(data); obj != nil {
			b.record(obj, splitHistory(obj), fileID(src)) // one record: its id is unique in the file
		} else {
			return format.Errorf(src, 1, "", "openhands trajectory is neither a JSON array nor an object")
		}
		return emit(b.finish())
	}
	return fmt.Errorf("openhands: unknown layout %q", layout)
}

// LineRecords: an evaluation output.jsonl holds one instance per line.
func (adapter) LineRecords(layout string) format.RecordNormalizer {
	if layout != LayoutJSONL {
		return nil
	}
	return &outputRecords{ids: format.SessionIDs{}}
}

// outputRecords normalizes the instances of one output.jsonl. Only the
// ids taken from the data depend on earlier lines (a repeated one gets
// #n): a record is built with its own id, which Finish makes unique.
type outputRecords struct {
	ids format.SessionIDs
}

func (*outputRecords) Record(src format.Source, lineNo int64, line []byte) (*model.Storyline, string, error) {
	var hist history
	obj, ok := scanRecord(line, &hist)
	if !ok {
		var err error
		if obj, err = lineObject(src, lineNo, line); err != nil {
			return nil, "", err
		}
		hist = splitHistory(obj)
	}
	b := newBuilder(src, LayoutJSONL, loc{line: lineNo})
	id := b.record(obj, hist, fmt.Sprintf("line-%d", lineNo))
	return b.finish(), id, nil
}

// Finish makes a record's own id unique within the file.
func (o *outputRecords) Finish(sl *model.Storyline, id string) { o.ids.Finish(sl, id) }

// lineObject decodes one JSON Lines record, which must be an object.
func lineObject(src format.Source, n int64, line []byte) (map[string]jsonx.RawMessage, error) {
	if !jsonx.Valid(line) {
		var v json.RawMessage
		err := jsonx.Unmarshal(line, &v)
		if err == nil {
			err = fmt.Errorf("invalid JSON")
		}
		return nil, format.Errorf(src, n, "", "openhands line is not valid JSON: %v", err)
	}
	obj := format.SplitObject(line)
	if obj == nil {
		return nil, format.Errorf(src, n, "", "openhands line is not a JSON object")
	}
	return obj, nil
}

// fileID names a trajectory without an instance_id after its file.
func fileID(src format.Source) string {
	base := path.Base(strings.ReplaceAll(src.File, "\\", "/"))
	id := strings.TrimSuffix(base, path.Ext(base))
	if id == "" || id == "." || id == "/" {
		return format.OpenHands
	}
	return id
}
