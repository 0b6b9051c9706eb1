package openai

import (
	"context"
	"io"
	"path"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// readDocument reads a whole single-document file as a JSON object, held
// against the document budget until release (format.ReadWhole).
func readDocument(ctx context.Context, r io.Reader, src format.Source) (top map[string]jsonx.RawMessage, release func(), err error) {
	data, release, err := format.ReadWhole(ctx, r, src, "openai")
	if err != nil {
		return nil, nil, err
	}
	top, err = decodeObject(data)
	if err != nil {
		release()
		if !jsonx.Valid(data) {
			return nil, nil, format.DocumentError(src, data, "openai", err)
		}
		return nil, nil, format.Errorf(src, 0, "", "%w", err)
	}
	return top, release, nil
}

// fileID names a single-document Storyline without an id of its own: the
// file name without its extensions.
func fileID(src format.Source) string {
	name := path.Base(strings.ReplaceAll(src.File, "\\", "/"))
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	if name == "" || name == "." || name == "/" {
		return "doc"
	}
	return name
}

// wrappedIDKeys are the wrapper keys taken as the Storyline's id.
var wrappedIDKeys = []string{"instance_id", "task_id", "session_id", "conversation_id", "id", "run_id"}

// normalizeWrapped reads one object wrapping a message list with metadata,
// such as "openai-chat" exports. (SWE-agent and mini-swe-agent files have
// their own adapter, internal/format/sweagent.)
func normalizeWrapped(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	top, release, err := readDocument(ctx, r, src)
	if err != nil {
		return err
	}
	defer release()
	b := newBuilder(layoutWrapped, loc{})
	idKey, id := firstString(mapObject(top), wrappedIDKeys...)
	if id == "" {
		id = fileID(src)
	}
	b.sl.Run.RunID, b.sl.Run.SessionID = id, id
	b.chatMessages(top["messages"], 0, loc{ptr: format.Pointer("messages")})
	if err := ctx.Err(); err != nil {
		return err
	}
	mapped := b.wrapperRun(top)
	b.sl.Run.Extra = format.Extra(top, append(mapped, "messages", idKey)...)
	return emit(b.finish(src.File))
}

// wrapperRun maps wrapper metadata to run columns and returns the top-level
// keys it consumed.
func (b *builder) wrapperRun(top map[string]jsonx.RawMessage) []string {
	run := &b.sl.Run
	var mapped []string
	if a, ok := stringValue(top["agent"]); ok {
		run.AgentName = model.Str(a)
		mapped = append(mapped, "agent")
	}
	if m, ok := stringValue(top["model"]); ok {
		run.AgentModelName = model.Str(m)
		mapped = append(mapped, "model")
	}
	run.ReportedStepCount = format.IntOf(top["message_count"])
	run.Status = model.StatusUnknown
	return mapped
}
