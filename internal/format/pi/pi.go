// Package pi reads the session files of Pi, Mario Zechner's coding agent
// (badlogic/pi-mono, packages/coding-agent): JSON Lines under
// ~/.pi/agent/sessions/, a session header, then entries — messages (user,
// assistant, toolResult, bashExecution, custom, summaries), model and
// thinking-level changes, compactions, branch summaries, labels. Each file
// is one session, one Storyline. docs/formats.md (Pi section) documents
// the mapping.
package pi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Layout; runs.source_format is "pi/jsonl".
const LayoutJSONL = "jsonl"

type adapter struct{}

// New returns the Pi adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.Pi }

// Detect claims JSON Lines whose first line is Pi's session header:
// type "session" with the session id, its timestamp and the working
// directory.
func (adapter) Detect(p *format.Probe) (string, bool) {
	f := p.First
	if p.Shape == format.ShapeLines && f.Str("type") == "session" && f.Has("id") && f.Has("timestamp") && f.Has("cwd") {
		return LayoutJSONL, true
	}
	return "", false
}

func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	if layout != LayoutJSONL {
		return fmt.Errorf("pi: unknown layout %q", layout)
	}
	b := &builder{sl: &model.Storyline{Run: model.Run{SourceFormat: format.Pi + "/" + LayoutJSONL, AgentName: model.Str("pi")}},
		calls: map[string][]int{}, ids: map[string]int{}}
	err := format.EachLine(ctx, r, func(n int64, line []byte) error {
		recs := records(line)
		switch {
		case len(recs) == 0:
			b.warn(n, "", "line is not valid JSON; skipped")
		case len(recs) > 1:
			b.warn(n, "", strconv.Itoa(len(recs))+" records written back to back on one line; each is read")
		}
		for _, rec := range recs {
			obj := format.SplitObject(rec)
			if obj == nil {
				b.warn(n, "", "record is not a JSON object; skipped")
				continue
			}
			b.entry(n, obj)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return emit(b.finish(src))
}

// records splits a line into its JSON values: one, as Pi writes them, or
// several written back to back on one line (a crash between two appends
// leaves them so; Pi itself then drops the line). A line that is not a
// sequence of JSON values gives none.
func records(line []byte) [][]byte {
	if jsonx.Valid(line) {
		return [][]byte{line}
	}
	dec := json.NewDecoder(strings.NewReader(string(line)))
	var out [][]byte
	for dec.More() {
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// builder maps the entries of one session.
type builder struct {
	sl      *model.Storyline
	header  map[string]jsonx.RawMessage
	model   string                      // the current model (model_change, the header)
	calls   map[string][]int            // unanswered calls by id
	ids     map[string]int              // step ids used
	counts  map[string]int              // entries that are no step, by type
	last    map[string]jsonx.RawMessage // the last message
	orphans int
}

func (b *builder) warn(line int64, ptr, msg string) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{Line: line, Pointer: ptr, Message: msg})
}

// stepID is the entry's id (sessions of format version 2 and later),
// else line-<n>, made unique.
func (b *builder) stepID(obj map[string]jsonx.RawMessage, n int64) string {
	id := format.String(obj["id"])
	if id == "" {
		id = "line-" + strconv.FormatInt(n, 10)
	}
	if k := b.ids[id]; k > 0 {
		b.ids[id] = k + 1
		return id + "#" + strconv.Itoa(k+1)
	}
	b.ids[id] = 1
	return id
}

// entry maps one entry.
func (b *builder) entry(n int64, obj map[string]jsonx.RawMessage) {
	typ := format.String(obj["type"])
	if typ == "session" && b.header == nil {
		b.header = obj
		r := &b.sl.Run
		r.RunID = format.String(obj["id"])
		r.SessionID = r.RunID
		if t, ok := format.Time(obj["timestamp"]); ok {
			r.StartedAt = model.Time(t)
		}
		b.model = format.String(obj["modelId"])
		if ps := format.String(obj["parentSession"]); ps != "" {
			r.Extra = format.MergeExtra(r.Extra, "parent_session", obj["parentSession"])
		}
		r.Extra = format.MergeExtras(r.Extra, format.Without(obj, "type", "id", "timestamp", "parentSession"))
		return
	}
	st := model.Step{MessageKind: format.KindText}
	if t, ok := format.Time(obj["timestamp"]); ok {
		st.Timestamp = model.Time(t)
	}
	switch typ {
	case "message":
		b.message(n, obj, st)
		return
	case "model_change":
		b.model = format.String(obj["modelId"])
	case "thinking_level_change":
	case "compaction", "branch_summary":
		st.StepID, st.Source, st.MessageKind = b.stepID(obj, n), model.SourceSystem, typ
		st.MessageValue = model.Str(format.String(obj["summary"]))
		st.Extra = format.Extra(obj, "type", "id", "timestamp", "summary")
		b.sl.Steps = append(b.sl.Steps, st)
		return
	case "custom_message": // an extension's message in the model's context
		st.StepID, st.Source, st.MessageKind = b.stepID(obj, n), model.SourceSystem, typ
		if text, _, ok := format.Content(obj["content"]); ok {
			st.MessageValue = model.StrAlways(text)
		}
		st.Extra = format.Extra(obj, "type", "id", "timestamp", "content")
		b.sl.Steps = append(b.sl.Steps, st)
		return
	case "session_info":
		if name := format.String(obj["name"]); name != "" {
			b.sl.Run.Extra = format.MergeExtra(b.sl.Run.Extra, "name", obj["name"])
		}
	case "session":
		b.warn(n, "", "a second session header; ignored")
		return
	case "custom", "label":
	default:
		b.warn(n, "/type", "unknown entry type "+strconv.Quote(typ)+"; skipped")
		return
	}
	if b.counts == nil {
		b.counts = map[string]int{}
	}
	b.counts[typ]++
}

// message maps a message entry.
func (b *builder) message(n int64, entry map[string]jsonx.RawMessage, st model.Step) {
	msg := format.SplitObject(entry["message"])
	if msg == nil {
		b.warn(n, "/message", "message is not an object; skipped")
		return
	}
	st.StepID = b.stepID(entry, n)
	role := format.String(msg["role"])
	switch role {
	case "user":
		st.Source = model.SourceUser
		if text, kind, ok := format.Content(msg["content"]); ok {
			st.MessageValue, st.MessageKind = model.StrAlways(text), kind
		}
		st.Extra = format.Extra(msg, "role", "content", "timestamp")
	case "assistant":
		b.assistant(&st, msg)
	case "toolResult":
		b.toolResult(n, &st, msg)
	case "bashExecution": // a shell command the user ran with "!": a call of its own
		st.Source, st.MessageKind = model.SourceUser, "bash_execution"
		st.MessageValue = model.Str(format.String(msg["command"]))
		tc := model.ToolCall{StepID: st.StepID, FunctionName: "bash", ResultLink: model.LinkInline, ResultStatus: model.ResultOK}
		args, _ := json.Marshal(map[string]string{"command": format.String(msg["command"])})
		tc.Arguments, tc.ArgumentsValid = model.StrAlways(string(args)), true
		tc.Result = model.StrAlways(format.String(msg["output"]))
		code, hasCode := format.Int(msg["exitCode"])
		cancelled, _ := format.Bool(msg["cancelled"])
		if cancelled || hasCode && code != 0 {
			tc.ResultStatus = model.ResultError
		}
		tc.Extra = format.Extra(msg, "role", "command", "output", "timestamp")
		b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	case "custom", "branchSummary", "compactionSummary":
		st.Source, st.MessageKind = model.SourceSystem, role
		text, _, _ := format.Content(msg["content"])
		if text == "" {
			text = format.String(msg["summary"])
		}
		st.MessageValue = model.Str(text)
		st.Extra = format.Extra(msg, "role", "content", "summary", "timestamp")
	default:
		st.Source, st.MessageKind = model.SourceSystem, "unknown"
		st.Extra = format.Extra(msg)
		b.warn(n, "/message/role", "unknown message role "+strconv.Quote(role)+"; kept as a system step")
	}
	b.last = msg
	b.sl.Steps = append(b.sl.Steps, st)
}

// assistant maps a model reply: text parts are the text, thinking parts
// the reasoning, toolCall parts the calls. Pi's usage counts input
// without the cache (Anthropic's split): prompt_tokens = input +
// cacheRead + cacheWrite, cached_tokens = cacheRead.
func (b *builder) assistant(st *model.Step, msg map[string]jsonx.RawMessage) {
	st.Source = model.SourceAgent
	if m := format.String(msg["model"]); m != "" {
		st.ModelName = model.Str(m)
	} else if b.model != "" {
		st.ModelName = model.Str(b.model)
	}
	if b.sl.Run.AgentModelName == nil && st.ModelName != nil && format.String(msg["stopReason"]) != "aborted" {
		b.sl.Run.AgentModelName = st.ModelName
	}
	parts, _ := format.SplitArray(msg["content"])
	var texts, thoughts []string
	calls := 0
	for _, p := range parts {
		part := format.SplitObject(p)
		switch format.String(part["type"]) {
		case "text":
			texts = append(texts, format.String(part["text"]))
		case "thinking":
			thoughts = append(thoughts, format.String(part["thinking"]))
		case "toolCall":
			tc := model.ToolCall{StepID: st.StepID, ToolCallID: format.String(part["id"]), FunctionName: format.String(part["name"])}
			tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(format.CompactJSON(part["arguments"]))
			tc.Extra = format.Extra(part, "type", "id", "name", "arguments")
			b.calls[tc.ToolCallID] = append(b.calls[tc.ToolCallID], len(b.sl.ToolCalls))
			b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
			calls++
		}
	}
	if len(texts) > 0 {
		st.MessageValue = model.StrAlways(strings.Join(texts, "\n"))
	} else if calls > 0 {
		st.MessageKind = "tool_calls_only"
	} else if e := format.String(msg["errorMessage"]); e != "" {
		st.MessageValue, st.MessageKind = model.StrAlways(e), "error"
	}
	if len(thoughts) > 0 {
		st.Reasoning = model.StrAlways(strings.Join(thoughts, "\n"))
	}
	u := format.SplitObject(msg["usage"])
	in, out := format.IntOf(u["input"]), format.IntOf(u["output"])
	read, write := format.IntOf(u["cacheRead"]), format.IntOf(u["cacheWrite"])
	if in != nil {
		sum := *in
		for _, c := range []*int64{read, write} {
			if c != nil {
				sum += *c
			}
		}
		st.PromptTokens = model.Int(sum)
	}
	st.CompletionTokens, st.CachedTokens = out, read
	if c, ok := format.Float(format.SplitObject(u["cost"])["total"]); ok {
		st.CostUSD = model.Float(c)
	}
	st.Extra = format.Extra(msg, "role", "content", "model", "usage", "timestamp")
}

// toolResult maps a tool's result: a tool step answering the call with
// its toolCallId.
func (b *builder) toolResult(n int64, st *model.Step, msg map[string]jsonx.RawMessage) {
	st.Source = model.SourceTool
	text, kind, ok := format.Content(msg["content"])
	if ok {
		st.MessageValue, st.MessageKind = model.StrAlways(text), kind
	}
	st.Extra = format.Extra(msg, "role", "content", "toolCallId", "timestamp")
	id := format.String(msg["toolCallId"])
	queue := b.calls[id]
	if len(queue) == 0 {
		b.orphans++
		return
	}
	b.calls[id] = queue[1:]
	tc := &b.sl.ToolCalls[queue[0]]
	tc.ResultStepID, tc.ResultLink, tc.ResultStatus = model.Str(st.StepID), model.LinkByID, model.ResultOK
	if ok {
		tc.Result = model.StrAlways(text)
	}
	if isErr, _ := format.Bool(msg["isError"]); isErr {
		tc.ResultStatus = model.ResultError
	}
}

// finish completes the run: its status is what its last message says
// (an aborted reply: cancelled; a failed one: error), else unknown — a
// session file records no end.
func (b *builder) finish(src format.Source) *model.Storyline {
	sl := b.sl
	r := &sl.Run
	if r.SessionID == "" {
		id := format.FileID(src, "pi")
		r.RunID, r.SessionID = id, id
		b.warn(0, "", "the session has no header id; named after the file")
	}
	if format.String(b.last["role"]) == "assistant" {
		switch format.String(b.last["stopReason"]) {
		case "aborted":
			r.Status = model.StatusCancelled
		case "error":
			r.Status = model.StatusError
		}
	}
	if len(b.counts) > 0 {
		raw, _ := json.Marshal(b.counts)
		r.Extra = format.MergeExtra(r.Extra, "entry_counts", raw)
	}
	if b.orphans > 0 {
		b.warn(0, "", strconv.Itoa(b.orphans)+" tool result(s) answer no call")
	}
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		b.warn(0, "", strconv.Itoa(missing)+" tool call(s) have no result")
	}
	// Pi writes its header when the first reply is saved: the first
	// messages may be older.
	first, last := format.StepTimeRange(sl.Steps)
	if r.StartedAt == nil || first != nil && first.Before(*r.StartedAt) {
		r.StartedAt = first
	}
	r.EndedAt = last
	sl.Finalize(src.File)
	return sl
}
