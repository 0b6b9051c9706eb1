package actf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

const redacted = "<redacted>"

// builder turns one session's events, in file order, into a Storyline.
type builder struct {
	sl        *model.Storyline
	stepIDs   map[string]bool
	lastAgent int            // index of the latest agent step, -1 before any
	llmSteps  map[string]int // llm scope uuid → its agent step
	openCalls map[string]int // tool_call_id → call row not yet bound to a tool scope
	scopeRows map[*event]int // tool scope start → its call row
	// turnCalls are the call rows the latest llm output announced, under
	// the llm scope's parent and under the llm scope itself (where tool
	// scopes run: beside the llm scope or inside it); generatedID marks the
	// rows whose id the payload did not give, and namePaired the rows a
	// tool scope took by name (see pairByName).
	turnCalls   map[string][]int
	turnRows    []int // what turnCalls' slices are parts of, for the session
	generatedID map[int]bool
	namePaired  map[int]bool
	prevInput   []message // the previous llm input
	llmEnded    bool
	root        *event // the run's agent scope start
	marks       map[string]int64
	scopes      map[string]int64 // unmapped scope types
	refs        []model.SubagentRef
	redacted    int64
	resolved    func(sessionID string) bool
	// stepExtras and callExtras are the extras of the steps and tool calls,
	// by row, written to the rows once the session is mapped.
	stepExtras, callExtras []rowExtra
	// steps and calls are the row counts of the previous session, which
	// the next one's rows are allocated for: sessions of a stream tend to
	// be alike, and rows that fit are handed out without a copy.
	steps, calls int
	// stepBlock, callBlock and storylines are the blocks a small session's
	// rows and Storyline are taken from (see carve), where each was an
	// allocation of its own.
	stepBlock  block[model.Step]
	callBlock  block[model.ToolCall]
	storylines []model.Storyline
	// boxes holds the session's string columns (see str); extraText is
	// the buffer the row extras are written to.
	boxes     []string
	extraText []byte
	// input is the first llm input, decoded by agentInputShown for llmStart.
	input struct {
		e    *event
		msgs []message
		ok   bool
	}
}

func newBuilder(resolved func(string) bool) *builder {
	return &builder{resolved: resolved}
}

// reuseLimit is the size of a session (events and rows) above which its
// maps are dropped rather than cleared for the next one: clearing costs
// their capacity, which a large session leaves behind.
const reuseLimit = 1024

// reset readies the builder for a new session. One builder serves a whole
// stream, keeping its maps (fresh ones for each of many small sessions
// showed in profiles); prevSize is the size of the session it last built.
func (b *builder) reset(sessionID string, prevSize int) {
	if b.stepIDs == nil || prevSize > reuseLimit {
		b.stepIDs, b.llmSteps, b.openCalls = map[string]bool{}, map[string]int{}, map[string]int{}
		b.scopeRows, b.turnCalls = map[*event]int{}, map[string][]int{}
		b.generatedID, b.namePaired = map[int]bool{}, map[int]bool{}
		b.marks, b.scopes = map[string]int64{}, map[string]int64{}
		b.stepExtras, b.callExtras, b.turnRows = nil, nil, nil
	} else {
		clear(b.stepIDs)
		clear(b.llmSteps)
		clear(b.openCalls)
		clear(b.scopeRows)
		clear(b.turnCalls)
		clear(b.generatedID)
		clear(b.namePaired)
		clear(b.marks)
		clear(b.scopes)
		clear(b.stepExtras) // they alias the previous session's lines
		clear(b.callExtras)
	}
	*b = builder{
		stepIDs: b.stepIDs, lastAgent: -1, llmSteps: b.llmSteps, openCalls: b.openCalls, scopeRows: b.scopeRows,
		turnCalls: b.turnCalls, generatedID: b.generatedID, namePaired: b.namePaired,
		marks: b.marks, scopes: b.scopes, resolved: b.resolved,
		stepExtras: b.stepExtras[:0], callExtras: b.callExtras[:0], sl: b.storyline(),
		steps: b.steps, calls: b.calls, extraText: b.extraText[:0],
		stepBlock: b.stepBlock, callBlock: b.callBlock, storylines: b.storylines, turnRows: b.turnRows[:0],
	}
	b.sl.Run.SessionID = sessionID
	b.sl.Steps, b.sl.ToolCalls = b.stepBlock.carve(b.steps), b.callBlock.carve(b.calls)
}

