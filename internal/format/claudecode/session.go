package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// agentName is written to runs.agent_name: the transcript is always Claude
// Code's own.
const agentName = "claude-code"

// envelopeKeys are the envelope members mapped to columns or used to
// choose the Storyline; every other member of a line goes to the step's
// extra (cwd, gitBranch, version and userType only when they differ from
// the run's, see runKeys), message as the message's own members not
// mapped.
var envelopeKeys = []string{"type", "uuid", "sessionId", "timestamp", "isSidechain", "agentId"}

// systemKeys are envelopeKeys plus message and the system line's content.
var systemKeys = []string{"type", "uuid", "sessionId", "timestamp", "isSidechain", "message", "agentId", "content"}

// runKeys are envelope members that are constant over a session: the first
// value goes to the run (version → agent_version, the others → runs.extra);
// a line whose value differs keeps its own in its step's extra.
var runKeys = [...]string{"cwd", "gitBranch", "version", "userType"}

// runKey is the index of name in runKeys, or -1.
func runKey(name []byte) int {
	switch string(name) {
	case "cwd":
		return 0
	case "gitBranch":
		return 1
	case "version":
		return 2
	case "userType":
		return 3
	}
	return -1
}

// messageKeys are the message members mapped to columns, by line type;
// messageKeysRole the same with role, for a role that is the line's type.
var (
	messageKeys     = map[string][]string{typeUser: {"content"}, typeAsst: {"content", "model", "usage"}}
	messageKeysRole = map[string][]string{typeUser: {"content", "role"}, typeAsst: {"content", "model", "usage", "role"}}
)

// taskTools are the tool names Claude Code uses to start a subagent.
var taskTools = map[string]bool{"Task": true, "Agent": true}

// rereadUsage reads every line's usage, repeated or not: FuzzNormalize's
// reference for the lines that skip it (chain.lastUsage).
var rereadUsage = false

// flushBytes is how many bytes of lines a session reads between two
// deliveries of its finished rows, when its receiver takes runs in parts.
var flushBytes = 4 << 20

// session accumulates one transcript file.
type session struct {
	src format.Source
	// emit, when the receiver takes runs in parts (format.Source.Parts),
	// gets each chain's finished rows every flushBytes of lines (flush).
	emit       format.Emit
	sinceFlush int
	sessionID  string   // the first sessionId seen
	otherIDs   []string // other sessionIds seen (warned once each)
	runVals    map[string]json.RawMessage
	main       *chain
	children   []*chain
	chainOf    map[string]*chain // line uuid → sidechain without agentId
	byAgent    map[string]*chain // sidechain agentId → chain
	summaries  []json.RawMessage
	skipped    map[string]int
	// tasks are main-chain Task/Agent calls not yet linked to a sidechain,
	// oldest first: a new sidechain is attributed to the earliest one.
	tasks []string // step ids
	// Member lists reused from line to line (maps, filled and cleared per
	// line, were a quarter of the profile): the line's members, its
	// message's (msgObject: the message is an object), its content blocks
	// (listed: the content is an array) and usage's; then what an
	// assistant line adds to its step's extra.
	top, msg, use     format.Members
	content           format.List
	msgObject, listed bool
	// runDropped are the runKeys the line drops (dropRunValues), known
	// the names its extras leave out (extraKnown).
	runDropped [len(runKeys)]bool
	known      []string
	set        map[string][]byte
	lists      map[string][][]byte
	extra      format.Members // addExtra's members, reused
}

// chain is one Storyline being built: the main conversation or one
// sidechain (subagent).
type chain struct {
	sl       *model.Storyline
	agentID  string
	ordinal  int    // 1-based among sidechains without agentId
	taskStep string // step id of the Task call that started the sidechain
	stepIDs  map[string]bool
	pending  map[string][]int // tool_use id → indexes of unanswered calls
	// The open agent step: the latest agent step, which later lines of the
	// same API response (same message.id) are merged into; agent holds it,
	// reused from step to step (open).
	last                *lastAgent
	agent               lastAgent
	countedOn           map[string]string // message.id → step id whose usage was counted
	modelName, anyModel string
	// What the parts already emitted (flush) leave behind: sl holds the
	// rows from stepBase and callBase on (the indexes below count from the
	// chain's first row), tally their totals, started/ended their span.
	stepBase, callBase int
	tally              model.Tally
	started, ended     *time.Time
	lastCallStep       string // the step of the chain's latest tool call
	// lastUsage is the usage of the open agent step's latest line that
	// read it, and lastUsageExtra what it added to the step's extra: the
	// lines of one response repeat it, and reading it again was a twentieth
	// of the profile.
	lastUsage, lastUsageExtra []byte
}

