package geminicli

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// loc says where a record sits: its line (jsonl) and/or a JSON pointer.
type loc struct {
	line int64
	ptr  string
}

func (l loc) elem(i int) loc { return loc{l.line, l.ptr + "/" + strconv.Itoa(i)} }

// message is one message record and where it was read.
type message struct {
	obj map[string]jsonx.RawMessage
	at  loc
}

// session replays a session file into its final metadata and message list,
// as the CLI itself loads it: a message record replaces an earlier one with
// the same id in place; $rewindTo drops that message and everything after
// it (everything, when the id is unknown); $set merges metadata; and a
// non-empty messages list in the metadata (the CLI writes one when it syncs
// its history) is the message list, whatever records say.
type session struct {
	layout   string
	meta     map[string]jsonx.RawMessage
	order    []string           // message ids, in order of first appearance
	byID     map[string]message // the latest record of each id
	listed   []message          // the metadata's messages list
	warnings []model.Warning
}

func newSession(layout string) *session {
	return &session{layout: layout, meta: map[string]jsonx.RawMessage{}, byID: map[string]message{}}
}

func (s *session) warn(at loc, msg string) {
	s.warnings = append(s.warnings, model.Warning{Line: at.line, Pointer: at.ptr, Message: msg})
}

// record applies one line of the jsonl layout. A line that is not a JSON
// object is skipped with a warning, as the CLI skips it.
func (s *session) record(n int64, line []byte) error {
	at := loc{line: n}
	if !jsonx.Valid(line) {
		s.warn(at, "line is not valid JSON; skipped")
		return nil
	}
	obj := format.SplitObject(line)
	if obj == nil {
		s.warn(at, "line is not a JSON object; skipped")
		return nil
	}
	if id, ok := format.AsString(obj["$rewindTo"]); ok {
		s.rewind(id)
		return nil
	}
	if id, ok := format.AsString(obj["id"]); ok {
		if _, seen := s.byID[id]; !seen {
			s.order = append(s.order, id)
		}
		s.byID[id] = message{obj, at}
		return nil
	}
	if set := format.SplitObject(format.AsObject(obj["$set"])); set != nil {
		s.metadata(set)
		if raw, ok := set["messages"]; ok {
			s.setMessages(raw, loc{line: n, ptr: "/$set/messages"})
		}
		return nil
	}
	_, sid := format.AsString(obj["sessionId"])
	_, hash := format.AsString(obj["projectHash"])
	if sid && hash {
		s.metadata(obj)
		if raw, ok := obj["messages"]; ok {
			s.setMessages(raw, loc{line: n, ptr: "/messages"})
		}
		return nil
	}
	s.warn(at, "line is neither a message (id), metadata (sessionId + projectHash), $set nor $rewindTo record; skipped")
	return nil
}

func (s *session) rewind(id string) {
	for i, have := range s.order {
		if have == id {
			for _, gone := range s.order[i:] {
				delete(s.byID, gone)
			}
			s.order = s.order[:i]
			return
		}
	}
	s.order, s.byID = nil, map[string]message{}
}

func (s *session) metadata(obj map[string]jsonx.RawMessage) {
	for k, v := range obj {
		if k != "messages" {
			s.meta[k] = v
		}
	}
}

// setMessages takes a metadata messages list.
func (s *session) setMessages(raw jsonx.RawMessage, at loc) {
	elems, ok := format.SplitArray(raw)
	if !ok {
		if !format.IsNull(raw) {
			s.warn(at, "messages is not an array; ignored")
		}
		return
	}
	if len(elems) == 0 && s.layout == LayoutJSONL {
		return // an empty list does not replace the records
	}
	s.listed = s.listed[:0]
	for i, e := range elems {
		obj := format.SplitObject(e)
		if obj == nil {
			s.warn(at.elem(i), "message is not an object; skipped")
			continue
		}
		s.listed = append(s.listed, message{obj, at.elem(i)})
	}
}

func (s *session) messages() []message {
	if len(s.listed) > 0 || s.layout == LayoutJSON {
		return s.listed
	}
	out := make([]message, len(s.order))
	for i, id := range s.order {
		out[i] = s.byID[id]
	}
	return out
}

