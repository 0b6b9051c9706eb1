package openai

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Message kinds this adapter adds to format.KindText/KindMultimodal.
const (
	kindToolCallsOnly = "tool_calls_only"
	kindRefusal       = "refusal"
	kindReasoning     = "reasoning"
)

// roleSource maps a chat role to a step source. canonical is false for roles
// the source column does not name directly (developer, exit, ...), whose
// original role is then kept in the step extra.
func roleSource(role string) (source string, canonical, known bool) {
	switch role {
	case "system":
		return model.SourceSystem, true, true
	case "user":
		return model.SourceUser, true, true
	case "assistant":
		return model.SourceAgent, true, true
	case "tool":
		return model.SourceTool, true, true
	case "developer", "exit":
		return model.SourceSystem, false, true
	case "human":
		return model.SourceUser, false, true
	case "gpt", "model":
		return model.SourceAgent, false, true
	case "function", "ipython", "observation":
		return model.SourceTool, false, true
	}
	return model.SourceSystem, false, false
}

// chatKnown are the message keys mapped to columns; every other key lands in
// the step extra.
var chatKnown = []string{
	"content", "tool_calls", "function_call", "usage",
	"timestamp", "created", "model", "extra",
}

// chatMessage maps one Chat Completions message (found at `at` in the
// file) to step stepID, its tool calls, and a link to the call it answers.
func (b *builder) chatMessage(stepID string, at loc, m object) {
	role := symbol(m.get("role"))
	source, canonical, knownRole := roleSource(role)
	if !knownRole {
		b.warnAt(at, "unknown role "+strconv.Quote(role)+"; kept as a system step", "role")
	}
	bl := messageBlocks(m)
	if bl.onlyResults() && source == model.SourceUser {
		source = model.SourceTool // a user message that only returns tool results
	}
	st := model.Step{StepID: stepID}

	text, kind, hasContent := content(m.get("content"))
	switch {
	case bl == nil:
	case bl.onlyResults():
		text, kind, hasContent = bl.resultsText(), format.KindText, true
	default:
		text, kind, hasContent = bl.text, bl.kind, bl.hasText
	}
	if bl != nil {
		for _, w := range bl.warnings {
			b.warnAt(at, w.msg, w.parts...)
		}
	}

	var knownBuf [16]string // chatKnown and the few keys appended: off the heap
	known := append(knownBuf[:0], chatKnown...)
	var reasoning []string
	if bl != nil {
		reasoning = append(reasoning, bl.thinking...)
		known = append(known, bl.consumed...)
	}
	for _, k := range []string{"reasoning_content", "reasoning"} {
		if r, ok := stringValue(m.get(k)); ok {
			known = append(known, k)
			if r != "" {
				reasoning = append(reasoning, r)
			}
		}
	}
	if source == model.SourceAgent && kind == format.KindText {
		var spans []string
		text, spans = splitThinking(text)
		reasoning = append(reasoning, spans...)
	}
	if len(reasoning) > 0 {
		st.Reasoning = model.Str(strings.Join(reasoning, "\n"))
	}

	// Tool use written into the text, when the message has no structured
	// form of it (which would otherwise be counted twice).
	prevTextCalls := b.textCalls
	b.textCalls = nil
	var textCalls []blockCall
	var responses []string
	observation := false
	if hasContent && kind == format.KindText {
		switch {
		case source == model.SourceAgent && !hasStructuredCalls(m, bl):
			var bad int
			text, textCalls, bad = splitToolCalls(text)
			if bad > 0 {
				b.warnAt(at, strconv.Itoa(bad)+" <tool_call> block(s) are not {name, arguments} JSON; kept as text", "content")
			}
		case source == model.SourceSystem || source == model.SourceUser:
			b.noteTools(at, text)
		}
		if (source == model.SourceUser || source == model.SourceTool) && !hasStructuredResult(m, bl) {
			var rest string
			responses, rest = toolResponses(text)
			if len(responses) > 0 && rest == "" {
				source = model.SourceTool
			}
			// Harbor's trace export writes a step's observation as the
			// plain user turn that follows its calls.
			observation = len(responses) == 0 && role == "user" && b.plainObservations && len(prevTextCalls) > 0
			if observation {
				source = model.SourceTool
			}
		}
	}
	st.Source = source
	if canonical {
		known = append(known, "role")
	}
	refusal, _ := stringValue(m.get("refusal"))
	switch {
	case refusal != "" && (!hasContent || text == ""):
		kind, text, hasContent = kindRefusal, refusal, true
		known = append(known, "refusal")
	case hasContent && kind == format.KindMultimodal && isRefusalParts(m.get("content")):
		kind = kindRefusal
	}
	if hasContent {
		st.MessageValue = model.StrAlways(text)
	}
	st.MessageKind = kind

	b.messageMetrics(&st, m)
	st.Extra = messageExtra(m, known)
	if bl != nil && bl.channels != nil {
		st.Extra = format.MergeExtra(st.Extra, "channels", bl.channels)
	}

	calls := b.chatToolCalls(stepID, at, m)
	if bl != nil {
		calls += b.blockToolCalls(stepID, bl.calls)
	}
	first := len(b.sl.ToolCalls)
	calls += b.blockToolCalls(stepID, textCalls)
	for i := first; i < len(b.sl.ToolCalls); i++ {
		b.textCalls = append(b.textCalls, i)
	}
	if calls > 0 && (!hasContent || text == "") {
		st.MessageKind, st.MessageValue = kindToolCallsOnly, nil
	}
	b.addStep(st)
	switch {
	case bl != nil && len(bl.results) > 0:
		b.blockResults(stepID, at, bl)
	case len(responses) > 0:
		b.textResults(stepID, at, responses)
	case observation:
		b.observation(stepID, prevTextCalls, st.MessageValue)
	case source == model.SourceTool:
		b.chatResult(stepID, at, role, m, st.MessageValue)
	}
}