type lastAgent struct {
	idx       int
	msgID     string
	texts     []string
	reasoning []string
	// What the response's lines add to the step's extra, written when the
	// step closes (see addExtra): rewriting the extra at every line of a
	// long response re-read its growing merged_uuids each time.
	set   map[string][]byte
	lists map[string][][]byte
}

// pend adds a line's members to set and list elements to append.
func (la *lastAgent) pend(set map[string][]byte, lists map[string][][]byte) {
	if la.set == nil {
		la.set, la.lists = map[string][]byte{}, map[string][][]byte{}
	}
	for k, v := range set {
		la.set[k] = v
	}
	for k, l := range lists {
		la.lists[k] = append(la.lists[k], l...)
	}
}

// open makes agent step idx the open one, in the storage of the one
// before (closed): a new one, and its maps, per step were a fiftieth of
// the profile.
func (c *chain) open(idx int, msgID string) *lastAgent {
	la := &c.agent
	clear(la.set)
	clear(la.lists)
	*la = lastAgent{idx: idx, msgID: msgID, texts: la.texts[:0], reasoning: la.reasoning[:0], set: la.set, lists: la.lists}
	c.last = la
	return la
}

// close writes the open agent step's pending extra and closes the step.
func (s *session) close(c *chain) {
	if la := c.last; la != nil {
		st := c.step(la.idx)
		st.Extra = s.addExtra(st.Extra, la.set, la.lists)
		c.last = nil
	}
}

func newSession(src format.Source) *session {
	s := &session{src: src, runVals: map[string]json.RawMessage{}, chainOf: map[string]*chain{},
		byAgent: map[string]*chain{}, skipped: map[string]int{}, set: map[string][]byte{}, lists: map[string][][]byte{}}
	s.main = newChain()
	return s
}

func newChain() *chain {
	return &chain{sl: &model.Storyline{}, stepIDs: map[string]bool{}, pending: map[string][]int{}, countedOn: map[string]string{}}
}

func (s *session) warn(c *chain, line int64, msg string, parts ...any) {
	if c == nil {
		c = s.main
	}
	c.sl.Warnings = append(c.sl.Warnings, model.Warning{Line: line, Pointer: format.Pointer(parts...), Message: msg})
}

// line handles one JSONL line. A line that is not a JSON object stops the
// file; everything else is read leniently.
func (s *session) line(n int64, raw []byte) error {
	if !s.scan(raw) {
		if err := s.split(n, raw); err != nil {
			return err
		}
	}
	obj := &s.top
	typ := symbol(obj.Get("type"))
	switch typ {
	case typeUser, typeAsst, typeSystem:
		s.conversation(n, typ, obj)
	case typeSummary:
		if e := obj.Extra(nil, "type"); e != nil {
			s.summaries = append(s.summaries, json.RawMessage(*e))
		}
	default:
		key := typ
		if !obj.Has("type") {
			key = "<missing>"
		}
		if s.skipped[key] == 0 {
			msg := "line type " + strconv.Quote(typ) + " is not conversation; skipped (counted in runs.extra.skipped_lines)"
			if key == "<missing>" {
				msg = "line has no type; skipped (counted in runs.extra.skipped_lines)"
			}
			s.warn(nil, n, msg, "type")
		}
		s.skipped[key]++
	}
	if s.emit != nil {
		if s.sinceFlush += len(raw); s.sinceFlush >= flushBytes {
			s.sinceFlush = 0
			return s.flush()
		}
	}
	return nil
}

// scan validates a line and splits its members, its message's and its
// message's content blocks in one pass (into s.top, s.msg, s.content).
// false: the line is not a valid object, or the scanner cannot tell; split
// then reads it the general way.
func (s *session) scan(raw []byte) bool {
	i := jsonx.SkipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	end, top, msg, msgObject, listed, ok := format.ScanMembersWithinListed(raw, i, 0, s.top[:0], "message", s.msg[:0], "content", &s.content)
	s.top, s.msg, s.msgObject, s.listed = top, msg, msgObject, listed
	return ok && jsonx.SkipWS(raw, end) == len(raw)
}

// split is scan for a line the scanner did not take: validated by the
// codec, whose error names what is wrong, then split.
func (s *session) split(n int64, raw []byte) error {
	if !jsonx.Valid(raw) {
		var v json.RawMessage
		err := jsonx.Unmarshal(raw, &v)
		if err == nil {
			err = fmt.Errorf("invalid JSON")
		}
		return format.Errorf(s.src, n, "", "claude-code line is not valid JSON: %v", err)
	}
	var isObject bool
	if s.top, isObject = format.AppendMembers(s.top[:0], raw); !isObject {
		return format.Errorf(s.src, n, "", "claude-code line is not a JSON object")
	}
	s.msg, s.msgObject = format.AppendMembers(s.msg[:0], s.top.Get("message"))
	s.listed = s.msgObject && format.SplitList(&s.content, s.msg.Get("content"))
	return nil
}