// storyline is a new Storyline from the block of the stream's.
func (b *builder) storyline() *model.Storyline {
	if len(b.storylines) == cap(b.storylines) {
		b.storylines = make([]model.Storyline, 0, rowBlock)
	}
	b.storylines = append(b.storylines, model.Storyline{})
	return &b.storylines[len(b.storylines)-1]
}

func (b *builder) warn(e *event, format string, args ...any) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{Line: e.line, Message: fmt.Sprintf(format, args...)})
}

// build maps the events; header is the stream header line, if any.
func (b *builder) build(events []*event, header json.RawMessage) *model.Storyline {
	inputShown := b.agentInputShown(events)
	for _, e := range events {
		if isRedacted(e.payload) {
			b.redacted++
		}
		switch e.phase {
		case phaseStart:
			b.start(e, inputShown)
		case phaseEnd:
			b.end(e)
		case phaseMark:
			b.mark(e)
		default:
			kind := kindOf(e)
			b.warn(e, "unknown event kind %q; counted in run extra", kind)
			b.marks["kind:"+kind]++
		}
	}
	if b.root != nil && b.sl.Run.EndedAt == nil {
		b.warn(b.root, "agent scope %q never ended", b.root.name)
	}
	b.writeExtras(header)
	b.steps, b.calls = len(b.sl.Steps), len(b.sl.ToolCalls)
	b.sl.Steps, b.sl.ToolCalls = b.stepBlock.keep(b.sl.Steps), b.callBlock.keep(b.sl.ToolCalls)
	return b.sl
}

// rowBlock is the number of rows (or Storylines) allocated at once for
// the small sessions of a stream; a session of more than a quarter of it
// has rows of its own.
const rowBlock = 64

// block is where the rows of small sessions are taken from: one
// allocation for many sessions. A Storyline's rows are capped at their
// length, so that appending to them cannot reach the next session's.
type block[T any] struct {
	rows   []T
	carved int // the size of the part handed out last
}

// carve returns the row slice of a session that may have n rows.
func (bl *block[T]) carve(n int) []T {
	bl.carved = 0
	switch {
	case n == 0:
		return nil
	case n > rowBlock/4:
		return make([]T, 0, min(n, reuseLimit))
	case cap(bl.rows)-len(bl.rows) < n:
		bl.rows = make([]T, 0, rowBlock)
	}
	at := len(bl.rows)
	bl.carved = n
	return bl.rows[at : at : at+n]
}

// keep is a session's rows once built: rows that stayed in the part carve
// handed out are kept in the block, anything else as final leaves it.
func (bl *block[T]) keep(rows []T) []T {
	at := len(bl.rows)
	if bl.carved == 0 {
		return final(rows)
	}
	part := bl.rows[at : at+bl.carved]
	if len(rows) > 0 && &rows[0] == &part[0] {
		bl.rows = bl.rows[:at+len(rows)]
		return rows[:len(rows):len(rows)]
	}
	clear(part) // rows outgrew it: what was appended there is garbage
	return final(rows)
}

// final is a session's rows: nil when there are none (as appending would
// have left them), copied when more than half of their capacity is unused.
func final[T any](rows []T) []T {
	switch {
	case len(rows) == 0:
		return nil
	case cap(rows) > 2*len(rows):
		return slices.Clone(rows)
	}
	return rows
}

// size is what reset weighs the session by.
func (b *builder) size(events int) int { return events + len(b.sl.Steps) + len(b.sl.ToolCalls) }

// isRedacted is format.String(raw) == redacted without copying the payload
// (every event's): the payload is valid JSON, so only a string can match.
func isRedacted(raw json.RawMessage) bool {
	raw = format.TrimSpace(raw)
	n := len(raw)
	if n < 2 || raw[0] != '"' || n-2 > 6*len(redacted) { // at most \uXXXX per character
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:n-1]) == redacted
	}
	return format.String(raw) == redacted
}

func scopeTypeOf(e *event) string {
	if e.scopeType == "" && e.start != nil {
		return e.start.scopeType
	}
	return e.scopeType
}

