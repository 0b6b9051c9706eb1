// Package geminicli reads Gemini CLI chat sessions: the session file the
// CLI's chat recording writes under ~/.gemini/tmp/<project>/chats/, either
// the older single JSON document (session-*.json) or the append-only JSON
// Lines log that replaced it (session-*.jsonl: a metadata line, message
// records, $set metadata updates and $rewindTo records). Each file is one
// session, one Storyline. docs/formats.md (Gemini CLI section) documents
// the mapping field by field.
package geminicli

import (
	"context"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Layouts; runs.source_format is "gemini-cli/<layout>".
const (
	LayoutJSON  = "json"  // one document {sessionId, projectHash, ..., messages}
	LayoutJSONL = "jsonl" // a metadata line, then records
)

type adapter struct{}

// New returns the Gemini CLI adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.GeminiCLI }

// isSession recognizes the session metadata both layouts start with: a
// sessionId next to the projectHash the CLI keys its storage by.
func isSession(o *format.Obj) bool {
	return o.Has("sessionId") && o.Has("projectHash")
}

// Detect claims a JSON document whose leading keys are the session
// metadata, and JSON Lines whose first line is.
func (adapter) Detect(p *format.Probe) (string, bool) {
	switch {
	case !isSession(p.First):
	case p.Shape == format.ShapeObject:
		return LayoutJSON, true
	case p.Shape == format.ShapeLines:
		return LayoutJSONL, true
	}
	return "", false
}

func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	var s *session
	switch layout {
	case LayoutJSON:
		data, release, err := format.ReadWhole(ctx, r, src, "gemini-cli")
		if err != nil {
			return err
		}
		defer release()
		if !jsonx.Valid(data) {
			var v jsonx.RawMessage
			return format.DocumentError(src, data, "gemini-cli", jsonx.Unmarshal(data, &v))
		}
		top := format.SplitObject(data)
		if top == nil {
			return format.Errorf(src, 0, "", "gemini-cli: the document is not a JSON object")
		}
		s = newSession(layout)
		s.metadata(top)
		s.setMessages(top["messages"], loc{ptr: "/messages"})
	case LayoutJSONL:
		s = newSession(layout)
		if err := format.EachLine(ctx, r, s.record); err != nil {
			return err
		}
	default:
		return fmt.Errorf("gemini-cli: unknown layout %q", layout)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return emit(s.storyline(src))
}
