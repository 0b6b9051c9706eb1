package openai

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strconv"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// rollout accumulates one Codex CLI rollout file.
type rollout struct {
	b *builder
	// model is the current turn's model (turn_context.model).
	model *string
	// pendingAgent is the latest agent step that has not yet received a
	// token_count's per-call usage, or -1.
	pendingAgent int
	// lastTotal is the raw total_token_usage of the last token_count that
	// was applied; Codex repeats token_count events without a new call.
	lastTotal jsonx.RawMessage
	// lastInfo is the info of the last token_count whose total is
	// lastTotal: Codex repeats whole token_count infos, and one equal to it
	// is skipped without being split again.
	lastInfo             []byte
	started, done, abort int64 // line of the last task_started / task_complete / turn_aborted
	// last and torn are the number of the last line and of the last line
	// that could not be read: a torn last line is a rollout still being
	// written.
	last, torn           int64
	firstTS, lastTS      *time.Time
	events               map[string]int
	sawMeta, sawTurnCtx  bool
	metaExtra, turnExtra *string
	// payload holds the members of a payload the scanner did not split: one
	// map for all such lines (nothing keeps a line's members past the line);
	// members is the scanner's buffer for the payloads it splits.
	payload map[string]jsonx.RawMessage
	members format.Members
	// tsRaw and ts are the last timestamp parsed (tsSeen: there is one),
	// as written and as parsed.
	tsRaw  []byte
	ts     *time.Time
	tsSeen bool
	// times holds the parsed timestamps a block at a time: one allocation
	// per timestamp (model.Time) was a ninth of a rollout's allocations.
	times []time.Time
	// read and size are the bytes read so far and the file's (0: unknown),
	// to extrapolate how many steps and calls are still to come.
	read, size int64
}

// status says how the rollout ended (docs/formats.md, Codex CLI rollout):
// truncated only on evidence of an unfinished turn. Current CLIs mark turns
// with task_started / task_complete / turn_aborted events; older ones wrote
// none, and their turn is finished when the file ends on the assistant's
// message (no call awaiting its output, no reasoning without its answer).
// live: the reader left out the file's torn last line (format.Source.Live).
func (ro *rollout) status(live bool) string {
	switch {
	case live, ro.torn > 0 && ro.torn == ro.last:
		return model.StatusTruncated // the last line was being written
	case ro.done > ro.started && ro.done > ro.abort:
		return model.StatusCompleted
	case ro.abort > ro.started:
		return model.StatusCancelled
	case ro.started > 0:
		return model.StatusTruncated // a turn started and never ended
	}
	steps := ro.b.sl.Steps
	if len(steps) == 0 {
		return model.StatusUnknown
	}
	if last := steps[len(steps)-1]; last.Source == model.SourceAgent &&
		(last.MessageKind == format.KindText || last.MessageKind == format.KindMultimodal) {
		return model.StatusCompleted
	}
	return model.StatusTruncated
}

// payloadPointer is at.sub("payload") of a line, built once rather than
// for every item.
var payloadPointer = format.Pointer("payload")

// rolloutLine is the {timestamp, type, payload} envelope of every line.
type rolloutLine struct {
	Timestamp jsonx.RawMessage `json:"timestamp"`
	Type      string           `json:"type"`
	Payload   jsonx.RawMessage `json:"payload"`
	// split says that members are the payload's, an object split while the
	// line was validated.
	split   bool
	members format.Members
}

// envelopeKeys are the members of a line's envelope, as decodeEnvelope
// reads them.
var envelopeKeys = []string{"timestamp", "type", "payload"}

// decodeRolloutLine decodes a line's envelope, in one pass with the
// payload's members (appended to buf) when scanRolloutLine can, else with
// decodeEnvelope, which gives the same values. The payload and members
// alias line.
func decodeRolloutLine(line []byte, buf format.Members) (rolloutLine, error) {
	if env, members, object, ok := scanRolloutLine(line, buf); ok {
		env.split, env.members = object, members
		return env, nil
	}
	return decodeEnvelope(line)
}