func (b *builder) start(e *event, inputShown bool) {
	switch scopeTypeOf(e) {
	case scopeAgent:
		if b.root != nil {
			b.scopes["agent (nested)"]++
			return
		}
		b.root = e
		r := &b.sl.Run
		r.AgentName = b.str(e.name)
		r.StartedAt = e.ts
		if !inputShown && !format.IsNull(e.payload) {
			b.textStep(e, pairKey(e)+":input", model.SourceUser, e.payload)
		}
	case scopeLLM:
		b.llmStart(e)
	case scopeTool:
		b.bindCall(e)
	default:
		b.otherScope(e)
	}
}

func (b *builder) end(e *event) {
	switch scopeTypeOf(e) {
	case scopeAgent:
		if b.root == nil && e.start == nil {
			b.warn(e, "agent scope end without a start")
			b.root = e
			b.sl.Run.AgentName = b.str(e.name)
		}
		if e.start != nil && e.start == b.root || e == b.root {
			b.runEnd(e)
		}
	case scopeLLM:
		b.llmEnd(e)
	case scopeTool:
		b.toolEnd(e)
	default:
		if e.start == nil {
			b.otherScope(e)
		}
	}
}

func (b *builder) otherScope(e *event) {
	t := scopeTypeOf(e)
	if t == "" {
		t = "(none)"
	}
	if b.scopes[t] == 0 {
		b.warn(e, "scope type %q is not mapped to steps; counted in run extra", t)
	}
	b.scopes[t]++
}

// agentInputShown reports whether the agent scope's input is repeated as a
// user message of the first llm call, so that it is not recorded twice.
// The llm input it decodes is kept for llmStart.
func (b *builder) agentInputShown(events []*event) bool {
	var input string
	for _, e := range events {
		switch {
		case e.phase == phaseStart && scopeTypeOf(e) == scopeAgent && input == "":
			input, _, _ = format.Content(e.payload)
		case e.phase == phaseStart && scopeTypeOf(e) == scopeLLM:
			msgs, ok := inputMessages(e.payload)
			b.input.e, b.input.msgs, b.input.ok = e, msgs, ok
			for i := range msgs {
				m := &msgs[i]
				m.decode()
				if m.role == "user" && m.text != nil && *m.text == input {
					return true
				}
			}
			return false
		}
	}
	return false
}

func (b *builder) appendStep(st model.Step) int {
	id, n := st.StepID, 1
	for b.stepIDs[st.StepID] {
		n++
		st.StepID = id + "#" + strconv.Itoa(n)
	}
	b.stepIDs[st.StepID] = true
	if st.Source == model.SourceAgent {
		b.lastAgent = len(b.sl.Steps)
	}
	b.sl.Steps = append(b.sl.Steps, st)
	b.stepExtras = append(b.stepExtras, rowExtra{})
	return len(b.sl.Steps) - 1
}

// appendCall adds a tool call row.
func (b *builder) appendCall(tc model.ToolCall) int {
	b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	b.callExtras = append(b.callExtras, rowExtra{})
	return len(b.sl.ToolCalls) - 1
}

// str is model.Str for the session's string columns: the strings are
// boxed in blocks that belong to the session's Storyline alone, where a box
// per column was one allocation each.
func (b *builder) str(s string) *string {
	if s == "" {
		return nil
	}
	return b.box(s)
}

// box is str for a column that holds an empty string too.
func (b *builder) box(s string) *string {
	if len(b.boxes) == cap(b.boxes) {
		b.boxes = make([]string, 0, 16)
	}
	b.boxes = append(b.boxes, s)
	return &b.boxes[len(b.boxes)-1]
}

// textStep records a payload that is not a recognizable message list as
// one step holding its text (or its JSON).
func (b *builder) textStep(e *event, id, source string, payload json.RawMessage) {
	text, kind, ok := format.Content(payload)
	b.contentStep(e, id, source, text, kind, ok)
}

// contentStep is textStep for a payload's format.Content.
func (b *builder) contentStep(e *event, id, source, text, kind string, ok bool) {
	st := model.Step{StepID: id, Source: source, MessageKind: format.KindText, Timestamp: e.ts}
	if ok {
		st.MessageValue, st.MessageKind = b.str(text), kind
	}
	b.stepExtras[b.appendStep(st)].scope(e)
}

