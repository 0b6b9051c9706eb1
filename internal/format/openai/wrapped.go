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

// maxDocumentBytes bounds a single-document layout read into memory.
const maxDocumentBytes = 1 << 30

// readDocument reads a whole single-document file as a JSON object.
func readDocument(r io.Reader, src format.Source) (map[string]jsonx.RawMessage, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDocumentBytes+1))
	if err != nil {
		return nil, format.Errorf(src, 0, "", "read: %w", err)
	}
	if len(data) > maxDocumentBytes {
		return nil, format.Errorf(src, 0, "", "document larger than %d bytes", maxDocumentBytes)
	}
	top, err := decodeObject(data)
	if err != nil {
		if !jsonx.Valid(data) {
			return nil, format.DocumentError(src, data, "openai", err)
		}
		return nil, format.Errorf(src, 0, "", "%w", err)
	}
	return top, nil
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

// normalizeWrapped reads one object wrapping a message list (messages or
// history) with metadata: mini-swe-agent trajectories, "openai-chat"
// exports, SWE-agent .traj files and the like.
func normalizeWrapped(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	top, err := readDocument(r, src)
	if err != nil {
		return err
	}
	msgKey := "messages"
	if _, ok := top[msgKey]; !ok {
		msgKey = "history"
	}
	b := newBuilder(layoutWrapped, loc{})
	idKey, id := firstString(top, wrappedIDKeys...)
	if id == "" {
		id = fileID(src)
	}
	b.sl.Run.RunID, b.sl.Run.SessionID = id, id
	b.chatMessages(top[msgKey], 0, loc{ptr: format.Pointer(msgKey)})
	if err := ctx.Err(); err != nil {
		return err
	}
	mapped := b.wrapperRun(top)
	b.sl.Run.Extra = format.Extra(top, append(mapped, msgKey, idKey)...)
	return emit(b.finish(src.File))
}

// wrapperRun maps wrapper metadata to run columns and returns the top-level
// keys it fully consumed. info is kept in extra as a whole: it is partly
// mapped, and its other members (config, submission) matter to readers.
func (b *builder) wrapperRun(top map[string]jsonx.RawMessage) []string {
	run := &b.sl.Run
	var mapped []string
	var info, stats, config, cfgModel map[string]jsonx.RawMessage
	_ = jsonx.Unmarshal(top["info"], &info)
	_ = jsonx.Unmarshal(info["model_stats"], &stats)
	_ = jsonx.Unmarshal(info["config"], &config)
	_ = jsonx.Unmarshal(config["model"], &cfgModel)

	traj := format.String(top["trajectory_format"])
	switch {
	case format.String(top["agent"]) != "":
		run.AgentName = model.Str(format.String(top["agent"]))
		mapped = append(mapped, "agent")
	case strings.HasPrefix(traj, "mini-swe-agent") || info["mini_version"] != nil:
		run.AgentName = model.Str("mini-swe-agent")
	case top["trajectory"] != nil && top["history"] != nil:
		run.AgentName = model.Str("swe-agent")
	case format.String(config["agent_type"]) != "":
		run.AgentName = model.Str(format.String(config["agent_type"]))
	}
	_, version := firstString(info, "mini_version", "swe_agent_version", "version")
	run.AgentVersion = model.Str(version)
	if m, ok := stringValue(top["model"]); ok {
		run.AgentModelName = model.Str(m)
		mapped = append(mapped, "model")
	} else if _, m := firstString(cfgModel, "model_name", "name"); m != "" {
		run.AgentModelName = model.Str(m)
	}

	if c, ok := format.Float(stats["instance_cost"]); ok {
		run.ReportedCostUSD = model.Float(c)
	}
	run.ReportedPromptTokens = format.IntOf(stats["tokens_sent"])
	run.ReportedCompletionTokens = format.IntOf(stats["tokens_received"])
	run.ReportedStepCount = format.IntOf(top["message_count"])

	exit := format.String(info["exit_status"])
	if exit == "" {
		exit = b.exitMessageStatus()
	}
	run.Status = exitStatus(exit)
	return mapped
}

// exitMessageStatus returns the exit status a mini-swe-agent "exit" message
// carries in its extra, when info has none.
func (b *builder) exitMessageStatus() string {
	for i := len(b.sl.Steps) - 1; i >= 0; i-- {
		var extra struct {
			Role  string `json:"role"`
			Extra struct {
				ExitStatus string `json:"exit_status"`
			} `json:"extra"`
		}
		if e := b.sl.Steps[i].Extra; e != nil && jsonx.Unmarshal([]byte(*e), &extra) == nil && extra.Role == "exit" {
			return extra.Extra.ExitStatus
		}
	}
	return ""
}

// exitStatus maps an agent's exit status: a submission completed the task;
// hitting a cost, step, time or context limit truncated it; anything else
// is an error.
func exitStatus(s string) string {
	l := strings.ToLower(s)
	switch {
	case l == "":
		return model.StatusUnknown
	case strings.Contains(l, "submitted"):
		return model.StatusCompleted
	case strings.Contains(l, "limit"), strings.Contains(l, "cost"), strings.Contains(l, "timeout"),
		strings.Contains(l, "context"), strings.Contains(l, "time"):
		return model.StatusTruncated
	case strings.Contains(l, "cancel"), strings.Contains(l, "interrupt"):
		return model.StatusCancelled
	}
	return model.StatusError
}
