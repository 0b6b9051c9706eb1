// Package qwencode reads Qwen Code's chat recordings: the JSON Lines file
// its ChatRecordingService appends per session
// (~/.qwen/projects/<project>/chats/<session id>.jsonl). Each record
// carries uuid, parentUuid, sessionId, timestamp, type (user, assistant,
// tool_result, system) and, for the conversation, the Gemini API Content
// it sent or got (role + parts). Records of a subagent (agentId,
// isSidechain) form a subagent Storyline. docs/formats.md (Qwen Code
// section) documents the mapping.
package qwencode

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

// Layout; runs.source_format is "qwen-code/jsonl".
const LayoutJSONL = "jsonl"

type adapter struct{}

// New returns the Qwen Code adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.QwenCode }

var recordTypes = map[string]bool{"user": true, "assistant": true, "tool_result": true, "system": true}

// isRecord recognizes a Qwen Code record: Claude Code's line shape (uuid,
// sessionId, type) with what Claude Code never writes — a Gemini Content
// message (parts), the tool_result type, or a systemPayload.
func isRecord(o *format.Obj) bool {
	if o == nil || !o.Has("uuid") || !o.Has("sessionId") || !o.Has("timestamp") || !recordTypes[o.Str("type")] {
		return false
	}
	return o.Sub("message").Has("parts") || o.Str("type") == "tool_result" || o.Has("systemPayload")
}

// Detect claims JSON Lines whose first record is a Qwen Code record.
func (adapter) Detect(p *format.Probe) (string, bool) {
	if p.Shape == format.ShapeLines && isRecord(p.First) {
		return LayoutJSONL, true
	}
	return "", false
}

func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	if layout != LayoutJSONL {
		return fmt.Errorf("qwen-code: unknown layout %q", layout)
	}
	s := &session{runs: map[string]*run{}}
	err := format.EachLine(ctx, r, func(n int64, line []byte) error {
		if !jsonx.Valid(line) {
			s.main().warn(n, "", "line is not valid JSON; skipped")
			return nil
		}
		obj := format.SplitObject(line)
		if obj == nil {
			s.main().warn(n, "", "line is not a JSON object; skipped")
			return nil
		}
		s.record(n, obj)
		return nil
	})
	if err != nil {
		return err
	}
	for _, sl := range s.storylines(src) {
		if err := emit(sl); err != nil {
			return err
		}
	}
	return nil
}

// session holds the Storylines of one file: the main conversation ("")
// and one per subagent, in order of first appearance.
type session struct {
	id    string
	runs  map[string]*run
	order []string
}

func (s *session) main() *run { return s.get("", nil) }

func (s *session) get(agent string, rec map[string]jsonx.RawMessage) *run {
	if r := s.runs[agent]; r != nil {
		return r
	}
	r := &run{sl: &model.Storyline{Run: model.Run{SourceFormat: format.QwenCode + "/" + LayoutJSONL}}, ids: map[string]int{}}
	if agent == "" {
		r.sl.Run.AgentName = model.Str(format.QwenCode)
	} else {
		name := format.String(rec["agentName"])
		if name == "" {
			name = agent
		}
		r.sl.Run.AgentName, r.sl.Run.AgentID = model.Str(name), model.Str(agent)
	}
	s.runs[agent] = r
	s.order = append(s.order, agent)
	return r
}

// record routes one record to its Storyline.
func (s *session) record(n int64, rec map[string]jsonx.RawMessage) {
	if s.id == "" {
		s.id = format.String(rec["sessionId"])
	}
	agent := format.String(rec["agentId"])
	if sidechain, _ := format.Bool(rec["isSidechain"]); sidechain && agent == "" {
		agent = "sidechain"
	}
	s.main() // the main Storyline comes first, even when a subagent's record does
	s.get(agent, rec).record(n, rec)
}

func (s *session) storylines(src format.Source) []*model.Storyline {
	id := s.id
	if id == "" {
		id = format.FileID(src, format.QwenCode)
		s.main().warn(0, "", "no record names its sessionId; named after the file")
	}
	out := make([]*model.Storyline, 0, len(s.order))
	for _, agent := range s.order {
		r := s.runs[agent]
		run := &r.sl.Run
		run.RunID, run.SessionID = id, id
		if agent != "" {
			run.SessionID = id + "/" + agent
			run.ParentSessionID = model.Str(id)
		}
		out = append(out, r.finish(src))
	}
	return out
}