// llmStart records the new input messages of an llm call. Chat inputs
// repeat the whole history, so only the messages after the previous call's
// input are new; after the first call, assistant and tool messages echo
// recorded llm outputs and tool results and are skipped (a tool message
// still fills a call's missing result).
func (b *builder) llmStart(e *event) {
	msgs, ok := b.input.msgs, b.input.ok
	if e != b.input.e {
		msgs, ok = inputMessages(e.payload)
	}
	if !ok {
		if !format.IsNull(e.payload) {
			b.textStep(e, pairKey(e)+":input", model.SourceUser, e.payload)
		}
		return
	}
	offset := 0
	if isPrefix(b.prevInput, msgs) {
		offset = len(b.prevInput)
	}
	b.prevInput = msgs
	for i := range msgs[offset:] {
		msgs[offset+i].decode()
		m := msgs[offset+i]
		source := roleSource(m)
		if source == model.SourceTool {
			b.resultFromMessage(m)
		}
		if b.llmEnded && (source == model.SourceAgent || source == model.SourceTool) {
			continue
		}
		id := pairKey(e) + ":input:" + strconv.Itoa(offset+i)
		idx := b.messageStep(e, id, source, m)
		if source == model.SourceAgent {
			b.addCalls(e, b.sl.Steps[idx].StepID, m.calls)
		}
	}
}

func isPrefix(prefix, s []message) bool {
	if len(prefix) == 0 || len(prefix) > len(s) {
		return false
	}
	for i := range prefix {
		if !same(&prefix[i], &s[i]) {
			return false
		}
	}
	return true
}

func roleSource(m message) string {
	switch m.role {
	case "system", "developer":
		return model.SourceSystem
	case "assistant", "model":
		return model.SourceAgent
	case "tool", "function":
		return model.SourceTool
	}
	if m.toolCallID != "" { // Anthropic tool_result blocks travel in user messages
		return model.SourceTool
	}
	return model.SourceUser
}

func (b *builder) messageStep(e *event, id, source string, m message) int {
	st := model.Step{StepID: id, Source: source, MessageKind: m.kind, Reasoning: m.reasoning,
		Timestamp: e.ts}
	if m.text != nil && *m.text != "" {
		st.MessageValue = m.text
	} else if len(m.calls) > 0 {
		st.MessageKind = "tool_calls_only"
	}
	if source == model.SourceAgent {
		st.ModelName = b.str(e.modelName)
	}
	idx := b.appendStep(st)
	b.stepExtras[idx].scope(e)
	return idx
}

func (b *builder) resultFromMessage(m message) {
	row, ok := b.openCalls[m.toolCallID]
	if !ok || m.text == nil {
		return
	}
	tc := &b.sl.ToolCalls[row]
	if tc.ResultLink == "" {
		tc.Result, tc.ResultStatus, tc.ResultLink = m.text, model.ResultOK, model.LinkByID
	}
}

// llmEnd records the agent step of an llm call: its output message, tool
// calls and usage.
func (b *builder) llmEnd(e *event) {
	if e.start == nil {
		b.warn(e, "llm scope %q ended without a start", pairKey(e))
	}
	m, usage, ok := agentOutput(e.payload)
	if !ok {
		m = message{kind: format.KindText}
		if text, kind, has := format.Content(e.payload); has {
			m.text, m.kind = b.box(text), kind
		}
	}
	if e.modelName == "" && e.start != nil {
		e.modelName = e.start.modelName
	}
	idx := b.messageStep(e, pairKey(e), model.SourceAgent, m)
	st := &b.sl.Steps[idx]
	t := usageTokens(usage)
	st.PromptTokens, st.CompletionTokens, st.CachedTokens, st.ReasoningTokens = t.prompt, t.completion, t.cached, t.reasoning
	b.stepExtras[idx].end(e)
	if b.sl.Run.AgentModelName == nil {
		b.sl.Run.AgentModelName = st.ModelName
	}
	b.llmSteps[e.uuid] = idx
	b.llmEnded = true
	first := len(b.sl.ToolCalls)
	b.addCalls(e, st.StepID, m.calls)
	at := len(b.turnRows)
	for row := first; row < len(b.sl.ToolCalls); row++ {
		b.turnRows = append(b.turnRows, row)
	}
	turn := b.turnRows[at:len(b.turnRows):len(b.turnRows)]
	b.turnCalls[e.parentUUID] = turn
	if e.uuid != "" {
		b.turnCalls[e.uuid] = turn
	}
}

