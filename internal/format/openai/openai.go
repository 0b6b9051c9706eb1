// Package openai reads OpenAI-style trajectories: Chat Completions message
// lists in their common on-disk layouts (fine-tuning JSONL, arrays,
// ShareGPT, harbor trace exports, wrapped agent trajectories, message logs,
// request/response logs), Responses API items, and Codex CLI rollouts.
// docs/formats.md (openai section) documents the mapping field by field.
package openai

import (
	"context"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
)

// Layouts, as returned by Detect and written to runs.source_format as
// openai/<layout>.
const (
	layoutChatJSONL  = "chat-jsonl"
	layoutChatArray  = "chat-array"
	layoutShareGPT   = "sharegpt"
	layoutHarbor     = "harbor-traces"
	layoutWrapped    = "wrapped"
	layoutMessages   = "messages-jsonl"
	layoutRequestLog = "request-log"
	layoutResponses  = "responses"
	layoutCodex      = "codex-rollout"
)

type adapter struct{}

// New returns the OpenAI Messages adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.OpenAI }

// LineRecords: chat JSONL holds one conversation per line.
func (adapter) LineRecords(layout string) format.RecordNormalizer {
	if layout != layoutChatJSONL {
		return nil
	}
	return &chatRecords{layout: layout, ids: format.SessionIDs{}}
}

func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	switch layout {
	case layoutChatJSONL, layoutChatArray:
		return normalizeChat(ctx, r, src, layout, emit)
	case layoutShareGPT:
		return normalizeShareGPT(ctx, r, src, emit)
	case layoutHarbor:
		return normalizeHarbor(ctx, r, src, emit)
	case layoutWrapped:
		return normalizeWrapped(ctx, r, src, emit)
	case layoutMessages:
		return normalizeMessageLines(ctx, r, src, emit)
	case layoutRequestLog:
		return normalizeRequestLog(ctx, r, src, emit)
	case layoutResponses:
		return normalizeResponses(ctx, r, src, emit)
	case layoutCodex:
		return normalizeCodex(ctx, r, src, emit)
	}
	return fmt.Errorf("openai: unknown layout %q", layout)
}