// hasStructuredCalls reports whether a message carries its tool calls in a
// structured form (tool_calls, function_call or content blocks).
func hasStructuredCalls(m object, bl *blocks) bool {
	return !format.IsNull(m.get("tool_calls")) || !format.IsNull(m.get("function_call")) || (bl != nil && len(bl.calls) > 0)
}

// hasStructuredResult reports whether a message names the call it answers
// or carries its results in blocks.
func hasStructuredResult(m object, bl *blocks) bool {
	return !format.IsNull(m.get("tool_call_id")) || !format.IsNull(m.get("tool_call_ids")) || (bl != nil && len(bl.results) > 0)
}

// observation links a plain observation turn to the calls the previous
// turn wrote into its text: one call gets it as its result; when several
// calls share it, each gets the whole text (result_link ambiguous).
func (b *builder) observation(stepID string, calls []int, text *string) {
	link := model.LinkByOrder
	if len(calls) > 1 {
		link = model.LinkAmbiguous
	}
	if text == nil {
		text = model.StrAlways("")
	}
	for _, i := range calls {
		if b.take("", func(call int) bool { return call == i }) >= 0 {
			b.answer(i, link, text, model.ResultOK, stepID)
		}
	}
}

// content flattens a content value; structured values are compacted first
// so pretty-printed files give the same text as compact ones.
func content(raw jsonx.RawMessage) (text, kind string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return format.String(raw), format.KindText, true
	}
	if len(raw) > 0 && raw[0] == '[' {
		if text, ok := format.TextArray(raw); ok {
			return text, format.KindText, true
		}
	}
	return format.Content(format.CompactJSON(raw))
}

func stringValue(raw jsonx.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return format.String(raw), true
}

// isRefusalParts reports whether assistant content parts are all refusals.
func isRefusalParts(raw jsonx.RawMessage) bool {
	parts, ok := format.ObjectArray(raw)
	if !ok || len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if format.String(p["type"]) != "refusal" {
			return false
		}
	}
	return true
}