// decodeEnvelope decodes a line's envelope. A valid object whose type is a
// string is split without a copy; anything else goes through the codec,
// which gives the same values or error as ever.
func decodeEnvelope(line []byte) (rolloutLine, error) {
	var f [3][]byte // timestamp, type, payload
	if jsonx.Valid(line) && format.Fields(line, envelopeKeys, f[:]) {
		if typ := bytes.TrimSpace(f[1]); len(typ) > 0 && typ[0] == '"' {
			return rolloutLine{Timestamp: f[0], Type: format.Symbol(typ), Payload: bytes.TrimSpace(f[2])}, nil
		}
	}
	var env rolloutLine
	err := jsonx.Unmarshal(line, &env)
	return env, err
}

// normalizeCodex reads a Codex CLI rollout: JSONL envelopes, or the older
// single JSON document {session, items}. Both are one Storyline.
func normalizeCodex(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	br, release := format.Buffered(r)
	defer release()
	if _, err := firstByte(br); err != nil {
		return format.Errorf(src, 0, "", "read: %w", err)
	}
	first, err := br.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return format.Errorf(src, 1, "", "read: %w", err)
	}
	env, err := decodeRolloutLine(first, nil)
	if err != nil || env.Type == "" {
		// Not a rollout line: the legacy document, possibly pretty-printed.
		top, release, err := readDocument(ctx, io.MultiReader(bytes.NewReader(first), br), src)
		if err != nil {
			return err
		}
		defer release()
		return emit(normalizeLegacyCodex(top, src))
	}
	ro := &rollout{b: newBuilder(layoutCodex, loc{}), pendingAgent: -1, events: map[string]int{},
		payload: map[string]jsonx.RawMessage{}, read: int64(len(first)), size: src.Size}
	ro.reserve(br)
	ro.line(1, env)
	err = format.EachLine(ctx, br, func(n int64, line []byte) error {
		n++ // the first line was read above
		ro.read += int64(len(line)) + 1
		env, err := decodeRolloutLine(line, ro.members)
		if env.split {
			ro.members = env.members
		}
		ro.last = n
		if err != nil {
			ro.torn = n
			ro.b.warnAt(loc{line: n}, "unreadable line skipped: "+err.Error())
			return nil
		}
		ro.line(n, env)
		return nil
	})
	if err != nil {
		return err
	}
	return emit(ro.finish(src))
}

// minStepLine is the size of a short item line, {"timestamp": …,
// "type":"response_item","payload":{"type":"message"}}, below which lines
// are not counted as steps (blank ones, say).
const minStepLine = 96

// typeWindow is how far into a line its "type" member is looked for: after
// the timestamp, in the lines Codex writes.
const typeWindow = 64

// reserve sizes the step and tool-call slices for the lines already
// buffered (all of most files): regrowing them one step at a time copied
// the steps again and again, and the GC scanned every copy, a fifth of the
// CPU time. Lines whose type is seen near their start and is neither
// response_item nor compacted (events, turn contexts: about a third of
// the lines, whose reserved steps went unused) are not counted; any other
// line is. Real rollouts have at most about half as many calls as steps.
func (ro *rollout) reserve(br *bufio.Reader) {
	buffered, _ := br.Peek(br.Buffered())
	steps := 2 // the first line, and a last one without a newline
	for rest := buffered; len(rest) > 0; {
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			break
		}
		if end >= minStepLine && stepLine(rest[:min(end, typeWindow)]) {
			steps++
		}
		rest = rest[end+1:]
	}
	ro.b.sl.Steps = make([]model.Step, 0, steps)
	ro.b.sl.ToolCalls = make([]model.ToolCall, 0, steps/2)
}

// stepLine reports whether the start of a line may be that of a step: its
// type is not seen, or is response_item or compacted.
func stepLine(start []byte) bool {
	i := bytes.Index(start, []byte(`"type":"`))
	if i < 0 || i+8 >= len(start) {
		return true
	}
	return start[i+8] == 'r' || start[i+8] == 'c'
}

// room makes sure the next step and call fit, growing a full slice by what
// its growth so far predicts for the rest of the file.
func (ro *rollout) room() {
	sl := ro.b.sl
	if len(sl.Steps) == cap(sl.Steps) {
		sl.Steps = grow(sl.Steps, ro.more(len(sl.Steps)))
	}
	if len(sl.ToolCalls) == cap(sl.ToolCalls) {
		sl.ToolCalls = grow(sl.ToolCalls, ro.more(len(sl.ToolCalls)))
	}
}

