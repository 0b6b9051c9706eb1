package openai

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// nameKeyPrefix keeps legacy function-name link keys apart from call ids.
const nameKeyPrefix = "\x00fn:"

// loc says where a Storyline's data sits in the file, so warnings can name
// a line (JSONL) and/or a JSON pointer (documents, or inside a line).
type loc struct {
	line int64
	ptr  string // pointer prefix of the element ("" for a whole line)
	// index, when not 0, is 1 + the index of an element below ptr: written
	// into the pointer only when a warning needs it, not for every message.
	index int
}

// pointer is the JSON pointer of the element.
func (l loc) pointer() string {
	if l.index == 0 {
		return l.ptr
	}
	return l.ptr + "/" + strconv.Itoa(l.index-1)
}

func (l loc) warning(msg string, parts ...any) model.Warning {
	return model.Warning{Line: l.line, Pointer: l.pointer() + format.Pointer(parts...), Message: msg}
}

// builder accumulates one Storyline: steps, tool calls, and the pending
// calls that later result steps are linked to.
type builder struct {
	sl  *model.Storyline
	loc loc
	// pending maps a link key (call id, "" for id-less calls, or a function
	// name key) to the indexes in sl.ToolCalls of calls still waiting for a
	// result, oldest first. Ids are only unique per conversation and may
	// repeat, so a result answers the earliest unanswered call.
	pending map[string][]int
	// textCalls are the calls the latest message wrote into its text
	// (<tool_call> blocks), and plainObservations says that a plain user
	// turn right after them is their observation (Harbor trace exports).
	textCalls         []int
	plainObservations bool
	// toolDefs is the first <tools> schema found in a system or user turn,
	// for the run's extra.
	toolDefs []byte
	// scratch holds what message lists are split into (chatMessages).
	scratch *scratch
	// texts holds the strings that item steps and results point at, a
	// block at a time (textOf), rather than a pointer allocated for each.
	texts []string
	// extras holds the text of scanned items' extras, a block at a time
	// (extra): allocating each, and its pointer, was most of what an extra
	// cost a Codex output item.
	extras []byte
}

// extrasBlock is how many bytes builder.extras allocates at once.
const extrasBlock = 4096

// extra is o.extra(add, known...), a scanned object's text kept in
// b.extras. Only bytes past every extra's end are ever written, so the
// strings made from the block stay as they were written.
func (b *builder) extra(o object, add *format.Member, known ...string) *string {
	if o.m != nil {
		return o.extra(add, known...)
	}
	free := b.extras[len(b.extras):]
	text, ok := o.members.AppendExtra(free, add, known...)
	if !ok {
		return nil
	}
	switch {
	case cap(text) == cap(free): // written into the block
		b.extras = b.extras[:len(b.extras)+len(text)]
	case len(text) < extrasBlock/4: // did not fit: the next ones go to a new block
		b.extras = make([]byte, 0, extrasBlock)
	}
	return b.textOf(unsafe.String(unsafe.SliceData(text), len(text)))
}

// textsBlock is how many strings builder.texts allocates at once.
const textsBlock = 64

// textOf is model.StrAlways(s), its string kept in b.texts.
func (b *builder) textOf(s string) *string {
	if len(b.texts) == cap(b.texts) {
		b.texts = make([]string, 0, textsBlock)
	}
	b.texts = append(b.texts, s)
	return &b.texts[len(b.texts)-1]
}

