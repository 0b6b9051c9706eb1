// Package openhands reads OpenHands trajectories: the evaluation output
// file output.jsonl (one object per instance with its event "history"),
// and a saved trajectory (a JSON array of events, or an object with
// "history"). docs/formats.md (OpenHands section) documents the mapping
// field by field.
package openhands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Layouts; runs.source_format is "openhands/<layout>".
const (
	LayoutJSONL = "jsonl" // evaluation output: one instance per line
	LayoutJSON  = "json"  // a saved trajectory: an event array or {history}
)

type adapter struct{}

// New returns the OpenHands adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.OpenHands }

// isEvent recognizes an OpenHands event: id + source + (action or
// observation), and no role (which would make it a chat message).
func isEvent(o *format.Obj) bool {
	return o != nil && o.Has("id") && o.Has("source") && (o.Has("action") || o.Has("observation")) && !o.Has("role")
}

// Detect claims JSON Lines whose first line has a history whose first
// element is an event (jsonl), an array whose first element is an event,
// or one object with such a history (json).
func (adapter) Detect(p *format.Probe) (string, bool) {
	switch p.Shape {
	case format.ShapeLines:
		if p.First.Has("history") && isEvent(p.First.FirstElem("history")) {
			return LayoutJSONL, true
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
	ids := idSet{}
	switch layout {
	case LayoutJSONL:
		return format.EachLine(ctx, r, func(n int64, line []byte) error {
			if !jsonx.Valid(line) {
				var v json.RawMessage
				err := jsonx.Unmarshal(line, &v)
				if err == nil {
					err = fmt.Errorf("invalid JSON")
				}
				return format.Errorf(src, n, "", "openhands line is not valid JSON: %v", err)
			}
			obj := format.SplitObject(line)
			if obj == nil {
				return format.Errorf(src, n, "", "openhands line is not a JSON object")
			}
			b := newBuilder(src, LayoutJSONL, loc{line: n})
			b.record(obj, ids, fmt.Sprintf("line-%d", n))
			return emit(b.finish())
		})
	case LayoutJSON:
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		data = bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
		if !jsonx.Valid(data) {
			var v json.RawMessage
			return format.DocumentError(src, data, "openhands trajectory", jsonx.Unmarshal(data, &v))
		}
		b := newBuilder(src, LayoutJSON, loc{})
		if elems, ok := format.SplitArray(data); ok {
			b.identity(ids, "", fileID(src))
			b.events(elems, "")
		} else if obj := format.SplitObject(data); obj != nil {
			b.record(obj, ids, fileID(src))
		} else {
			return format.Errorf(src, 1, "", "openhands trajectory is neither a JSON array nor an object")
		}
		return emit(b.finish())
	}
	return fmt.Errorf("openhands: unknown layout %q", layout)
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