// conversation handles user, assistant and system lines.
func (s *session) conversation(n int64, typ string, obj *format.Members) {
	uuid := format.String(obj.Get("uuid"))
	c := s.chainFor(n, *obj, uuid)
	s.identity(c, n, obj)
	id := uuid
	if id == "" {
		id = "line-" + strconv.FormatInt(n, 10)
	}
	var ts *time.Time
	if raw := obj.Get("timestamp"); raw != nil {
		if t, ok := format.Time(raw); ok {
			ts = model.Time(t) // timestamp is an envelope key: left in obj
		} else if !format.IsNull(raw) {
			s.warn(c, n, "timestamp is not a timestamp; kept in the step extra", "timestamp")
			obj.Set("timestamp_raw", raw)
		}
	}
	s.dropRunValues(*obj)
	if c.stepIDs[id] {
		s.warn(c, n, "uuid "+strconv.Quote(id)+" repeats an earlier line; the step id gets a #n suffix", "uuid")
	}
	if typ == typeSystem {
		s.system(c, id, ts, obj)
		return
	}
	if !s.msgObject {
		s.warn(c, n, typ+" line has no message object; skipped", "message")
		return
	}
	msg := s.msg
	// The message members not mapped go to extra.message: written with the
	// line's members in one pass rather than merged into them after. A role
	// that is the line's type is not kept.
	known := messageKeys[typ]
	if symbol(msg.Get("role")) == typ {
		known = messageKeysRole[typ]
	}
	m := msg.Extra(nil, known...)
	if typ == typeUser {
		s.user(c, n, id, ts, msg, obj, m)
	} else {
		s.assistant(c, n, id, uuid, ts, msg, m, obj)
	}
}

// dropRunValues drops the run-level members (runKeys) of a line whose
// value (the last, when repeated) is the run's, the first value of each
// being the run's: a differing one stays for the step's extra. Dropped
// names are left out of the line's extras as known names (extraKnown)
// rather than removed: moving the members after them was a twentieth of
// the profile.
func (s *session) dropRunValues(obj format.Members) {
	var last [len(runKeys)]int // 1 + index of each key's last member; 0: absent
	for i, mb := range obj {
		if k := runKey(mb.Name); k >= 0 {
			last[k] = i + 1
		}
	}
	for k, at := range last {
		s.runDropped[k] = false
		if at == 0 {
			continue
		}
		v := obj[at-1].Val
		if first, seen := s.runVals[runKeys[k]]; !seen {
			s.runVals[runKeys[k]] = append(json.RawMessage(nil), v...)
			s.runDropped[k] = true
		} else {
			s.runDropped[k] = string(first) == string(v)
		}
	}
}

// extraKnown is known plus the run-level names the line drops.
func (s *session) extraKnown(known []string) []string {
	out := append(s.known[:0], known...)
	for k, drop := range s.runDropped {
		if drop {
			out = append(out, runKeys[k])
		}
	}
	s.known = out
	return out
}

// freshExtra is the extra of a new agent step: its line's (lineExtra),
// stripped of inline data, then the members of s.set. When stripping the
// whole leaves it as it is, so would stripping the line's part: then both
// are written in one pass rather than the line's rewritten with s.set,
// which is left empty. s.set otherwise stays for addExtra.
func (s *session) freshExtra(obj *format.Members, m *string) *string {
	if len(s.set) > 0 && !hasAny(*obj, s.set) {
		for k, v := range s.set {
			*obj = append(*obj, format.Member{Name: []byte(k), Val: v})
		}
		all := s.lineExtra(obj, m)
		if stripped := format.StripExtra(all); *stripped == *all {
			clear(s.set)
			return all
		}
		for k := range s.set {
			obj.Delete(k)
		}
	}
	return format.StripExtra(s.lineExtra(obj, m))
}

// hasAny reports whether obj has a member named as one of set.
func hasAny(obj format.Members, set map[string][]byte) bool {
	for k := range set {
		if obj.Has(k) {
			return true
		}
	}
	return false
}

// lineExtra is the extra of a user or assistant line: its envelope members
// not mapped, and m (the message's) as extra.message.
func (s *session) lineExtra(obj *format.Members, m *string) *string {
	if m != nil {
		obj.Set("message", textBytes(*m))
	} else {
		obj.Delete("message")
	}
	return obj.Extra(nil, s.extraKnown(envelopeKeys)...)
}