// scratch holds the buffers a message list is split into, reused from one
// message to the next, and through scratchPool from one record to the
// next: growing them again for each of a file's conversations showed in
// the chat profile.
type scratch struct {
	top      format.Members // a chat record's members
	messages format.List
	calls    format.List // a message's tool calls
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// buffers is the builder's scratch, new unless a reader of many records
// gave it one from scratchPool.
func (b *builder) buffers() *scratch {
	if b.scratch == nil {
		b.scratch = new(scratch)
	}
	return b.scratch
}

func newBuilder(layout string, l loc) *builder {
	return &builder{
		sl:  &model.Storyline{Run: model.Run{SourceFormat: format.OpenAI + "/" + layout}},
		loc: l,
	}
}

func (b *builder) warn(msg string, parts ...any) {
	b.sl.Warnings = append(b.sl.Warnings, b.loc.warning(msg, parts...))
}

func (b *builder) warnAt(at loc, msg string, parts ...any) {
	b.sl.Warnings = append(b.sl.Warnings, at.warning(msg, parts...))
}

// addStep appends st and returns its index.
func (b *builder) addStep(st model.Step) int {
	b.sl.Steps = append(b.sl.Steps, st)
	return len(b.sl.Steps) - 1
}

// addCall records a tool call made by step stepID, waiting for a result
// under key unless it already carries one.
func (b *builder) addCall(tc model.ToolCall, key string) {
	b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	if tc.ResultStatus != "" {
		return
	}
	if b.pending == nil {
		b.pending = map[string][]int{}
	}
	b.pending[key] = append(b.pending[key], len(b.sl.ToolCalls)-1)
}

// resolve links a result carried by step stepID to the earliest unanswered
// call under key. It reports false when no call is waiting.
func (b *builder) resolve(key, link string, result *string, status, stepID string) bool {
	i := b.take(key, nil)
	if i < 0 {
		return false
	}
	b.answer(i, link, result, status, stepID)
	return true
}

// take removes and returns the earliest call waiting under key for which
// match (nil: any) holds, or -1. key may alias a line (lookupKey): the map
// keeps a copy of it when it stores the key again, as assigning does.
func (b *builder) take(key string, match func(call int) bool) int {
	q := b.pending[key]
	for n, i := range q {
		if match != nil && !match(i) {
			continue
		}
		switch {
		case len(q) == 1:
			delete(b.pending, key)
		case n == 0:
			b.pending[strings.Clone(key)] = q[1:]
		default:
			b.pending[strings.Clone(key)] = append(q[:n:n], q[n+1:]...)
		}
		return i
	}
	return -1
}

// answer records the result of call i, carried by step stepID.
func (b *builder) answer(i int, link string, result *string, status, stepID string) {
	tc := &b.sl.ToolCalls[i]
	tc.Result, tc.ResultStatus, tc.ResultLink = result, status, link
	if tc.StepID != stepID {
		tc.ResultStepID = nil // model.Str(stepID), its string kept in b.texts
		if stepID != "" {
			tc.ResultStepID = b.textOf(stepID)
		}
	}
}

// finish fills what is derived from the whole Storyline, then Finalize.
func (b *builder) finish(file string) *model.Storyline {
	sl := b.sl
	if b.toolDefs != nil && !hasToolDefinitions(sl.Run.Extra) {
		sl.Run.Extra = format.MergeExtra(sl.Run.Extra, "tool_definitions", b.toolDefs)
	}
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		b.warn(fmt.Sprintf("%d tool call(s) have no result", missing))
	}
	if sl.Run.StartedAt == nil || sl.Run.EndedAt == nil {
		first, last := format.StepTimeRange(sl.Steps)
		if sl.Run.StartedAt == nil {
			sl.Run.StartedAt = first
		}
		if sl.Run.EndedAt == nil {
			sl.Run.EndedAt = last
		}
	}
	sl.Finalize(file)
	return sl
}

// hasToolDefinitions reports whether a run's extra already holds the
// record's own tool schema (tools or tool_definitions).
func hasToolDefinitions(extra *string) bool {
	if extra == nil {
		return false
	}
	obj := format.SplitObject([]byte(*extra))
	_, tools := obj["tools"]
	_, defs := obj["tool_definitions"]
	return tools || defs
}

// fingerprints returns one hash per step over what a repeated message keeps
// identical (source, text, reasoning, calls), so that history repeated by
// the next request or episode can be recognized.
func fingerprints(sl *model.Storyline) []uint64 {
	out := make([]uint64, len(sl.Steps))
	calls := 0
	for i := range sl.Steps {
		st := &sl.Steps[i]
		h := fnv.New64a()
		h.Write([]byte(st.Source))
		h.Write([]byte{0})
		h.Write([]byte(model.Deref(st.MessageValue)))
		h.Write([]byte{0})
		h.Write([]byte(model.Deref(st.Reasoning)))
		for calls < len(sl.ToolCalls) && sl.ToolCalls[calls].StepID == st.StepID {
			tc := &sl.ToolCalls[calls]
			h.Write([]byte{1})
			h.Write([]byte(tc.ToolCallID + "\x00" + tc.FunctionName + "\x00" + model.Deref(tc.Arguments)))
			calls++
		}
		out[i] = h.Sum64()
	}
	return out
}

// historyTracker marks the steps a conversation repeats from the previous
// one of the same group as copied context, so counts and token totals are
// not inflated by re-sent history.
type historyTracker struct {
	// strict requires the whole previous conversation to be a prefix (a
	// request log: unrelated requests only share a system prompt), otherwise
	// the longest common prefix counts (episodes known to continue a run).
	strict bool
	group  string
	prev   []uint64
}

func (h *historyTracker) mark(group string, sl *model.Storyline) {
	prints := fingerprints(sl)
	n := 0
	if group == h.group && h.prev != nil {
		for n < len(prints) && n < len(h.prev) && prints[n] == h.prev[n] {
			n++
		}
		if h.strict && n < len(h.prev) {
			n = 0
		}
	}
	for i := 0; i < n; i++ {
		sl.Steps[i].IsCopiedContext = true
	}
	h.group, h.prev = group, prints
}

// setIdentity sets run and session ids: the data's id when it has one
// (made unique in ids; as it is when ids is nil), otherwise the derived one.
func (b *builder) setIdentity(ids format.SessionIDs, dataID, derived string) {
	if dataID == "" {
		b.sl.Run.RunID, b.sl.Run.SessionID = derived, derived
		return
	}
	sid, orig := dataID, (*string)(nil)
	if ids != nil {
		sid, orig = ids.Unique(dataID)
	}
	b.sl.Run.RunID, b.sl.Run.SessionID, b.sl.Run.OriginalSessionID = dataID, sid, orig
}

// firstString returns the first non-empty string value among keys.
func firstString(obj object, keys ...string) (key, value string) {
	for _, k := range keys {
		if v := format.String(obj.get(k)); v != "" {
			return k, v
		}
	}
	return "", ""
}

func lineID(n int64) string { return "line-" + strconv.FormatInt(n, 10) }