// storyline maps the replayed session.
func (s *session) storyline(src format.Source) *model.Storyline {
	sl := &model.Storyline{Run: model.Run{SourceFormat: format.GeminiCLI + "/" + s.layout}}
	run := &sl.Run
	id, _ := format.AsString(s.meta["sessionId"])
	if id == "" {
		id = format.FileID(src, format.GeminiCLI)
		s.warn(loc{}, "the session has no sessionId; named after the file")
	}
	run.RunID, run.SessionID = id, id
	run.AgentName = model.Str(format.GeminiCLI)
	if t, ok := format.Time(s.meta["startTime"]); ok {
		run.StartedAt = model.Time(t)
	}
	if t, ok := format.Time(s.meta["lastUpdated"]); ok {
		run.EndedAt = model.Time(t)
	}
	run.Extra = format.Extra(s.meta, "sessionId", "startTime", "lastUpdated")
	m := mapper{sl: sl, ids: map[string]int{}}
	for _, msg := range s.messages() {
		m.message(msg)
	}
	sl.Warnings = append(s.warnings, sl.Warnings...)
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		sl.Warnings = append(sl.Warnings, model.Warning{Message: fmt.Sprintf("%d tool call(s) have no result", missing)})
	}
	if run.StartedAt == nil || run.EndedAt == nil {
		first, last := format.StepTimeRange(sl.Steps)
		if run.StartedAt == nil {
			run.StartedAt = first
		}
		if run.EndedAt == nil {
			run.EndedAt = last
		}
	}
	sl.Finalize(src.File)
	return sl
}

// mapper turns messages into steps and tool calls.
type mapper struct {
	sl  *model.Storyline
	ids map[string]int // step ids used, for uniqueness
}

// messageKnown are the message keys mapped to columns.
var messageKnown = []string{"id", "type", "timestamp", "content", "thoughts", "tokens", "model", "toolCalls"}

func (m *mapper) message(msg message) {
	obj := msg.obj
	typ, _ := format.AsString(obj["type"])
	st := model.Step{StepID: m.stepID(obj), MessageKind: format.KindText}
	if t, ok := format.Time(obj["timestamp"]); ok {
		st.Timestamp = model.Time(t)
	}
	text, kind, hasText := content(obj["content"])
	switch typ {
	case "user":
		st.Source = model.SourceUser
		if onlyFunctionResponses(obj["content"]) { // a history turn returning tool results
			st.Source = model.SourceTool
			text, kind = model.Deref(resultText(obj["content"])), format.KindText
		}
	case "gemini":
		st.Source = model.SourceAgent
		if name, ok := format.AsString(obj["model"]); ok {
			st.ModelName = model.Str(name)
			if m.sl.Run.AgentModelName == nil {
				m.sl.Run.AgentModelName = model.Str(name)
			}
		}
		st.Reasoning = thoughts(obj["thoughts"])
	case "info", "error", "warning":
		st.Source, kind = model.SourceSystem, typ
	default:
		st.Source, kind = model.SourceSystem, "unknown"
		m.warn(msg.at, "unknown message type "+strconv.Quote(typ)+"; kept as a system step", "type")
	}
	if hasText {
		st.MessageValue = model.StrAlways(text)
	}
	st.MessageKind = kind
	st.Extra = format.Extra(obj, messageKnown...)
	if typ == "gemini" {
		st.Extra = m.tokens(&st, obj["tokens"], msg.at)
	}
	if calls := m.toolCalls(st.StepID, obj["toolCalls"], msg.at); calls > 0 && text == "" {
		st.MessageKind, st.MessageValue = "tool_calls_only", nil
	}
	m.sl.Steps = append(m.sl.Steps, st)
}

func (m *mapper) warn(at loc, msg string, parts ...any) {
	m.sl.Warnings = append(m.sl.Warnings, model.Warning{Line: at.line, Pointer: at.ptr + format.Pointer(parts...), Message: msg})
}

// stepID is the message id, made unique (id#2, ...) when a document repeats
// one.
func (m *mapper) stepID(obj map[string]jsonx.RawMessage) string {
	id, _ := format.AsString(obj["id"])
	if id == "" {
		id = "message-" + strconv.Itoa(len(m.sl.Steps))
	}
	n := m.ids[id]
	m.ids[id] = n + 1
	if n > 0 {
		return id + "#" + strconv.Itoa(n+1)
	}
	return id
}

// tokens maps the message's token summary (Gemini usage metadata: input =
// promptTokenCount, which includes cached content; output =
// candidatesTokenCount; thoughts = thoughtsTokenCount) and returns the
// step's extra with the counts no column holds (tool, total).
func (m *mapper) tokens(st *model.Step, raw jsonx.RawMessage, at loc) *string {
	t := format.SplitObject(format.AsObject(raw))
	if t == nil {
		if !format.IsNull(raw) {
			m.warn(at, "tokens is not an object; ignored", "tokens")
		}
		return st.Extra
	}
	count := func(k string) *int64 {
		if v, ok := format.Int(t[k]); ok {
			return model.Int(v)
		}
		return nil
	}
	st.PromptTokens, st.CompletionTokens, st.CachedTokens, st.ReasoningTokens = count("input"), count("output"), count("cached"), count("thoughts")
	if rest := format.Extra(t, "input", "output", "cached", "thoughts"); rest != nil {
		return format.MergeExtra(st.Extra, "tokens", jsonx.RawMessage(*rest))
	}
	return st.Extra
}

