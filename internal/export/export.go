// Package export writes normalized Storylines in interchange formats:
// canonical event JSONL, ATIF-v1.7 documents and OpenAI chat-completions
// JSONL. Writers are deterministic (same Storylines in the same order give
// the same bytes) and stream: each Storyline is written as it arrives.
package export

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Export formats.
const (
	Canonical = "canonical"
	ATIF      = "atif"
	OpenAI    = "openai"
)

// Formats lists the export formats.
var Formats = []string{Canonical, ATIF, OpenAI}

// Writer writes Storylines one at a time. dataset is the Storyline's
// Dataset (namespace path); with the Storyline's _file_ and session_id it is
// the full identity some formats record.
type Writer interface {
	Write(dataset string, sl *model.Storyline) error
	Close() error
}

// New returns a writer for format. Canonical and OpenAI write JSONL to w;
// ATIF writes one document per line to w, or, when dir is not empty, one
// file per Storyline under dir.
func New(format string, w io.Writer, dir string) (Writer, error) {
	if dir != "" && format != ATIF {
		return nil, fmt.Errorf("an output directory is only used by --as atif (one document per file)")
	}
	switch format {
	case Canonical:
		return &canonicalWriter{lines: newLines(w), used: map[string]int{}}, nil
	case ATIF:
		if dir != "" {
			return newATIFDir(dir)
		}
		return &atifWriter{lines: newLines(w)}, nil
	case OpenAI:
		return &openaiWriter{lines: newLines(w)}, nil
	}
	return nil, fmt.Errorf("unknown export format %q (want %s)", format, strings.Join(Formats, ", "))
}

// lines writes JSONL through a buffer.
type lines struct{ w *bufio.Writer }

func newLines(w io.Writer) lines { return lines{bufio.NewWriterSize(w, 1<<16)} }

func (l lines) write(b []byte) error {
	l.w.Write(b)
	return l.w.WriteByte('\n')
}

func (l lines) Close() error { return l.w.Flush() }

// digest is a short deterministic hex digest of parts, length-prefixed so
// that no two part lists collide by concatenation.
func digest(n int, parts ...string) string {
	h := blake3.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:n]
}

// callsByStep groups a Storyline's tool calls by calling step, keeping
// call order.
func callsByStep(sl *model.Storyline) map[string][]*model.ToolCall {
	out := map[string][]*model.ToolCall{}
	for i := range sl.ToolCalls {
		tc := &sl.ToolCalls[i]
		out[tc.StepID] = append(out[tc.StepID], tc)
	}
	return out
}

// resultCarriers returns the steps that only carry tool results (OpenAI
// tool messages, Codex outputs): formats that nest results under their call
// write them there instead.
func resultCarriers(sl *model.Storyline) map[string]bool {
	out := map[string]bool{}
	for _, tc := range sl.ToolCalls {
		if tc.ResultStepID != nil && *tc.ResultStepID != tc.StepID {
			out[*tc.ResultStepID] = true
		}
	}
	return out
}

// hasResult reports whether a call has a linked result to write.
func hasResult(tc *model.ToolCall) bool {
	return tc.ResultStatus != model.ResultMissing && tc.ResultStatus != ""
}

// subagentRefs decodes runs.subagent_refs (NULL or a JSON array).
func subagentRefs(r *model.Run) ([]model.SubagentRef, error) {
	if r.SubagentRefs == nil {
		return nil, nil
	}
	var refs []model.SubagentRef
	if err := jsonUnmarshal(*r.SubagentRefs, &refs); err != nil {
		return nil, fmt.Errorf("session %s: subagent_refs: %w", r.SessionID, err)
	}
	return refs, nil
}