// splitThinking moves <think>…</think> and <thinking>…</thinking> spans
// out of text. A closing tag without an opening one (chat templates that
// put the opening tag in the prompt) makes everything before it reasoning.
func splitThinking(text string) (string, []string) {
	if !strings.Contains(text, "</think") {
		return text, nil
	}
	var spans []string
	var out strings.Builder
	rest := text
	for {
		open, tag := nextThinkOpen(rest)
		closeAt, closeTag := nextThinkClose(rest)
		if closeAt < 0 {
			out.WriteString(rest)
			break
		}
		if open < 0 || open > closeAt {
			// Unopened span: it starts at the beginning of the message.
			if out.Len() == 0 && len(spans) == 0 {
				spans = append(spans, strings.TrimSpace(rest[:closeAt]))
			} else {
				out.WriteString(rest[:closeAt])
			}
			rest = rest[closeAt+len(closeTag):]
			continue
		}
		out.WriteString(rest[:open])
		body := rest[open+len(tag):]
		end := strings.Index(body, "</"+tag[1:])
		if end < 0 {
			out.WriteString(rest[open:])
			break
		}
		spans = append(spans, strings.TrimSpace(body[:end]))
		rest = body[end+len(tag)+1:]
	}
	return strings.TrimSpace(out.String()), spans
}

func nextThinkOpen(s string) (int, string) {
	a, b := strings.Index(s, "<think>"), strings.Index(s, "<thinking>")
	switch {
	case a < 0 && b < 0:
		return -1, ""
	case b < 0 || (a >= 0 && a < b):
		return a, "<think>"
	}
	return b, "<thinking>"
}

func nextThinkClose(s string) (int, string) {
	a, b := strings.Index(s, "</think>"), strings.Index(s, "</thinking>")
	switch {
	case a < 0 && b < 0:
		return -1, ""
	case b < 0 || (a >= 0 && a < b):
		return a, "</think>"
	}
	return b, "</thinking>"
}

// messageMetrics sets timestamp, model, tokens and cost from the message,
// its usage, and mini-swe-agent's extra{response{usage,model}, cost,
// timestamp}.
func (b *builder) messageMetrics(st *model.Step, m object) {
	var ext, resp map[string]jsonx.RawMessage
	if raw, ok := m.lookup("extra"); ok {
		ext = format.Object(raw)
		resp = format.SplitObject(ext["response"])
	}
	for _, raw := range []jsonx.RawMessage{m.get("timestamp"), m.get("created"), ext["timestamp"], resp["created"]} {
		if t, ok := format.Time(raw); ok {
			st.Timestamp = model.Time(t)
			break
		}
	}
	if v, ok := stringValue(m.get("model")); ok {
		st.ModelName = model.Str(v)
	} else if v, ok := stringValue(resp["model"]); ok {
		st.ModelName = model.Str(v)
	}
	usageRaw := m.get("usage")
	if format.IsNull(usageRaw) {
		usageRaw = resp["usage"]
	}
	format.ParseUsage(usageRaw).Apply(st)
	if c, ok := format.Float(ext["cost"]); ok {
		st.CostUSD = model.Float(c)
	}
}

// messageExtra keeps the unmapped keys; mini-swe-agent's extra object is
// kept without what is already mapped (cost, timestamp, response usage,
// model, created) or repeats the message (response choices).
func messageExtra(m object, known []string) *string {
	extra := m.extra(nil, known...)
	raw, ok := m.lookup("extra")
	if !ok {
		return extra
	}
	ext := format.Object(raw)
	if ext == nil && !(jsonx.Valid(raw) && format.IsNull(raw)) {
		return format.MergeExtra(extra, "extra", raw)
	}
	if ext == nil {
		ext = map[string]jsonx.RawMessage{}
	}
	if resp := format.SplitObject(ext["response"]); resp != nil {
		if r := format.Extra(resp, "choices", "usage", "model", "created"); r != nil {
			ext["response"] = jsonx.RawMessage(*r)
		} else {
			delete(ext, "response")
		}
	}
	if e := format.Extra(ext, "cost", "timestamp"); e != nil {
		return format.MergeExtra(extra, "extra", jsonx.RawMessage(*e))
	}
	return extra
}