// more is how many more elements a full slice of n needs: n again when the
// file's size is unknown, else its density so far over the bytes still to
// read (with an eighth more), between a quarter of n and n.
func (ro *rollout) more(n int) int {
	if ro.size <= ro.read || ro.read == 0 {
		return max(n, 8)
	}
	est := int64(n) * (ro.size - ro.read) / ro.read
	return int(min(max(est+est/8, int64(n/4+1)), int64(max(n, 8))))
}

// grow returns s with room for exactly m more elements.
func grow[T any](s []T, m int) []T {
	out := make([]T, len(s), len(s)+m)
	copy(out, s)
	return out
}

// time parses a line's timestamp. A line often has the previous line's (a
// call and the events it caused), which is then neither parsed nor
// allocated again: nothing writes through the pointer, which steps and the
// run share anyway.
func (ro *rollout) time(raw []byte) *time.Time {
	if ro.tsSeen && bytes.Equal(raw, ro.tsRaw) {
		return ro.ts
	}
	ro.tsSeen, ro.tsRaw, ro.ts = true, append(ro.tsRaw[:0], raw...), nil
	if t, ok := format.Time(raw); ok && !t.IsZero() { // as model.Time: nil for the zero time
		if len(ro.times) == cap(ro.times) {
			ro.times = make([]time.Time, 0, timesBlock)
		}
		ro.times = append(ro.times, t.UTC())
		ro.ts = &ro.times[len(ro.times)-1]
	}
	return ro.ts
}

// timesBlock is how many timestamps rollout.times allocates at once.
const timesBlock = 64

func (ro *rollout) line(n int64, env rolloutLine) {
	at := loc{line: n}
	ts := ro.time(env.Timestamp)
	if ts != nil {
		if ro.firstTS == nil {
			ro.firstTS = ts
		}
		ro.lastTS = ts
	}
	p := object{members: env.members}
	if !env.split {
		if !format.SplitObjectInto(ro.payload, env.Payload) { // the line was validated
			ro.b.warnAt(at, "payload is not an object; line skipped", "payload")
			return
		}
		p = mapObject(ro.payload)
	}
	switch env.Type {
	case "session_meta":
		ro.sessionMeta(at, p)
	case "turn_context":
		ro.turnContext(p)
	case "response_item":
		ro.room()
		if ro.b.item(p, itemStep{id: strconv.FormatInt(n, 10), at: loc{line: n, ptr: payloadPointer}, ts: ts, model: ro.model}) {
			ro.pendingAgent = len(ro.b.sl.Steps) - 1
		}
	case "event_msg":
		ro.event(n, at, p)
	case "compacted":
		ro.room()
		ro.b.addStep(model.Step{
			StepID: strconv.FormatInt(n, 10), Source: model.SourceSystem, MessageKind: "compaction",
			MessageValue: model.Str(format.String(p.get("message"))), Timestamp: ts,
			Extra: ro.b.extra(p, nil, "message"),
		})
	default:
		ro.b.warnAt(at, "unknown line type "+strconv.Quote(env.Type)+"; skipped", "type")
	}
}

func (ro *rollout) sessionMeta(at loc, o object) {
	if ro.sawMeta {
		ro.b.warnAt(at, "another session_meta; only the first one is mapped")
		return
	}
	ro.sawMeta = true
	p := o.toMap() // once per file
	run := &ro.b.sl.Run
	if id := format.String(p["id"]); id != "" {
		run.RunID, run.SessionID = id, id
	}
	run.AgentName = model.Str(format.String(p["originator"]))
	run.AgentVersion = model.Str(format.String(p["cli_version"]))
	if t, ok := format.Time(p["timestamp"]); ok {
		run.StartedAt = model.Time(t)
	}
	ro.metaExtra = o.extra(nil, "id", "originator", "cli_version", "timestamp")
}

// turnContext sets the model for the following agent steps. Only the first
// turn context's other settings are kept (in the run extra): later ones
// mostly repeat them.
func (ro *rollout) turnContext(p object) {
	m := model.Str(format.String(p.get("model")))
	if m != nil {
		ro.model = m
		if ro.b.sl.Run.AgentModelName == nil {
			ro.b.sl.Run.AgentModelName = m
		}
	}
	if !ro.sawTurnCtx {
		ro.sawTurnCtx = true
		ro.turnExtra = p.extra(nil, "model")
	}
}