func (b *builder) addCalls(e *event, stepID string, calls []call) {
	for i, c := range calls {
		id := c.id
		if id == "" {
			id = stepID + ":call:" + strconv.Itoa(i)
			b.generatedID[len(b.sl.ToolCalls)] = true
		}
		args, valid := format.ArgumentsText(c.args)
		b.openCalls[id] = b.appendCall(model.ToolCall{
			StepID: stepID, ToolCallID: id, FunctionName: c.name, Arguments: args, ArgumentsValid: valid,
		})
	}
}

// bindCall finds the call row of a tool scope: the call an llm output
// announced with the same tool_call_id, else the one pairByName finds, else
// a new call on the parent llm's step, the latest agent step, or (with a
// warning) an agent step of its own. A tool run is one row, never two.
func (b *builder) bindCall(e *event) int {
	if row, ok := b.openCalls[e.toolCallID]; ok && e.toolCallID != "" {
		delete(b.openCalls, e.toolCallID)
		b.scopeRows[e] = row
		b.setArgs(row, e)
		return row
	}
	if row := b.pairByName(e); row >= 0 {
		tc := &b.sl.ToolCalls[row]
		delete(b.openCalls, tc.ToolCallID)
		if e.toolCallID != "" {
			tc.ToolCallID = e.toolCallID // the payload named none: the runtime's id is the call's
		}
		b.namePaired[row] = true
		b.scopeRows[e] = row
		b.setArgs(row, e)
		return row
	}
	step, ok := b.llmSteps[e.parentUUID]
	if !ok || e.parentUUID == "" {
		step = b.lastAgent
	}
	if step < 0 {
		b.warn(e, "tool scope %q has no agent step to attach to; an agent step was added", e.name)
		step = b.appendStep(model.Step{StepID: pairKey(e) + ":call", Source: model.SourceAgent,
			MessageKind: "tool_calls_only", Timestamp: e.ts})
	}
	id := first(e.toolCallID, e.uuid, "line:"+strconv.FormatInt(e.line, 10))
	row := b.appendCall(model.ToolCall{StepID: b.sl.Steps[step].StepID, ToolCallID: id, FunctionName: e.name})
	b.scopeRows[e] = row
	b.setArgs(row, e)
	return row
}

// pairByName finds the call a tool scope ran when no id links them (the
// llm payload gave the call no id, or the tool scope carries none), as
// NAT's ATOF→ATIF converter pairs them: among the calls the latest llm
// output announced in the tool's parent scope, the earliest still unbound
// one with the tool's name — so two calls of one tool in a turn pair in
// order. A tool scope that has an id of its own only takes a call without
// one. It returns -1 when no call fits.
func (b *builder) pairByName(e *event) int {
	for _, row := range b.turnCalls[e.parentUUID] {
		tc := &b.sl.ToolCalls[row]
		if open, ok := b.openCalls[tc.ToolCallID]; !ok || open != row || tc.FunctionName != e.name {
			continue
		}
		if e.toolCallID != "" && !b.generatedID[row] {
			continue
		}
		return row
	}
	return -1
}

func (b *builder) setArgs(row int, e *event) {
	tc := &b.sl.ToolCalls[row]
	if e.phase == phaseStart && tc.Arguments == nil {
		tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(e.payload)
	}
	if tc.FunctionName == "" {
		tc.FunctionName = e.name
	}
	b.callExtras[row].scope(e)
}

func (b *builder) toolEnd(e *event) {
	row, ok := b.scopeRows[e.start]
	if !ok || e.start == nil {
		b.warn(e, "tool scope %q ended without a start", e.name)
		row = b.bindCall(e)
	}
	tc := &b.sl.ToolCalls[row]
	if text, _, has := format.Content(e.payload); has {
		tc.Result = b.box(text)
	}
	tc.ResultLink, tc.ResultStatus = model.LinkByID, model.ResultOK
	if b.namePaired[row] {
		tc.ResultLink = model.LinkByName
	}
	if e.status == "error" || e.status == "cancelled" || !format.IsNull(e.errRaw) {
		tc.ResultStatus = model.ResultError
		if tc.Result == nil {
			tc.Result = b.errorText(e.errRaw)
		}
	}
	b.callExtras[row].end(e)
}