// run builds one Storyline.
type run struct {
	sl      *model.Storyline
	pending []int // unanswered calls, oldest first
	ids     map[string]int
	counts  map[string]int              // records that are no step, by subtype
	meta    map[string]jsonx.RawMessage // the first cwd and gitBranch
	orphans int
}

func (r *run) warn(line int64, ptr, msg string) {
	r.sl.Warnings = append(r.sl.Warnings, model.Warning{Line: line, Pointer: ptr, Message: msg})
}

func (r *run) stepID(rec map[string]jsonx.RawMessage, n int64) string {
	id := format.String(rec["uuid"])
	if id == "" {
		id = "line-" + strconv.FormatInt(n, 10)
	}
	if k := r.ids[id]; k > 0 {
		r.ids[id] = k + 1
		return id + "#" + strconv.Itoa(k+1)
	}
	r.ids[id] = 1
	return id
}

// recordKnown are the record members mapped to columns.
var recordKnown = []string{"uuid", "sessionId", "timestamp", "type", "message", "model", "usageMetadata", "cwd", "version", "gitBranch", "agentId", "agentName", "isSidechain"}

// record maps one record.
func (r *run) record(n int64, rec map[string]jsonx.RawMessage) {
	run := &r.sl.Run
	if v := format.String(rec["version"]); v != "" && run.AgentVersion == nil {
		run.AgentVersion = model.Str(v)
	}
	for _, k := range []string{"cwd", "gitBranch"} {
		if _, seen := r.meta[k]; !seen && rec[k] != nil {
			if r.meta == nil {
				r.meta = map[string]jsonx.RawMessage{}
			}
			r.meta[k] = append(jsonx.RawMessage(nil), rec[k]...) // the line's buffer is reused
		}
	}
	typ, subtype := format.String(rec["type"]), format.String(rec["subtype"])
	st := model.Step{StepID: r.stepID(rec, n), MessageKind: format.KindText}
	if t, ok := format.Time(rec["timestamp"]); ok {
		st.Timestamp = model.Time(t)
	}
	msg := format.SplitObject(rec["message"])
	parts, _ := format.SplitArray(msg["parts"])
	texts, thoughts, calls, responses := split(parts)
	st.Extra = format.Extra(rec, append(recordKnown, "subtype")...)
	switch typ {
	case "user":
		if len(responses) > 0 && len(texts) == 0 {
			r.results(&st, rec, responses)
			break
		}
		st.Source = model.SourceUser
		if subtype != "" && subtype != "mid_turn_user_message" { // a notification, a cron or slash-command turn
			st.Source, st.MessageKind = model.SourceSystem, subtype
		}
		st.MessageValue = joined(texts)
	case "assistant":
		st.Source = model.SourceAgent
		if m := format.String(rec["model"]); m != "" {
			st.ModelName = model.Str(m)
			if run.AgentModelName == nil {
				run.AgentModelName = st.ModelName
			}
		}
		st.MessageValue, st.Reasoning = joined(texts), joined(thoughts)
		usage(&st, rec["usageMetadata"])
		for _, c := range calls {
			tc := model.ToolCall{StepID: st.StepID, ToolCallID: format.String(c["id"]), FunctionName: format.String(c["name"])}
			tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(format.CompactJSON(c["args"]))
			r.pending = append(r.pending, len(r.sl.ToolCalls))
			r.sl.ToolCalls = append(r.sl.ToolCalls, tc)
		}
		if st.MessageValue == nil && len(calls) > 0 {
			st.MessageKind = "tool_calls_only"
		}
	case "tool_result":
		r.results(&st, rec, responses)
	case "system":
		if subtype == "custom_title" {
			run.Extra = format.MergeExtra(run.Extra, "title", format.SplitObject(rec["systemPayload"])["customTitle"])
		}
		if subtype != "chat_compression" {
			if r.counts == nil {
				r.counts = map[string]int{}
			}
			r.counts[subtype]++
			return
		}
		st.Source, st.MessageKind = model.SourceSystem, subtype
	default:
		r.warn(n, "/type", "unknown record type "+strconv.Quote(typ)+"; skipped")
		return
	}
	r.sl.Steps = append(r.sl.Steps, st)
}

