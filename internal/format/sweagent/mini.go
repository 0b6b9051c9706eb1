package sweagent

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// mini-swe-agent parses one action per model turn with a regular
// expression over the assistant text (re.findall with re.DOTALL): exactly
// one match runs, anything else is a FormatError and the agent answers with
// its format-error message. Versions before 1.12 required the newline right
// after "```bash"; 1.17 made the expression configurable
// (info.config.agent.action_regex).
var (
	actionRegexp    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```bash\\s*\\n(.*?)\\n```") })
	oldActionRegexp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```bash\\n(.*?)\\n```") })
)

// returnCode reads the <returncode>N</returncode> that mini-swe-agent's
// shipped observation templates put first.
var returnCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*<returncode>\s*(-?\d+)\s*</returncode>`) })

// miniBuilder adds the state of a mini-swe-agent conversation.
type miniBuilder struct {
	*builder
	re *regexp.Regexp
	// rejected: the latest model turn was a format error, so the next user
	// message is the agent's format-error feedback.
	rejected      bool
	seenAssistant bool
}

// normalizeMini maps {info, messages, trajectory_format, instance_id}.
func normalizeMini(top map[string]jsonx.RawMessage, src format.Source, layout string) *model.Storyline {
	b := newBuilder(src, layout)
	r := &b.sl.Run
	id := format.String(top["instance_id"])
	if id == "" {
		id = fileID(src)
	}
	r.RunID, r.SessionID = id, id
	info := format.SplitObject(top["info"])
	cfg := format.SplitObject(info["config"])
	version := format.String(info["mini_version"])
	// 1.17 configures the expression on the agent, 2.x on its text-based models.
	where := "agent"
	expr := format.SplitObject(cfg[where])["action_regex"]
	if format.String(expr) == "" {
		where = "model"
		expr = format.SplitObject(cfg[where])["action_regex"]
	}
	mb := &miniBuilder{builder: b, re: b.actionRegexp(expr, version, "info", "config", where, "action_regex")}

	keep := format.Without(top, "messages", "instance_id", "info")
	elems, _ := format.SplitArray(top["messages"])
	if !b.eachObject(top["messages"], "messages", "message", func(i int, m map[string]jsonx.RawMessage) {
		mb.message(i, m, i == len(elems)-1)
	}) && !format.IsNull(top["messages"]) {
		keep["messages"] = top["messages"]
	}

	b.outcome(info["exit_status"], info["submission"], nil)
	r.AgentVersion = model.Str(version)
	r.AgentModelName = model.Str(format.String(format.SplitObject(cfg["model"])["model_name"]))
	rest := format.Without(info, "exit_status", "submission", "mini_version")
	if stats := format.SplitObject(info["model_stats"]); stats != nil {
		if c, ok := format.Float(stats["instance_cost"]); ok {
			r.ReportedCostUSD = model.Float(c)
		}
		if e := format.Extra(stats, "instance_cost"); e != nil {
			rest["model_stats"] = jsonx.RawMessage(*e)
		} else {
			delete(rest, "model_stats")
		}
	}
	if e := format.Extra(rest); e != nil {
		keep["info"] = jsonx.RawMessage(*e)
	}
	r.Extra = format.StripExtra(format.Extra(keep))
	return b.finish()
}

// actionRegexp is the expression the file's agent used: its configured
// action_regex when Go's regexp can compile it (a Python-only construct
// falls back to the default with a warning), else the default of its
// version.
func (b *builder) actionRegexp(configured jsonx.RawMessage, version string, ptr ...any) *regexp.Regexp {
	if expr := format.String(configured); expr != "" {
		re, err := regexp.Compile("(?s)" + expr)
		if err == nil {
			return re
		}
		b.warn("action_regex cannot be used here ("+err.Error()+"); the default expression parses the actions", ptr...)
	}
	parts := strings.SplitN(version, ".", 3)
	if len(parts) >= 2 {
		major, e1 := strconv.Atoi(parts[0])
		minor, e2 := strconv.Atoi(parts[1])
		if e1 == nil && e2 == nil && major == 1 && minor < 12 {
			return oldActionRegexp()
		}
	}
	return actionRegexp()
}

// findActions returns the actions of a model turn, as re.findall would:
// the first group of each match (the whole match when there is no group),
// trimmed.
func findActions(re *regexp.Regexp, content string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(content, -1) {
		a := m[0]
		if len(m) > 1 {
			a = m[1]
		}
		out = append(out, strings.TrimSpace(a))
	}
	return out
}

// message maps one message (docs/formats.md, mini-swe-agent). m is owned
// by the caller's decoding and is trimmed in place to what goes to extra.
func (mb *miniBuilder) message(i int, m map[string]jsonx.RawMessage, last bool) {
	id := strconv.Itoa(i)
	role := format.String(m["role"])
	st := model.Step{StepID: id}
	st.MessageValue, st.MessageKind = format.ContentText(m["content"])
	delete(m, "content")
	ext := format.SplitObject(m["extra"])
	switch role {
	case "system":
		st.Source = model.SourceSystem
	case "assistant":
		st.Source = model.SourceAgent
		mb.seenAssistant, mb.rejected = true, false
		mb.newTurn()
		ext = mb.metrics(&st, ext)
		actions, calls := mb.turnCalls(id, m, ext, model.Deref(st.MessageValue))
		delete(ext, "actions") // they are the calls
		if calls == 0 {
			st.MessageKind = kindFormatError
			mb.rejected = true
			mb.warn("the model gave "+strconv.Itoa(actions)+" actions (bash blocks) where mini-swe-agent needs exactly one; the agent rejected the turn and nothing ran", "messages", i, "content")
		} else if _, ok := m["tool_calls"]; ok {
			delete(m, "tool_calls")
		}
	case "user", "tool":
		switch {
		case format.String(ext["interrupt_type"]) == "FormatError":
			// 1.1 keeps no assistant message for a rejected turn: this
			// feedback carries the model's response in its extra.
			st.Source, st.MessageKind = model.SourceSystem, kindFormatError
			ext = mb.metrics(&st, ext) // the rejected response was billed
			mb.warn("the model's output was rejected by mini-swe-agent (format error); nothing ran", "messages", i)
		case mb.answer(id, m, ext, st.MessageValue):
			st.Source = model.SourceTool
			delete(m, "tool_call_id")
			delete(ext, "returncode")
			if format.IsNull(ext["exception_info"]) {
				delete(ext, "exception_info")
			}
			if raw, ok := ext["raw_output"]; ok && strings.Contains(model.Deref(st.MessageValue), format.String(raw)) {
				delete(ext, "raw_output")
			}
		case mb.rejected:
			st.Source = model.SourceSystem // the agent's format-error feedback
			mb.rejected = false
		case last && mb.seenAssistant:
			st.Source, st.MessageKind = model.SourceSystem, kindExit // why the agent stopped (limits)
		default:
			st.Source = model.SourceUser
		}
		if t, ok := format.Time(ext["timestamp"]); ok {
			st.Timestamp = model.Time(t)
			delete(ext, "timestamp")
		}
	case "exit":
		// 1.1: why the agent stopped; a submission is the output of the
		// command that submitted, so it answers that call.
		st.Source, st.MessageKind = model.SourceSystem, kindExit
		mb.answerNext(st.MessageValue, model.ResultOK, id)
		if format.String(ext["submission"]) == model.Deref(st.MessageValue) {
			delete(ext, "submission") // the message text
		}
	default:
		st.Source = model.SourceSystem
		mb.warn("unknown role "+strconv.Quote(role)+"; kept as a system step", "messages", i, "role")
	}
	switch {
	case role == "system", role == "assistant", role == "tool", role == "user" && st.Source != model.SourceSystem:
		delete(m, "role") // implied by the step source
	}
	if t, ok := format.Time(m["timestamp"]); ok {
		st.Timestamp = model.Time(t)
		delete(m, "timestamp")
	}
	if ext != nil {
		if e := format.Extra(ext); e != nil {
			m["extra"] = jsonx.RawMessage(*e)
		} else {
			delete(m, "extra")
		}
	}
	st.Extra = format.StripExtra(format.Extra(m))
	mb.addStep(st)
}

// turnCalls records the calls of a model turn: its tool_calls (1.1 with
// tool calling), else 1.1's recorded actions (extra.actions), else the
// actions parsed from the text, which run only when there is exactly one.
// It returns the number of actions found and of calls recorded.
func (mb *miniBuilder) turnCalls(id string, m, ext map[string]jsonx.RawMessage, content string) (actions, calls int) {
	toolCalls, _ := format.SplitArray(m["tool_calls"])
	if len(toolCalls) > 0 {
		for k, raw := range toolCalls {
			c := format.SplitObject(raw)
			fn := format.SplitObject(c["function"])
			tc := model.ToolCall{StepID: id, ToolCallID: format.String(c["id"]), FunctionName: format.String(fn["name"])}
			if tc.ToolCallID == "" {
				tc.ToolCallID = "action-" + id + "-" + strconv.Itoa(k)
			}
			tc.Arguments, tc.ArgumentsValid = format.ArgumentsText(fn["arguments"])
			x := format.Without(c, "id", "function")
			if format.String(c["type"]) == "function" {
				delete(x, "type")
			}
			tc.Extra = format.Extra(x)
			mb.addCall(tc)
		}
		return len(toolCalls), len(toolCalls)
	}
	var commands []string
	if recorded, ok := format.SplitArray(ext["actions"]); ok {
		for _, a := range recorded {
			commands = append(commands, strings.TrimSpace(format.String(format.SplitObject(a)["command"])))
		}
	} else if commands = findActions(mb.re, content); len(commands) != 1 {
		return len(commands), 0
	}
	for k, a := range commands {
		callID := "action-" + id
		if len(commands) > 1 {
			callID += "-" + strconv.Itoa(k)
		}
		mb.addCall(commandCall(id, callID, a))
	}
	return len(commands), len(commands)
}

// metrics maps the turn's model response (timestamp, model, usage, cost)
// and returns what is left of extra: extra.response.choices repeats the
// message and is dropped.
func (mb *miniBuilder) metrics(st *model.Step, ext map[string]jsonx.RawMessage) map[string]jsonx.RawMessage {
	if ext == nil {
		return nil
	}
	resp := format.SplitObject(ext["response"])
	if t, ok := format.Time(ext["timestamp"]); ok {
		st.Timestamp = model.Time(t)
	} else if t, ok := format.Time(resp["created"]); ok {
		st.Timestamp = model.Time(t)
	}
	st.ModelName = model.Str(format.String(resp["model"]))
	format.ParseUsage(resp["usage"]).Apply(st)
	if c, ok := format.Float(ext["cost"]); ok {
		st.CostUSD = model.Float(c)
	}
	rest := format.Without(ext, "cost", "timestamp")
	if resp != nil {
		if r := format.Extra(resp, "choices", "usage", "model", "created"); r != nil {
			rest["response"] = jsonx.RawMessage(*r)
		} else {
			delete(rest, "response")
		}
	}
	return rest
}

// answer links an observation message to the call it answers: by
// tool_call_id, else the oldest waiting call of the last turn. Its status is
// error for a non-zero return code (1.1's extra.returncode, or the
// <returncode> the observation templates write) or a recorded exception.
func (mb *miniBuilder) answer(id string, m, ext map[string]jsonx.RawMessage, result *string) bool {
	status := model.ResultOK
	code, ok := format.Int(ext["returncode"])
	if !ok {
		if g := returnCode().FindStringSubmatch(model.Deref(result)); g != nil {
			code, _ = strconv.ParseInt(g[1], 10, 64)
		}
	}
	if code != 0 || format.String(ext["exception_info"]) != "" {
		status = model.ResultError
	}
	if cid := format.String(m["tool_call_id"]); cid != "" && mb.answerID(cid, result, status, id) {
		return true
	}
	return mb.answerNext(result, status, id)
}