// chainFor picks the Storyline of a conversational line: the main chain,
// or the sidechain of its agentId, else of its parent line, else a new
// sidechain.
func (s *session) chainFor(n int64, obj format.Members, uuid string) *chain {
	side, _ := format.Bool(obj.Get("isSidechain"))
	c := s.main
	if side {
		agent := format.String(obj.Get("agentId"))
		c = nil
		if agent != "" {
			c = s.byAgent[agent]
		} else if p := s.chainOf[format.String(obj.Get("parentUuid"))]; p != nil && p != s.main && p.agentID == "" {
			c = p
		}
		if c == nil {
			c = newChain()
			c.agentID = agent
			if agent != "" {
				s.byAgent[agent] = c
			} else {
				c.ordinal = 1
				for _, ch := range s.children {
					if ch.agentID == "" {
						c.ordinal++
					}
				}
			}
			if len(s.tasks) > 0 {
				c.taskStep, s.tasks = s.tasks[0], s.tasks[1:]
			}
			s.children = append(s.children, c)
		}
	}
	// Only a sidechain without agentId is found by its lines' uuids: the
	// map keeps those alone, not one entry per line of a long session.
	if uuid != "" {
		if c != s.main && c.agentID == "" {
			s.chainOf[uuid] = c
		} else {
			delete(s.chainOf, uuid)
		}
	}
	return c
}

// identity records the session id; a line of another session keeps its id
// in its step extra (the member stays in obj).
func (s *session) identity(c *chain, n int64, obj *format.Members) {
	raw := obj.Get("sessionId")
	if writtenAs(raw, s.sessionID) {
		return // the session's id: sessionId is an envelope key, it never reaches an extra
	}
	id := format.String(raw)
	if id == "" {
		return
	}
	if s.sessionID == "" {
		s.sessionID = id
	}
	if id == s.sessionID {
		return // sessionId is an envelope key: it never reaches an extra
	}
	for _, o := range s.otherIDs {
		if o == id {
			obj.Set("otherSessionId", obj.Get("sessionId"))
			return
		}
	}
	s.otherIDs = append(s.otherIDs, id)
	s.warn(c, n, "line of another session "+strconv.Quote(id)+"; kept in this Storyline with its sessionId in the step extra", "sessionId")
	obj.Set("otherSessionId", obj.Get("sessionId"))
}

// stepID makes id unique within the chain.
func (c *chain) stepID(id string) string {
	if !c.stepIDs[id] {
		c.stepIDs[id] = true
		return id
	}
	for k := 2; ; k++ {
		cand := id + "#" + strconv.Itoa(k)
		if !c.stepIDs[cand] {
			c.stepIDs[cand] = true
			return cand
		}
	}
}

// add appends st and returns its index in the chain.
func (c *chain) add(st model.Step) int {
	c.sl.Steps = append(c.sl.Steps, st)
	return c.stepBase + len(c.sl.Steps) - 1
}

// step and call are the chain's row i, which no part has taken yet.
func (c *chain) step(i int) *model.Step     { return &c.sl.Steps[i-c.stepBase] }
func (c *chain) call(i int) *model.ToolCall { return &c.sl.ToolCalls[i-c.callBase] }

func (s *session) system(c *chain, id string, ts *time.Time, obj *format.Members) {
	text, _, ok := format.Content(obj.Get("content"))
	st := model.Step{StepID: c.stepID(id), Source: model.SourceSystem, MessageKind: format.KindText,
		Timestamp: ts, Extra: format.StripExtra(obj.Extra(nil, s.extraKnown(systemKeys)...))}
	if ok {
		st.MessageValue = model.StrAlways(text)
	}
	c.add(st)
	s.close(c)
}

