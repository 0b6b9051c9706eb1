// Package claudecode reads Claude Code session transcripts: the JSONL file
// Claude Code writes per session under
// ~/.claude/projects/<munged-cwd>/<session-uuid>.jsonl (and subagent files
// under <session>/subagents/). The format is internal and unversioned; the
// adapter reads it leniently. docs/formats.md (Claude Code section)
// documents the mapping field by field.
package claudecode

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Layout is the only layout; runs.source_format is "claude-code/jsonl".
const Layout = "jsonl"

// Line types of the transcript.
const (
	typeUser     = "user"
	typeAsst     = "assistant"
	typeSystem   = "system"
	typeSummary  = "summary"
	typeSnapshot = "file-history-snapshot"
)

// detectLines bounds how many lines of the probe detection looks at.
const detectLines = 256

type adapter struct{}

// New returns the Claude Code adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.ClaudeCode }

// Detect scans the lines of the bounded prefix. Leading non-conversation
// lines (summary {summary, leafUuid}, file-history-snapshot {messageId,
// snapshot}, and lines of other types that carry a sessionId) are passed
// over; the first conversational line decides: a user/assistant line needs
// sessionId, uuid and message, a system line sessionId and uuid. A file
// holding only summary/snapshot lines is claimed too. Anything else (a
// line of another shape, a line that is not JSON) is not Claude Code.
func (adapter) Detect(p *format.Probe) (string, bool) {
	if p.Shape != format.ShapeLines && p.Shape != format.ShapeObject {
		return "", false
	}
	data := bytes.TrimPrefix(p.Prefix, []byte("\xef\xbb\xbf"))
	meta := 0
	for n := 0; n < detectLines && len(data) > 0; {
		var line []byte
		i := bytes.IndexByte(data, '\n')
		last := i < 0
		if last {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n++
		if !jsonx.Valid(line) {
			if last && p.Truncated && meta > 0 {
				break // cut by the detection limit after metadata lines only
			}
			return "", false
		}
		obj := format.SplitObject(line)
		if obj == nil {
			return "", false
		}
		has := func(k string) bool { _, ok := obj[k]; return ok }
		switch format.String(obj["type"]) {
		case typeUser, typeAsst:
			// The message is Anthropic's, with content: Qwen Code writes
			// the same envelope around Gemini messages (parts), which
			// this adapter would read as empty turns.
			if has("sessionId") && has("uuid") && format.SplitObject(obj["message"])["content"] != nil {
				return Layout, true
			}
			return "", false
		case typeSystem:
			if has("sessionId") && has("uuid") {
				return Layout, true
			}
			return "", false
		case typeSummary:
			if !has("summary") || !has("leafUuid") {
				return "", false
			}
		case typeSnapshot:
			if !has("messageId") || !has("snapshot") {
				return "", false
			}
		case "":
			return "", false
		default:
			if !has("sessionId") {
				return "", false
			}
			continue // another Claude Code line type: decided by later lines only
		}
		meta++
	}
	if meta > 0 {
		return Layout, true
	}
	return "", false
}

// Normalize streams the transcript. The session's Storylines (the main
// chain and one per sidechain) end with the file: a receiver that takes runs
// in parts (format.Source.Parts) gets their finished rows every flushBytes
// of lines, so a long session holds only what later lines may still change.
// Otherwise they are held until the end, counted against the query's
// document memory budget (format.HoldSession). Either way the main
// Storyline is finished first, then its subagents.
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	if layout != Layout {
		return fmt.Errorf("claude-code: unknown layout %q", layout)
	}
	s := newSession(src)
	if src.Parts {
		s.emit = emit
	} else {
		release, err := format.HoldSession(ctx, src)
		if err != nil {
			return err
		}
		defer release()
	}
	if err := format.EachLine(ctx, r, s.line); err != nil {
		return err
	}
	for _, sl := range s.finish() {
		if err := emit(sl); err != nil {
			return err
		}
	}
	return nil
}
