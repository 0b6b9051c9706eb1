package openai

import (
	"context"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// This file reads the layouts with one conversation per record (a JSONL
// line or an array element): chat-jsonl, chat-array, sharegpt and
// harbor-traces.

// sessionKeys are the record keys taken as a conversation's own id.
var sessionKeys = []string{"session_id", "conversation_id", "id", "task_id", "instance_id"}

// sub returns the location of member key inside the record.
func (l loc) sub(key string) loc { return loc{line: l.line, ptr: l.pointer() + format.Pointer(key)} }

// elem returns the location of element i of the array at l.
func (l loc) elem(i int) loc { return loc{line: l.line, ptr: l.pointer(), index: i + 1} }

// derivedID names a record that carries no id of its own: by its line, or
// by its array index.
func (l loc) derivedID() string {
	if l.line > 0 {
		return lineID(l.line)
	}
	return "item-" + strings.TrimPrefix(l.pointer(), "/")
}

// normalizeChat reads chat-jsonl and chat-array: {messages, tools?, ...}.
// Each record is one conversation (chatRecords; a large chat JSONL is read
// on every CPU through LineRecords).
func normalizeChat(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	recs := &chatRecords{layout: layout, ids: format.SessionIDs{}}
	return eachElement(ctx, r, src, func(l loc, raw []byte) error {
		sl, id, err := recs.record(src, l, raw)
		if err != nil {
			return err
		}
		recs.Finish(sl, id)
		return emit(sl)
	})
}

// chatRecords normalizes the conversations of one chat file. Only the ids
// taken from the data depend on earlier records (a repeated one gets #n):
// a record is built with its own id, which Finish makes unique.
type chatRecords struct {
	layout string
	ids    format.SessionIDs
}

func (c *chatRecords) Record(src format.Source, lineNo int64, line []byte) (*model.Storyline, string, error) {
	return c.record(src, loc{line: lineNo}, line)
}

func (c *chatRecords) record(src format.Source, l loc, raw []byte) (*model.Storyline, string, error) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	top, listed, ok := scanChatRecord(raw, s)
	if !ok {
		m, err := decodeObject(raw)
		if err != nil {
			return nil, "", elementError(src, l, err)
		}
		top = mapObject(m)
	}
	return c.build(src, l, top, s, listed)
}

// build maps a record already validated and split into top, its messages
// already split into s.messages when listed.
func (c *chatRecords) build(src format.Source, l loc, top object, s *scratch, listed bool) (*model.Storyline, string, error) {
	b := newBuilder(c.layout, l)
	b.scratch = s
	idKey, id := firstString(top, sessionKeys...)
	b.setIdentity(nil, id, l.derivedID())
	if m, ok := stringValue(top.get("model")); ok {
		b.sl.Run.AgentModelName = model.Str(m)
	}
	if listed {
		b.chatList(0, l.sub("messages"))
	} else {
		b.chatMessages(top.get("messages"), 0, l.sub("messages"))
	}
	b.sl.Run.Extra = top.extra(nil, "messages", idKey, "model")
	return b.finish(src.File), id, nil
}

// Finish makes a record's own id unique within the file.
func (c *chatRecords) Finish(sl *model.Storyline, id string) { c.ids.Finish(sl, id) }

// chatMessages maps the message list at `at`, whose first element has
// index first in the conversation, and returns the index after the last.
func (b *builder) chatMessages(raw jsonx.RawMessage, first int, at loc) int {
	if format.IsNull(raw) {
		b.warnAt(at, "no messages")
		return first
	}
	if !format.SplitList(&b.buffers().messages, raw) {
		b.warnAt(at, "messages is not an array; ignored")
		return first
	}
	return b.chatList(first, at)
}

// chatList is chatMessages of the list split into the builder's scratch.
func (b *builder) chatList(first int, at loc) int {
	list := &b.scratch.messages
	b.sl.Steps = slices.Grow(b.sl.Steps, len(list.Elems))
	// Most calls are answered by a tool message: as many calls reserved
	// (capacity only) spare the copies of growing the list call by call.
	tools := 0
	for i := range list.Elems {
		if m, _ := list.Object(i); string(m.Get("role")) == `"tool"` {
			tools++
		}
	}
	b.sl.ToolCalls = slices.Grow(b.sl.ToolCalls, tools)
	for i := range list.Elems {
		// A list of members per message rather than a map: hashing every
		// name was a tenth of the chat profile.
		m, isObject := list.Object(i)
		if !isObject {
			b.warnAt(at, "message is not an object; skipped", i)
			continue
		}
		b.chatMessage(strconv.Itoa(first+i), at.elem(i), object{members: m})
	}
	return first + len(list.Elems)
}