// user maps a user line: tool_result blocks become tool steps linked to
// their calls; the other content (a string, text and image blocks) one
// user step. The line's extra goes to its first step.
func (s *session) user(c *chain, n int64, id string, ts *time.Time, msg format.Members, obj *format.Members, m *string) {
	first := true
	take := func() *string {
		if !first {
			return nil
		}
		first = false
		return format.StripExtra(s.lineExtra(obj, m))
	}
	newID := func() string { return c.stepID(id) }
	if !s.listed {
		text, kind, ok := content(msg.Get("content"))
		st := model.Step{StepID: newID(), Source: model.SourceUser, MessageKind: kind, Timestamp: ts, Extra: take()}
		if ok {
			st.MessageValue = model.StrAlways(text)
		}
		c.add(st)
		s.close(c) // a user turn closes the open API response
		return
	}
	var others [][]byte
	userAt := -1
	blocks := s.content.Elems
	for i, b := range blocks {
		blk, isObject := s.content.Object(i)
		if !isObject || symbol(blk.Get("type")) != "tool_result" {
			if userAt < 0 {
				userAt = c.add(model.Step{StepID: newID(), Source: model.SourceUser, Timestamp: ts, Extra: take()})
			}
			others = append(others, b)
			continue
		}
		var lineObj *format.Members
		if first {
			lineObj, first = obj, false
		}
		s.toolResult(c, n, newID(), ts, i, blk, lineObj, m)
	}
	if userAt >= 0 {
		text, kind, _ := format.Content(format.JoinArray(others))
		c.step(userAt).MessageKind, c.step(userAt).MessageValue = kind, model.StrAlways(text)
	}
	if len(blocks) == 0 {
		userAt = c.add(model.Step{StepID: newID(), Source: model.SourceUser, MessageKind: format.KindText, Timestamp: ts, Extra: take()})
	}
	if userAt >= 0 {
		// A user turn closes the open API response; tool results alone do
		// not (Claude Code may write a result before the response's next
		// tool_use line).
		s.close(c)
	}
}

// toolResult adds a tool step for one tool_result block and links it to the
// earliest unanswered call with its tool_use_id. obj is the line's members
// (m its message's extra) when the step is the line's first, which takes
// the line's extra; else nil.
func (s *session) toolResult(c *chain, n int64, id string, ts *time.Time, i int, blk format.Members, obj *format.Members, m *string) {
	text, kind, ok := content(blk.Get("content"))
	st := model.Step{StepID: id, Source: model.SourceTool, MessageKind: kind, Timestamp: ts}
	if ok {
		st.MessageValue = model.StrAlways(text)
	}
	e := blk.Extra(nil, "type", "content")
	clear(s.set)
	if e != nil {
		s.set["tool_result"] = textBytes(*e)
	}
	if obj == nil {
		st.Extra = format.StripExtra(s.addExtra(nil, s.set, nil))
	} else if extra := s.freshExtra(obj, m); len(s.set) == 0 && e != nil {
		st.Extra = extra // written with tool_result, and left as it is by stripping
	} else {
		st.Extra = format.StripExtra(s.addExtra(extra, s.set, nil))
	}
	c.add(st)
	isErr, _ := format.Bool(blk.Get("is_error"))
	status := model.ResultOK
	if isErr {
		status = model.ResultError
	}
	callID := format.String(blk.Get("tool_use_id"))
	q := c.pending[callID]
	if len(q) == 0 {
		s.warn(c, n, "tool_result for tool_use_id "+strconv.Quote(callID)+" matches no unanswered tool_use; kept as a tool step",
			"message", "content", i, "tool_use_id")
		return
	}
	tc := c.call(q[0])
	if len(q) == 1 {
		delete(c.pending, callID)
	} else {
		c.pending[callID] = q[1:]
	}
	tc.Result, tc.ResultStatus, tc.ResultLink = st.MessageValue, status, model.LinkByID
	if tc.StepID != id {
		tc.ResultStepID = model.Str(id)
	}
}