// chatToolCalls records the message's tool_calls (and legacy
// function_call) and returns how many there were.
func (b *builder) chatToolCalls(stepID string, at loc, m object) int {
	n := 0
	if raw := m.get("tool_calls"); !format.IsNull(raw) && objectValue(raw) == nil { // an object is fast-agent's map (blocks.go)
		calls := &b.buffers().calls
		if !objects(calls, raw) {
			b.warnAt(at, "tool_calls is not an array of objects; ignored", "tool_calls")
		} else {
			for i := range calls.Elems {
				c, _ := calls.Object(i)
				b.chatToolCall(stepID, object{members: c}, at, i)
				n++
			}
		}
	}
	if raw := m.get("function_call"); !format.IsNull(raw) {
		fn := format.SplitObject(raw)
		if fn == nil {
			b.warnAt(at, "function_call is not an object; ignored", "function_call")
			return n
		}
		name := format.String(fn["name"])
		tc := model.ToolCall{StepID: stepID, FunctionName: name, Extra: format.Extra(fn, "name", "arguments")}
		tc.Arguments, tc.ArgumentsValid = b.arguments(fn["arguments"], at, "function_call", "arguments")
		b.addCall(tc, nameKeyPrefix+name)
		n++
	}
	return n
}

// objects splits the JSON array raw into l and reports whether it is one
// of objects only.
func objects(l *format.List, raw []byte) bool {
	if !format.SplitList(l, raw) {
		return false
	}
	for i := range l.Elems {
		if _, isObject := l.Object(i); !isObject {
			return false
		}
	}
	return true
}

func (b *builder) chatToolCall(stepID string, c object, at loc, i int) {
	id := format.String(c.get("id"))
	tc := model.ToolCall{StepID: stepID, ToolCallID: id}
	var knownBuf [3]string
	known := append(knownBuf[:0], "id", "function")
	fnRaw := c.get("function")
	argKey := "arguments"
	switch typ := symbol(c.get("type")); typ {
	case "custom":
		fnRaw = c.get("custom")
		argKey = "input"
		known = append(known, "custom")
	default:
		if typ == "" || typ == "function" {
			known = append(known, "type")
		}
	}
	var buf [4]format.Member // {name, arguments}, as written
	fn, isObject := format.AppendMembers(buf[:0], fnRaw)
	if !isObject {
		b.warnAt(at, "tool call has no function object", "tool_calls", i)
	}
	tc.FunctionName = format.Symbol(fn.Get("name"))
	tc.Arguments, tc.ArgumentsValid = b.arguments(fn.Get(argKey), at, "tool_calls", i, "function", argKey)
	tc.Extra = b.extra(c, nil, known...)
	b.addCall(tc, id)
}

// arguments keeps the raw arguments text. A string that decodes to another
// JSON string was encoded twice: it stays raw (it is valid JSON), with a
// warning.
func (b *builder) arguments(raw jsonx.RawMessage, at loc, parts ...any) (*string, bool) {
	text, valid := format.ArgumentsText(raw)
	if valid && text != nil {
		if t := strings.TrimSpace(*text); len(t) > 0 && t[0] == '"' {
			b.warnAt(at, "arguments are double-encoded JSON (a JSON string holding JSON); kept raw", parts...)
		}
	}
	return text, valid
}

// chatResult links a tool/function message to the call it answers.
func (b *builder) chatResult(stepID string, at loc, role string, m object, result *string) {
	key, link := format.String(m.get("tool_call_id")), model.LinkByID
	if key == "" {
		if ids := m.get("tool_call_ids"); !format.IsNull(ids) { // SWE-agent
			var list []string
			if jsonx.Unmarshal(ids, &list) == nil && len(list) > 0 {
				key = list[0]
			}
		}
	}
	switch {
	case key != "":
	case role == "function":
		key, link = nameKeyPrefix+format.String(m.get("name")), model.LinkByName
	default:
		link = model.LinkByOrder
	}
	if result == nil {
		result = model.StrAlways("")
	}
	if !b.resolve(key, link, result, model.ResultOK, stepID) {
		b.warnAt(at, "tool result matches no unanswered call")
	}
}