// errorText is the message of an {type, message} error object, or the
// error's JSON.
func (b *builder) errorText(raw json.RawMessage) *string {
	var msg [1][]byte
	if subFields(raw, messageKey, msg[:]) {
		if text := str(msg[0]); text != "" {
			return b.box(text)
		}
	}
	if text, _, ok := format.Content(raw); ok {
		return b.box(text)
	}
	return nil
}

func (b *builder) runEnd(e *event) {
	r := &b.sl.Run
	r.EndedAt = e.ts
	status, known := runStatus(e.status)
	if !known {
		b.warn(e, "agent scope status %q is not recognized; run status unknown", e.status)
	}
	r.Status = status
	text, kind, ok := format.Content(e.payload)
	if !ok || text == "" {
		return
	}
	// The agent's final answer is a step unless the last llm output said it.
	if b.lastAgent >= 0 && model.Deref(b.sl.Steps[b.lastAgent].MessageValue) == text {
		return
	}
	b.contentStep(e, pairKey(e)+":output", model.SourceAgent, text, kind, ok)
}

func runStatus(s string) (status string, known bool) {
	switch strings.ToLower(s) {
	case "":
		return model.StatusUnknown, true
	case "ok", "completed", "complete", "success", "succeeded", "done", "finished", "stop", "end_turn":
		return model.StatusCompleted, true
	case "error", "failed", "failure", "exception":
		return model.StatusError, true
	case "cancelled", "canceled", "interrupted", "aborted":
		return model.StatusCancelled, true
	case "timeout", "max_turns", "max_tokens", "length", "truncated":
		return model.StatusTruncated, true
	}
	return model.StatusUnknown, false
}

// mark counts marks by name; a subagent announcement naming a child
// session becomes a subagent ref.
func (b *builder) mark(e *event) {
	b.marks[first(e.name, "(unnamed)")]++
	if !strings.Contains(strings.ToLower(e.name), "subagent") {
		return
	}
	var f [2][]byte
	format.Fields(e.raw, []string{"metadata", "data"}, f[:])
	meta := subObject(f[0])
	data := subObject(decodedData(f[1]))
	child := first(strOf(meta, "child_session_id"), strOf(data, "child_session_id"))
	if r := e.more(); child == "" && r.parentSessionID != "" && r.sessionID != r.parentSessionID {
		child = r.sessionID
	}
	if child == "" || child == b.sl.Run.SessionID {
		return
	}
	for _, ref := range b.refs {
		if ref.SessionID == child {
			return
		}
	}
	ref := model.SubagentRef{SessionID: child, TrajectoryID: first(strOf(meta, "subagent_id"), strOf(data, "subagent_id"))}
	if b.lastAgent >= 0 {
		ref.StepID = b.sl.Steps[b.lastAgent].StepID
	}
	if b.resolved(child) {
		ref.ChildSessionID = child
	}
	b.refs = append(b.refs, ref)
}

// writeExtras writes the extra columns of the run and the rows: into one
// buffer and one string, whose parts the columns are (boxed by str), where
// each was a string and a box of its own.
func (b *builder) writeExtras(header json.RawMessage) {
	buf := b.runExtra(b.extraText[:0], header)
	runEnd := len(buf)
	for i := range b.stepExtras {
		buf = b.stepExtras[i].append(buf)
	}
	for i := range b.callExtras {
		buf = b.callExtras[i].append(buf)
	}
	b.extraText = buf
	text := string(buf)
	b.sl.Run.Extra = b.str(text[:runEnd])
	at := runEnd
	next := func(x *rowExtra) *string {
		s := b.str(text[at : at+x.size])
		at += x.size
		return s
	}
	for i := range b.stepExtras {
		b.sl.Steps[i].Extra = next(&b.stepExtras[i])
	}
	for i := range b.callExtras {
		b.sl.ToolCalls[i].Extra = next(&b.callExtras[i])
	}
	if len(b.refs) > 0 {
		refs, _ := jsonx.Marshal(b.refs)
		b.sl.Run.SubagentRefs = model.Str(string(refs))
	}
}