// assistant maps an assistant line. Lines of one API response (same
// message.id, following the open agent step) are merged into one step;
// its usage is counted once, from the last line that reports it.
//
// What the line adds to the step's extra (merged_uuids, message, usage,
// content_blocks) is collected in s.set and s.lists, then pended on the
// open step: merging each member in turn re-read the extra every time.
func (s *session) assistant(c *chain, n int64, id, uuid string, ts *time.Time, msg format.Members, m *string, obj *format.Members) {
	la := c.last
	var msgID string
	if raw := msg.Get("id"); la != nil && writtenAs(raw, la.msgID) {
		msgID = la.msgID
	} else {
		msgID = format.String(raw)
	}
	var st *model.Step
	clear(s.set)
	clear(s.lists)
	fresh := false // a new step, whose extra is written after its usage
	if msgID != "" && la != nil && la.msgID == msgID {
		st = c.step(la.idx)
		if uuid != "" {
			s.lists["merged_uuids"] = append(s.lists["merged_uuids"], jsonx.AppendQuoted(nil, uuid))
		}
		// The last line's message members (stop_reason, …) win.
		if m != nil {
			s.set["message"] = textBytes(*m)
		}
	} else {
		idx := c.add(model.Step{StepID: c.stepID(id), Source: model.SourceAgent, Timestamp: ts})
		s.close(c)
		la = c.open(idx, msgID)
		st = c.step(idx)
		fresh = true
	}
	if m := format.Symbol(msg.Get("model")); m != "" {
		st.ModelName = model.Str(m)
		if c.anyModel == "" {
			c.anyModel = m
		}
		if c.modelName == "" && m != "<synthetic>" {
			c.modelName = m
		}
	}
	if u := msg.Get("usage"); fresh || rereadUsage || !bytes.Equal(u, c.lastUsage) || c.countedOn[msgID] != st.StepID {
		s.usage(c, n, st, msgID, u)
		c.lastUsage, c.lastUsageExtra = append(c.lastUsage[:0], u...), s.set["usage"]
	} else if c.lastUsageExtra != nil {
		s.set["usage"] = c.lastUsageExtra // what reading it again would add
	}
	if fresh {
		st.Extra = s.freshExtra(obj, m)
	}
	var blocks [][]byte
	if s.listed {
		blocks = s.content.Elems
	} else if text, _, ok := content(msg.Get("content")); ok {
		la.texts = append(la.texts, text)
	}
	for i, b := range blocks {
		blk, _ := s.content.Object(i) // empty when b is not an object
		switch symbol(blk.Get("type")) {
		case "text":
			la.texts = append(la.texts, format.ValidString(blk.Get("text")))
		case "thinking":
			la.reasoning = append(la.reasoning, format.ValidString(blk.Get("thinking")))
		case "tool_use":
			s.toolUse(c, n, st.StepID, i, blk)
		default:
			// A copy: b is in the line's buffer, which the next line reuses.
			s.lists["content_blocks"] = append(s.lists["content_blocks"], bytes.Clone(format.StripInlineData(b)))
		}
	}
	la.pend(s.set, s.lists)
	st.MessageValue, st.Reasoning = nil, nil
	if len(la.texts) > 0 {
		st.MessageValue = model.StrAlways(strings.Join(la.texts, "\n"))
	}
	if len(la.reasoning) > 0 {
		st.Reasoning = model.StrAlways(strings.Join(la.reasoning, "\n"))
	}
	hasCalls := c.callBase+len(c.sl.ToolCalls) > 0 && c.lastCallStep == st.StepID
	switch {
	case st.MessageValue != nil:
		st.MessageKind = format.KindText
	case hasCalls:
		st.MessageKind = "tool_calls_only"
	case st.Reasoning != nil:
		st.MessageKind = "reasoning"
	default:
		st.MessageKind = format.KindText
	}
}

func (s *session) toolUse(c *chain, n int64, stepID string, i int, blk format.Members) {
	id := format.String(blk.Get("id"))
	args, valid := argumentsText(blk.Get("input"))
	tc := model.ToolCall{StepID: stepID, ToolCallID: id, FunctionName: format.Symbol(blk.Get("name")),
		Arguments: args, ArgumentsValid: valid, Extra: format.StripExtra(blk.Extra(nil, "type", "id", "name", "input"))}
	if id == "" {
		s.warn(c, n, "tool_use without an id; its result cannot be linked", "message", "content", i)
	}
	c.sl.ToolCalls = append(c.sl.ToolCalls, tc)
	c.pending[id] = append(c.pending[id], c.callBase+len(c.sl.ToolCalls)-1)
	c.lastCallStep = stepID
	if c == s.main && taskTools[tc.FunctionName] {
		s.tasks = append(s.tasks, stepID)
	}
}

// argumentsText is format.ArgumentsText for input from a validated line:
// an input that is neither null nor a string (an object, as Claude Code
// writes it) is valid, so it is compacted without validating it again.
func argumentsText(raw []byte) (*string, bool) {
	raw = bytes.TrimSpace(raw)
	if format.IsNull(raw) || raw[0] == '"' {
		return format.ArgumentsText(raw)
	}
	s := string(jsonx.CompactValid(raw))
	return &s, true
}