// event handles event_msg lines. user_message, agent_message and
// agent_reasoning repeat response items and are only counted.
func (ro *rollout) event(n int64, at loc, p object) {
	typ := symbol(p.get("type"))
	ro.events[typ]++
	switch typ {
	case "task_started":
		ro.started = n
	case "task_complete":
		ro.done = n
	case "turn_aborted":
		ro.abort = n
	case "token_count":
		ro.tokenCount(at, p)
	}
}

var tokenInfoKeys = []string{"total_token_usage", "last_token_usage"}

// tokenCount attributes a model call's usage (last_token_usage) to the
// nearest preceding agent step that has none yet. A token_count whose
// cumulative total did not move repeats the previous one and is skipped.
func (ro *rollout) tokenCount(at loc, p object) {
	raw := p.get("info")
	if ro.lastInfo != nil && bytes.Equal(raw, ro.lastInfo) {
		return
	}
	var info [2][]byte // total_token_usage, last_token_usage; no map for two members
	if !format.Fields(raw, tokenInfoKeys, info[:]) {
		return
	}
	total := info[0]
	if ro.lastTotal != nil && bytes.Equal(total, ro.lastTotal) {
		ro.lastInfo = append(ro.lastInfo[:0], raw...)
		return
	}
	if !format.IsNull(total) {
		ro.lastTotal = bytes.Clone(total) // the line's buffer is reused
		ro.lastInfo = append(ro.lastInfo[:0], raw...)
	}
	var u format.Usage
	if p.m == nil { // scanned: the line was validated by the scanner
		u = format.UsageOfValid(info[1])
	} else {
		u = format.ParseUsage(info[1])
	}
	if u.Empty() {
		return
	}
	if ro.pendingAgent < 0 {
		ro.b.warnAt(at, "token_count follows no agent step without usage; per-call usage not attributed", "payload", "info", "last_token_usage")
		return
	}
	u.Apply(&ro.b.sl.Steps[ro.pendingAgent])
	ro.pendingAgent = -1
}

func (ro *rollout) finish(src format.Source) *model.Storyline {
	run := &ro.b.sl.Run
	if run.SessionID == "" {
		id := fileID(src)
		run.RunID, run.SessionID = id, id
	}
	if run.StartedAt == nil {
		run.StartedAt = ro.firstTS
	}
	run.EndedAt = ro.lastTS
	total := format.ParseUsage(ro.lastTotal)
	run.ReportedPromptTokens, run.ReportedCompletionTokens, run.ReportedCachedTokens = total.Prompt, total.Completion, total.Cached
	run.Status = ro.status(src.Live)
	// One merge, not one per member: each merge validated, split and
	// compacted the extra so far again (the session's instructions).
	add := make(map[string]jsonx.RawMessage, 3)
	if ro.metaExtra != nil {
		add["session_meta"] = jsonx.RawMessage(*ro.metaExtra)
	}
	if ro.turnExtra != nil {
		add["turn_context"] = jsonx.RawMessage(*ro.turnExtra)
	}
	if len(ro.events) > 0 {
		add["event_counts"], _ = jsonx.Marshal(ro.events)
	}
	run.Extra = format.MergeExtras(nil, add)
	return ro.b.finish(src.File)
}

// normalizeLegacyCodex maps the older TypeScript Codex rollout
// {session{timestamp, id, instructions}, items[]}; step ids are item indexes.
func normalizeLegacyCodex(top map[string]jsonx.RawMessage, src format.Source) *model.Storyline {
	b := newBuilder(layoutCodex, loc{})
	var session map[string]jsonx.RawMessage
	_ = jsonx.Unmarshal(top["session"], &session)
	id := format.String(session["id"])
	if id == "" {
		id = fileID(src)
	}
	run := &b.sl.Run
	run.RunID, run.SessionID = id, id
	if t, ok := format.Time(session["timestamp"]); ok {
		run.StartedAt = model.Time(t)
	}
	items, err := decodeMessages(top["items"])
	if err != nil {
		b.warn("items is not an array; ignored", "items")
	}
	b.items(items, loc{ptr: "/items"}, nil)
	run.Extra = format.Extra(top, "session", "items")
	if e := format.Extra(session, "id", "timestamp"); e != nil {
		run.Extra = format.MergeExtra(run.Extra, "session", jsonx.RawMessage(*e))
	}
	return b.finish(src.File)
}
