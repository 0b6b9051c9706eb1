package openhands

import (
	"context"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// LayoutConversation is a V1 SDK conversation persisted as a directory:
// base_state.json (the ConversationState: id, agent and its LLM, execution
// status, stats) and one events/event-<NNNNN>-<id>.json per event. The
// catalog recognizes the directory by those names and reads it as one
// source (docs/formats.md, OpenHands, "V1 persisted conversations").
const LayoutConversation = "conversation"

// EventFile is one event file of a persisted conversation: its name (for
// warnings) and its bytes.
type EventFile struct {
	Name string
	Data []byte
}

// IsConversationState reports whether data is a V1 ConversationState as
// base_state.json holds it: an object with an id and an agent whose llm
// names its model. Anything else named base_state.json is not one.
func IsConversationState(data []byte) bool {
	if !jsonx.Valid(data) {
		return false
	}
	st := format.SplitObject(data)
	llm := format.SplitObject(objectOf(format.SplitObject(objectOf(st["agent"]))["llm"]))
	_, hasID := st["id"]
	return hasID && llm != nil && format.ValidString(llm["model"]) != ""
}

// NormalizeConversation maps a persisted conversation to one Storyline: the
// events, which next yields in order (ok false after the last), are read
// as the V1 event stream is; base_state.json gives the conversation id, the
// agent's model and settings, the final execution status and the
// accumulated usage.
func NormalizeConversation(ctx context.Context, src format.Source, base []byte, next func() (EventFile, bool, error), emit format.Emit) error {
	if !IsConversationState(base) {
		return format.Errorf(src, 0, "", "openhands: base_state.json is not a conversation state (an object with id and agent.llm.model)")
	}
	state := format.SplitObject(base)
	b := newBuilder(src, LayoutConversation, loc{})
	b.identity(format.ValidString(state["id"]), fileID(src))
	agent := format.SplitObject(objectOf(state["agent"]))
	llm := format.SplitObject(objectOf(agent["llm"]))
	if m := format.ValidString(llm["model"]); m != "" {
		b.sl.Run.AgentModelName = model.Str(m)
	}
	var names []string
	at := func(i int, parts ...any) []any { return append([]any{"events", names[i]}, parts...) }
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev, ok, err := next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		names = append(names, ev.Name)
		var obj map[string]jsonx.RawMessage
		if jsonx.Valid(ev.Data) {
			obj = format.SplitObject(ev.Data)
		}
		if obj == nil {
			b.warn("event file is not a JSON object; skipped", at(i)...)
			continue
		}
		b.event(i, obj, at)
	}
	// What the state says last wins over what state-update events said.
	if b.v1.state == nil {
		b.v1.state = map[string]jsonx.RawMessage{}
	}
	status := state["execution_status"]
	if status == nil {
		status = state["agent_status"] // the state schema before execution_status
	}
	if status != nil {
		b.v1.state["execution_status"] = status
	}
	if stats := format.SplitObject(objectOf(state["stats"])); stats != nil {
		usage := stats["usage_to_metrics"]
		if usage == nil {
			usage = stats["service_to_metrics"] // the older name
		}
		if usage != nil && !format.EmptyJSON(usage) { // nothing recorded: the totals stay unknown
			b.v1.state["stats"] = jsonx.RawMessage(`{"usage_to_metrics":` + string(format.CompactJSON(usage)) + `}`)
		}
	}
	b.sl.Run.Extra = format.MergeExtra(b.sl.Run.Extra, "settings", settings(state, agent, llm))
	return emit(b.finish())
}

// settings are the conversation's settings worth a query: the agent's LLM
// parameters (never its credentials), the iteration limit, the
// confirmation policy and the working directory.
func settings(state, agent, llm map[string]jsonx.RawMessage) jsonx.RawMessage {
	out := map[string]jsonx.RawMessage{}
	keep := func(dst string, v jsonx.RawMessage) {
		if v != nil && !format.IsNull(v) {
			out[dst] = v
		}
	}
	lm := map[string]jsonx.RawMessage{}
	for _, k := range []string{"model", "temperature", "top_p", "top_k", "max_input_tokens", "max_output_tokens", "reasoning_effort", "native_tool_calling", "usage_id", "service_id"} {
		if v, ok := llm[k]; ok && !format.IsNull(v) {
			lm[k] = v
		}
	}
	if len(lm) > 0 {
		keep("llm", jsonx.RawMessage(*format.Extra(lm)))
	}
	keep("agent_kind", agent["kind"])
	keep("max_iterations", state["max_iterations"])
	keep("confirmation_policy", format.SplitObject(objectOf(state["confirmation_policy"]))["kind"])
	keep("working_dir", state["working_dir"])
	keep("working_dir", format.SplitObject(objectOf(state["workspace"]))["working_dir"])
	if len(out) == 0 {
		return jsonx.RawMessage("{}")
	}
	return jsonx.RawMessage(*format.Extra(out))
}

// objectOf returns raw when it is a JSON object, else nil.
func objectOf(raw jsonx.RawMessage) jsonx.RawMessage {
	raw = format.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return raw
}