// usage applies an Anthropic usage object to st: prompt_tokens =
// input_tokens + cache_read_input_tokens + cache_creation_input_tokens (the
// OpenAI convention: prompt includes cached input), cached_tokens =
// cache_read_input_tokens, completion_tokens = output_tokens. The other
// members stay in extra.usage. A message id already counted on an earlier
// step is not counted again.
func (s *session) usage(c *chain, n int64, st *model.Step, msgID string, raw jsonx.RawMessage) {
	u, isObject := format.AppendMembers(s.use[:0], raw)
	s.use = u
	if !isObject {
		return
	}
	if msgID != "" {
		if on, ok := c.countedOn[msgID]; ok && on != st.StepID {
			s.warn(c, n, "message id "+strconv.Quote(msgID)+" repeats a response counted on step "+strconv.Quote(on)+"; usage not counted again", "message", "usage")
			s.set["usage_counted_on"] = jsonx.AppendQuoted(nil, on)
			return
		}
		c.countedOn[msgID] = st.StepID
	}
	in, hasIn := format.Int(u.Get("input_tokens"))
	out, hasOut := format.Int(u.Get("output_tokens"))
	read, hasRead := format.Int(u.Get("cache_read_input_tokens"))
	create, hasCreate := format.Int(u.Get("cache_creation_input_tokens"))
	st.PromptTokens, st.CompletionTokens, st.CachedTokens = nil, nil, nil
	if hasIn || hasRead || hasCreate {
		st.PromptTokens = model.Int(in + read + create)
	}
	if hasOut {
		st.CompletionTokens = model.Int(out)
	}
	if hasRead {
		st.CachedTokens = model.Int(read)
	}
	if e := u.Extra(nil, "input_tokens", "output_tokens", "cache_read_input_tokens"); e != nil {
		s.set["usage"] = textBytes(*e)
	}
}

// finish builds the Storylines: the main one, then one per sidechain in
// order of first appearance. A file with only sidechain lines (a subagent
// file) has no main Storyline: its run-level data goes to the first child.
func (s *session) finish() []*model.Storyline {
	s.close(s.main)
	for _, c := range s.children {
		s.close(c)
	}
	mainID := s.sessionID
	if mainID == "" {
		base := path.Base(s.src.File)
		mainID = strings.TrimSuffix(base, path.Ext(base))
		if mainID == "" || mainID == "." || mainID == "/" {
			mainID = agentName
		}
		s.warn(nil, 0, "no sessionId in the file; the session is named after the file")
	}
	runExtra := s.runExtra()
	var out []*model.Storyline
	emitMain := s.main.stepBase+len(s.main.sl.Steps) > 0 || len(s.children) == 0
	var refs []model.SubagentRef
	for i, c := range s.children {
		s.identify(c, mainID)
		r := &c.sl.Run
		if i == 0 && !emitMain {
			c.sl.Warnings = append(s.main.sl.Warnings, c.sl.Warnings...)
			r.Extra = runExtra
		}
		refs = append(refs, model.SubagentRef{StepID: c.taskStep, SessionID: s.sessionID, TrajectoryID: c.agentID,
			Embedded: true, ChildSessionID: r.SessionID})
	}
	if emitMain {
		s.identify(s.main, mainID)
		r := &s.main.sl.Run
		r.Extra = runExtra
		if len(refs) > 0 {
			b, _ := jsonx.Marshal(refs)
			r.SubagentRefs = model.StrAlways(string(b))
		}
		out = append(out, s.main.build(s))
	}
	for _, c := range s.children {
		out = append(out, c.build(s))
	}
	return out
}

// identify sets the identity of c's run: the session's id for the main
// chain, and under it the agent's (or the sidechain's ordinal) for a
// sidechain, each in the run of the session's main id.
func (s *session) identify(c *chain, mainID string) {
	r := &c.sl.Run
	r.RunID, r.SessionID = mainID, mainID
	if c == s.main {
		return
	}
	key := "sidechain-" + strconv.Itoa(c.ordinal)
	if c.agentID != "" {
		key = c.agentID
	}
	r.SessionID = mainID + "/" + key
	r.OriginalSessionID = model.Str(s.sessionID)
	r.ParentSessionID = model.Str(mainID)
	r.AgentID = model.Str(c.agentID)
}

// flush emits, as a part of each chain's run, the rows no later line can
// change: the steps before the open agent step, and the tool calls up to
// the first without a result (a later line may answer it). It waits for
// the session's id, which names every run of the file.
func (s *session) flush() error {
	if s.sessionID == "" {
		return nil
	}
	for _, c := range append([]*chain{s.main}, s.children...) {
		steps := len(c.sl.Steps)
		if c.last != nil {
			steps = c.last.idx - c.stepBase
		}
		calls := 0
		for calls < len(c.sl.ToolCalls) && c.sl.ToolCalls[calls].ResultStatus != "" {
			calls++
		}
		if steps == 0 && calls == 0 {
			continue
		}
		s.identify(c, s.sessionID)
		part := &model.Storyline{Run: c.sl.Run, Steps: c.sl.Steps[:steps:steps], ToolCalls: c.sl.ToolCalls[:calls:calls], More: true}
		c.sl.Steps = append([]model.Step(nil), c.sl.Steps[steps:]...)
		c.sl.ToolCalls = append([]model.ToolCall(nil), c.sl.ToolCalls[calls:]...)
		c.stepBase += steps
		c.callBase += calls
		c.span(part.Steps)
		c.tally.Rows(part, s.src.File)
		if err := s.emit(part); err != nil {
			return err
		}
	}
	return nil
}