// results maps a tool_result record: a tool step whose functionResponse
// parts answer the calls with their ids (else the earliest unanswered
// call of their name); the recorded toolCallResult's status says whether
// it failed.
func (r *run) results(st *model.Step, rec map[string]jsonx.RawMessage, responses []map[string]jsonx.RawMessage) {
	st.Source = model.SourceTool
	status := format.String(format.SplitObject(rec["toolCallResult"])["status"])
	var texts []string
	for _, fr := range responses {
		text := responseText(fr["response"])
		texts = append(texts, text)
		i, link := r.answer(format.String(fr["id"]), format.String(fr["name"]))
		if i < 0 {
			r.orphans++
			continue
		}
		tc := &r.sl.ToolCalls[i]
		tc.Result, tc.ResultStepID, tc.ResultLink, tc.ResultStatus = model.StrAlways(text), model.Str(st.StepID), link, model.ResultOK
		if status == "error" || status == "cancelled" || format.SplitObject(fr["response"])["error"] != nil {
			tc.ResultStatus = model.ResultError
		}
	}
	st.MessageValue = joined(texts)
}

// answer takes the earliest unanswered call with the id, else of the name.
func (r *run) answer(id, name string) (int, string) {
	find := func(match func(tc *model.ToolCall) bool, link string) (int, string) {
		for j, i := range r.pending {
			if match(&r.sl.ToolCalls[i]) {
				r.pending = append(r.pending[:j:j], r.pending[j+1:]...)
				return i, link
			}
		}
		return -1, ""
	}
	if id != "" {
		if i, link := find(func(tc *model.ToolCall) bool { return tc.ToolCallID == id }, model.LinkByID); i >= 0 {
			return i, link
		}
	}
	return find(func(tc *model.ToolCall) bool { return tc.FunctionName == name }, model.LinkByName)
}

func (r *run) finish(src format.Source) *model.Storyline {
	sl := r.sl
	sl.Run.Extra = format.MergeExtras(sl.Run.Extra, r.meta)
	if len(r.counts) > 0 {
		raw, _ := json.Marshal(r.counts)
		sl.Run.Extra = format.MergeExtra(sl.Run.Extra, "system_records", raw)
	}
	if r.orphans > 0 {
		r.warn(0, "", strconv.Itoa(r.orphans)+" tool result(s) answer no call")
	}
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		r.warn(0, "", strconv.Itoa(missing)+" tool call(s) have no result")
	}
	sl.Run.StartedAt, sl.Run.EndedAt = format.StepTimeRange(sl.Steps)
	sl.Finalize(src.File)
	return sl
}

// split sorts Gemini parts: text (thought: true is reasoning),
// functionCall and functionResponse.
func split(parts [][]byte) (texts, thoughts []string, calls, responses []map[string]jsonx.RawMessage) {
	for _, p := range parts {
		part := format.SplitObject(p)
		switch {
		case part == nil:
		case part["functionCall"] != nil:
			if c := format.SplitObject(part["functionCall"]); c != nil {
				calls = append(calls, c)
			}
		case part["functionResponse"] != nil:
			if fr := format.SplitObject(part["functionResponse"]); fr != nil {
				responses = append(responses, fr)
			}
		case part["text"] != nil:
			if thought, _ := format.Bool(part["thought"]); thought {
				thoughts = append(thoughts, format.String(part["text"]))
			} else {
				texts = append(texts, format.String(part["text"]))
			}
		}
	}
	return
}

// responseText is a function response's output (or error) string, else
// the response as JSON.
func responseText(raw jsonx.RawMessage) string {
	resp := format.SplitObject(raw)
	for _, k := range []string{"output", "error"} {
		if v, ok := resp[k]; ok && len(format.TrimSpace(v)) > 0 && format.TrimSpace(v)[0] == '"' {
			return format.String(v)
		}
	}
	return string(format.CompactJSON(raw))
}

// usage maps Gemini usage metadata: promptTokenCount includes cached
// content.
func usage(st *model.Step, raw jsonx.RawMessage) {
	u := format.SplitObject(raw)
	st.PromptTokens = format.IntOf(u["promptTokenCount"])
	st.CompletionTokens = format.IntOf(u["candidatesTokenCount"])
	st.CachedTokens = format.IntOf(u["cachedContentTokenCount"])
	st.ReasoningTokens = format.IntOf(u["thoughtsTokenCount"])
}

func joined(texts []string) *string {
	if len(texts) == 0 {
		return nil
	}
	return model.StrAlways(strings.Join(texts, "\n"))
}