// runExtra appends the run's extra column, if it has one, to buf.
func (b *builder) runExtra(buf []byte, header json.RawMessage) []byte {
	// The members are compact JSON already: they are written in key order,
	// as format.Extra would write them, without a map to sort.
	start := len(buf)
	out := buf
	if b.root != nil {
		if left := leftover(b.root); left != nil {
			out = append(memberKey(out, start, "agent_scope"), *left...)
		}
	}
	if obj := countsObject(b.marks); obj != nil {
		out = append(memberKey(out, start, "marks"), obj...)
	}
	if b.redacted > 0 {
		out = strconv.AppendInt(memberKey(out, start, "redacted_payloads"), b.redacted, 10)
	}
	if header != nil {
		out = append(memberKey(out, start, "stream_header"), header...)
	}
	if obj := countsObject(b.scopes); obj != nil {
		out = append(memberKey(out, start, "unmapped_scopes"), obj...)
	}
	if len(out) > start {
		out = append(out, '}')
	}
	return out
}

func countsObject(counts map[string]int64) json.RawMessage {
	if len(counts) == 0 {
		return nil
	}
	obj := make(map[string]json.RawMessage, len(counts))
	for k, n := range counts {
		obj[k] = json.RawMessage(strconv.FormatInt(n, 10))
	}
	return json.RawMessage(*format.Extra(obj))
}

// rowExtra is the extra of a step or tool call: the members a row can
// have, absent when zero. It is written once, as Extra would write the
// object (keys sorted, values compact), rather than parsed and rewritten at
// every merge.
type rowExtra struct {
	dataSchema string
	err        json.RawMessage
	event      *string
	scopeUUID  string // the scope the row came from
	status     string
	size       int // the length of the text append wrote
}

// scope records that the row came from scope e.
func (x *rowExtra) scope(e *event) {
	if e.uuid != "" {
		x.scopeUUID = e.uuid
	}
}

// end adds what a scope end carries beyond the columns: its scope, a
// non-ok status, the error object, the payload schema and unmapped
// envelope keys.
func (x *rowExtra) end(e *event) {
	x.scope(e)
	if e.status != "" && e.status != "ok" {
		x.status = e.status
	}
	if !format.IsNull(e.errRaw) {
		x.err = e.errRaw
	}
	if r := e.more(); r.dataSchema != "" {
		x.dataSchema = r.dataSchema
	}
	if left := leftover(e); left != nil {
		x.event = left
	}
}

// append appends the extra column to b, members in key order; nothing
// when there are none.
func (x *rowExtra) append(b []byte) []byte {
	start := len(b)
	if x.dataSchema != "" {
		b = jsonx.AppendQuoted(memberKey(b, start, "data_schema"), x.dataSchema)
	}
	if x.err != nil {
		b = jsonx.AppendCompactValid(memberKey(b, start, "error"), x.err) // a member of a validated line
	}
	if x.event != nil {
		b = append(memberKey(b, start, "event"), *x.event...)
	}
	if x.scopeUUID != "" {
		b = jsonx.AppendQuoted(memberKey(b, start, "scope_uuid"), x.scopeUUID)
	}
	if x.status != "" {
		b = jsonx.AppendQuoted(memberKey(b, start, "status"), x.status)
	}
	if len(b) > start {
		b = append(b, '}')
	}
	x.size = len(b) - start
	return b
}

// memberKey appends the start of an object member named key (a name that
// needs no escaping) to an object written to b from start.
func memberKey(b []byte, start int, key string) []byte {
	if len(b) == start {
		b = append(b, '{')
	} else {
		b = append(b, ',')
	}
	return append(append(append(b, '"'), key...), '"', ':')
}

// leftover is the event's unmapped envelope keys, without the empty values
// (null, [], {}) producers emit for absent fields.
func leftover(e *event) *string {
	if !e.hasLeftover {
		return nil
	}
	// Only the members left are put in a map (most ends have none); a
	// repeated key keeps its last value, as a split would.
	var obj map[string]json.RawMessage
	format.EachMember(e.raw, func(k string, v []byte) {
		switch {
		case consumed(k):
		case format.EmptyJSON(v) || k == "data" && e.fromData:
			delete(obj, k)
		default:
			if obj == nil {
				obj = map[string]json.RawMessage{}
			}
			obj[k] = v
		}
	})
	return format.Extra(obj)
}

// pairKey names a scope: its uuid, else its line.
func pairKey(e *event) string {
	if e.uuid != "" {
		return e.uuid
	}
	if e.start != nil && e.start.uuid != "" {
		return e.start.uuid
	}
	return "line:" + strconv.FormatInt(e.line, 10)
}