// normalizeHarbor reads harbor trace exports: one row per episode, each
// repeating the run's history up to that episode.
func normalizeHarbor(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	ids := format.SessionIDs{}
	history := historyTracker{}
	return eachElement(ctx, r, src, func(l loc, raw []byte) error {
		top, err := decodeObject(raw)
		if err != nil {
			return elementError(src, l, err)
		}
		b := newBuilder(layoutHarbor, l)
		b.plainObservations = true
		runID := format.String(top["run_id"])
		base := format.String(top["trial_name"])
		if base == "" {
			base = runID
		}
		episode := format.String(top["episode"])
		if episode == "" {
			episode = l.derivedID()
		}
		session := episode
		if base != "" {
			session = base + "/" + episode
		}
		sid, _ := ids.Unique(session)
		if runID == "" {
			runID = sid
		}
		run := &b.sl.Run
		run.RunID, run.SessionID, run.OriginalSessionID = runID, sid, model.Str(base)
		run.AgentName = model.Str(format.String(top["agent"]))
		run.AgentModelName = model.Str(format.String(top["model"]))
		if d, ok := top["date"]; ok {
			if t, ok := format.Time(d); ok {
				run.StartedAt = model.Time(t)
			} else {
				b.warn("date is not a timestamp; kept in extra", "date")
			}
		}
		b.chatMessages(top["conversations"], 0, l.sub("conversations"))
		run.Reward, run.Scores = traceResult(top["result"])
		run.Extra = format.Extra(top, "conversations", "agent", "model", "run_id", "result")
		history.mark(runID, b.sl)
		return emit(b.finish(src.File))
	})
}

// traceResult maps a harbor trace row's result, the trial's reward bucket
// ("1.0") or the name of the exception it raised: a number is the reward
// and scores {"reward": n}; a name gives scores {"exception_type": name}.
func traceResult(raw jsonx.RawMessage) (reward *float64, scores *string) {
	result := format.String(raw)
	if result == "" {
		return nil, nil
	}
	if f, ok := format.Float(raw); ok {
		obj, _ := jsonx.Marshal(map[string]float64{"reward": f})
		return model.Float(f), model.Str(string(obj))
	}
	obj, _ := jsonx.Marshal(map[string]string{"exception_type": result})
	return nil, model.Str(string(obj))
}

// shareGPTRoles maps ShareGPT "from" values to chat roles.
var shareGPTRoles = map[string]string{
	"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
	"system": "system", "observation": "tool", "tool": "tool", "function_call": "assistant",
}

// normalizeShareGPT reads {conversations:[{from, value}], tools?, system?}
// records. Calls and observations carry no ids, so results link by order.
func normalizeShareGPT(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	ids := format.SessionIDs{}
	return eachElement(ctx, r, src, func(l loc, raw []byte) error {
		top, err := decodeObject(raw)
		if err != nil {
			return elementError(src, l, err)
		}
		b := newBuilder(layoutShareGPT, l)
		at := l.sub("conversations")
		idKey, id := firstString(mapObject(top), sessionKeys...)
		b.setIdentity(ids, id, l.derivedID())
		turns, err := decodeMessages(top["conversations"])
		if err != nil || turns == nil {
			b.warnAt(at, "conversations is not an array; ignored")
		}
		for i, t := range turns {
			if t == nil {
				b.warnAt(at, "turn is not an object; skipped", i)
				continue
			}
			b.chatMessage(strconv.Itoa(i), at.elem(i), mapObject(b.shareGPTTurn(at.elem(i), t)))
		}
		b.sl.Run.Extra = format.Extra(top, "conversations", idKey)
		return emit(b.finish(src.File))
	})
}

// shareGPTTurn rewrites a {from, value} turn as a chat message, so that one
// mapping serves both. A function_call turn's value is JSON text
// {name, arguments}.
func (b *builder) shareGPTTurn(at loc, t map[string]jsonx.RawMessage) map[string]jsonx.RawMessage {
	from := format.String(t["from"])
	m := make(map[string]jsonx.RawMessage, len(t))
	for k, v := range t {
		if k != "from" && k != "value" {
			m[k] = v
		}
	}
	role, ok := shareGPTRoles[from]
	if !ok {
		role = from
	}
	m["role"], _ = jsonx.Marshal(role)
	if from != "function_call" {
		m["content"] = t["value"]
		return m
	}
	// LLaMA-Factory also accepts a list of calls in one function_call turn.
	value := []byte(format.String(t["value"]))
	elems, isList := format.SplitArray(value)
	if !jsonx.Valid(value) || !isList {
		elems = [][]byte{value}
	}
	calls := make([]map[string]any, 0, len(elems))
	for _, e := range elems {
		c, ok := textCall(e)
		if !ok {
			b.warnAt(at, "function_call value is not {name, arguments} JSON; kept as text", "value")
			m["content"] = t["value"]
			return m
		}
		call := map[string]any{"type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}}
		if c.extra != nil {
			call["extra"] = jsonx.RawMessage(*c.extra) // kept in the call's extra
		}
		calls = append(calls, call)
	}
	m["tool_calls"], _ = jsonx.Marshal(calls)
	return m
}