// toolCalls records the message's tool call records, each holding its own
// result and status, and returns how many.
func (m *mapper) toolCalls(stepID string, raw jsonx.RawMessage, at loc) int {
	elems, ok := format.SplitArray(raw)
	if !ok {
		if !format.IsNull(raw) {
			m.warn(at, "toolCalls is not an array; ignored", "toolCalls")
		}
		return 0
	}
	for i, e := range elems {
		c := format.SplitObject(e)
		if c == nil {
			m.warn(at, "tool call is not an object; skipped", "toolCalls", i)
			continue
		}
		tc := model.ToolCall{StepID: stepID}
		tc.ToolCallID, _ = format.AsString(c["id"])
		tc.FunctionName, _ = format.AsString(c["name"])
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(format.CompactJSON(c["args"]))
		tc.Result = resultText(c["result"])
		status, _ := format.AsString(c["status"])
		switch {
		case status == "success":
			tc.ResultStatus = model.ResultOK
		case status == "error" || status == "cancelled":
			tc.ResultStatus = model.ResultError
		case tc.Result != nil:
			tc.ResultStatus = model.ResultOK
		}
		if tc.ResultStatus != "" {
			tc.ResultLink = model.LinkInline
		}
		tc.Extra = format.Extra(c, "id", "name", "args", "result")
		if status == "success" {
			tc.Extra = format.Extra(c, "id", "name", "args", "result", "status")
		}
		m.sl.ToolCalls = append(m.sl.ToolCalls, tc)
	}
	return len(elems)
}

// thoughts joins the thought summaries {subject, description} of a gemini
// message as "subject: description" lines.
func thoughts(raw jsonx.RawMessage) *string {
	elems, _ := format.SplitArray(raw)
	var lines []string
	for _, e := range elems {
		t := format.SplitObject(e)
		subject, _ := format.AsString(t["subject"])
		desc, _ := format.AsString(t["description"])
		switch {
		case subject != "" && desc != "":
			lines = append(lines, subject+": "+desc)
		case subject+desc != "":
			lines = append(lines, subject+desc)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return model.Str(strings.Join(lines, "\n"))
}

// content flattens a message's content (a string, a part, or parts: text
// parts joined, anything else as compact JSON).
func content(raw jsonx.RawMessage) (string, string, bool) {
	return format.Content(format.CompactJSON(raw))
}

// onlyFunctionResponses reports whether content is a list of
// functionResponse parts only.
func onlyFunctionResponses(raw jsonx.RawMessage) bool {
	elems, ok := format.SplitArray(raw)
	if !ok || len(elems) == 0 {
		return false
	}
	for _, e := range elems {
		if _, ok := format.SplitObject(e)["functionResponse"]; !ok {
			return false
		}
	}
	return true
}

// resultText is the text of a tool result (a part list): a function
// response's output (or error) string, else its response as JSON; text
// parts as they are; other parts as JSON. Parts are joined by newlines.
func resultText(raw jsonx.RawMessage) *string {
	raw = bytes.TrimSpace(raw)
	if format.IsNull(raw) {
		return nil
	}
	if raw[0] == '"' {
		return model.StrAlways(format.String(raw))
	}
	elems, ok := format.SplitArray(raw)
	if !ok {
		elems = [][]byte{raw}
	}
	texts := make([]string, 0, len(elems))
	for _, e := range elems {
		p := format.SplitObject(e)
		fr := format.SplitObject(format.AsObject(p["functionResponse"]))
		resp := format.SplitObject(format.AsObject(fr["response"]))
		out, isOut := format.AsString(resp["output"])
		msg, isErr := format.AsString(resp["error"])
		switch {
		case fr != nil && isOut:
			texts = append(texts, out)
		case fr != nil && isErr:
			texts = append(texts, msg)
		case fr != nil:
			texts = append(texts, string(format.CompactJSON(fr["response"])))
		case p["text"] != nil:
			texts = append(texts, format.String(p["text"]))
		default:
			texts = append(texts, string(format.CompactJSON(e)))
		}
	}
	return model.StrAlways(strings.Join(texts, "\n"))
}