// span widens the chain's time range by steps'.
func (c *chain) span(steps []model.Step) {
	first, last := format.StepTimeRange(steps)
	if first != nil && (c.started == nil || first.Before(*c.started)) {
		c.started = first
	}
	if last != nil && (c.ended == nil || last.After(*c.ended)) {
		c.ended = last
	}
}

// build finishes the chain's Storyline (its last part, when parts were
// emitted).
func (c *chain) build(s *session) *model.Storyline {
	sl := c.sl
	r := &sl.Run
	r.SourceFormat = format.ClaudeCode + "/" + Layout
	r.AgentName = model.Str(agentName)
	r.AgentVersion = model.Str(format.String(s.runVals["version"]))
	r.AgentModelName = model.Str(c.modelName)
	if r.AgentModelName == nil {
		r.AgentModelName = model.Str(c.anyModel)
	}
	r.Status = model.StatusUnknown
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		sl.Warnings = append(sl.Warnings, model.Warning{Message: fmt.Sprintf("%d tool call(s) have no result", missing)})
	}
	c.span(sl.Steps)
	r.StartedAt, r.EndedAt = c.started, c.ended
	c.tally.Rows(sl, s.src.File)
	c.tally.Run(sl, s.src.File)
	return sl
}

// runExtra holds cwd, gitBranch and userType (first values), the summary
// lines and the counts of skipped line types.
func (s *session) runExtra() *string {
	var extra *string
	for _, k := range runKeys {
		if v, ok := s.runVals[k]; ok && k != "version" {
			extra = format.MergeExtra(extra, k, v)
		}
	}
	if len(s.summaries) > 0 {
		b, _ := jsonx.Marshal(s.summaries)
		extra = format.MergeExtra(extra, "summaries", b)
	}
	if len(s.skipped) > 0 {
		b, _ := jsonx.Marshal(s.skipped)
		extra = format.MergeExtra(extra, "skipped_lines", b)
	}
	if len(s.otherIDs) > 0 {
		b, _ := jsonx.Marshal(s.otherIDs)
		extra = format.MergeExtra(extra, "other_session_ids", b)
	}
	return extra
}

// addExtra sets the members of set in extra (nil = empty; always an object
// this adapter wrote) and appends the elements of lists (valid JSON) to
// its arrays, a member that is not an array counting as empty.
func (s *session) addExtra(extra *string, set map[string][]byte, lists map[string][][]byte) *string {
	if len(set) == 0 && len(lists) == 0 {
		return extra
	}
	obj := s.extra[:0]
	if extra != nil {
		obj, _ = format.AppendMembers(obj, textBytes(*extra))
	}
	for k, v := range set {
		obj.Set(k, v)
	}
	for k, add := range lists {
		list, _ := format.SplitArray(obj.Get(k))
		obj.Set(k, format.JoinArray(append(list, add...)))
	}
	s.extra = obj
	return obj.Extra(nil)
}

// writtenAs reports that format.String of the scanned value raw is the
// non-empty s as raw writes it, without decoding raw (false: decode it to
// know). Ids repeat from line to line, and a decoded copy of each to
// compare was an allocation.
func writtenAs(raw []byte, s string) bool {
	n := len(raw)
	return s != "" && n == len(s)+2 && raw[0] == '"' && raw[n-1] == '"' && string(raw[1:n-1]) == s &&
		strings.IndexByte(s, '\\') < 0 && utf8.ValidString(s)
}

// textBytes is the bytes of an extra this adapter wrote, without a copy:
// they are only read (split, and written into another extra).
func textBytes(text string) []byte { return unsafe.Slice(unsafe.StringData(text), len(text)) }

// content is format.Content of a value from a validated line, a string
// unescaped without scanning it again (format.ValidString): tool results,
// half the bytes of a session, are strings.
func content(raw []byte) (text, kind string, ok bool) {
	if len(raw) > 0 && raw[0] == '"' {
		return format.ValidString(raw), format.KindText, true
	}
	return format.Content(raw)
}

// symbol is format.Symbol of a scanned value (no space around it), with
// the line types, roles and block types of most lines matched as written
// rather than hashed into format's name cache.
func symbol(raw []byte) string {
	switch string(raw) {
	case `"user"`:
		return typeUser
	case `"assistant"`:
		return typeAsst
	case `"text"`:
		return "text"
	case `"tool_use"`:
		return "tool_use"
	case `"tool_result"`:
		return "tool_result"
	case `"thinking"`:
		return "thinking"
	}
	return format.Symbol(raw)
}
