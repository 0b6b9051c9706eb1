package tau

import (
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// utterance is a participant's speech being built from consecutive ticks.
type utterance struct {
	step       int // index in the Storyline's steps; -1: not speaking
	text       strings.Builder
	start, end jsonx.RawMessage // tick ids
}

// ticks maps a full-duplex (voice) simulation, which τ² stores as ticks of
// a fixed duration instead of messages: each tick holds the chunk the agent
// and the user produced in it (most are silence), and the tool calls and
// results of that tick. A participant's run of consecutive ticks whose
// chunk contains speech is one step (its text the chunks' text and, for the
// user, the transcript, joined as they came); silence makes no step. Tool
// calls belong to the participant's current utterance (a step of their own
// when it is silent), and each tool result is a tool step.
func (b *builder) ticks(ticks [][]byte, ptr string) {
	parts := [2]struct {
		source, name string
		u            utterance
	}{{source: model.SourceAgent, name: "agent"}, {source: model.SourceUser, name: "user"}}
	for i := range parts {
		parts[i].u.step = -1
	}
	for i, e := range ticks {
		tick := format.SplitObject(e)
		if tick == nil {
			b.warn(ptr+format.Pointer(i), "tick is not an object; skipped")
			continue
		}
		tickID := string(format.CompactJSON(tick["tick_id"]))
		if format.IsNull(tick["tick_id"]) {
			tickID = strconv.Itoa(i)
		}
		for p := range parts {
			part := &parts[p]
			u := &part.u
			chunk := format.SplitObject(format.AsObject(tick[part.name+"_chunk"]))
			text, _, hasText := format.Content(chunk["content"])
			if part.name == "user" {
				if t, ok := format.AsString(tick["user_transcript"]); ok && t != "" {
					text, hasText = text+t, true
				}
			}
			speech, known := format.Bool(chunk["contains_speech"])
			speaking := chunk != nil && (hasText && text != "" || !known || speech)
			switch {
			case speaking && u.step < 0:
				st := model.Step{StepID: "tick-" + tickID + "-" + part.name, Source: part.source}
				if t, ok := format.Time(chunk["timestamp"]); ok {
					st.Timestamp = model.Time(t)
				} else if t, ok := format.Time(tick["timestamp"]); ok {
					st.Timestamp = model.Time(t)
				}
				if part.source == model.SourceAgent {
					st.ModelName = b.model
				}
				u.step, u.start = len(b.sl.Steps), tick["tick_id"]
				u.text.Reset()
				b.sl.Steps = append(b.sl.Steps, st)
				fallthrough
			case speaking:
				u.text.WriteString(text)
				u.end = tick["tick_id"]
			default:
				b.close(u)
			}
			if calls, ok := format.SplitArray(tick[part.name+"_tool_calls"]); ok && len(calls) > 0 {
				stepID := "tick-" + tickID + "-" + part.name + "-calls"
				if u.step >= 0 {
					stepID = b.sl.Steps[u.step].StepID
				} else {
					st := model.Step{StepID: stepID, Source: part.source, MessageKind: "tool_calls_only"}
					if t, ok := format.Time(tick["timestamp"]); ok {
						st.Timestamp = model.Time(t)
					}
					b.sl.Steps = append(b.sl.Steps, st)
				}
				b.calls(stepID, tick[part.name+"_tool_calls"], ptr+format.Pointer(i))
			}
			results, _ := format.SplitArray(tick[part.name+"_tool_results"])
			for j, r := range results {
				if m := format.SplitObject(r); m != nil {
					b.toolResult(m, ptr+format.Pointer(i, part.name+"_tool_results", j), "tick-"+tickID+"-"+part.name+"-result-"+strconv.Itoa(j))
				}
			}
		}
	}
	for p := range parts {
		b.close(&parts[p].u)
	}
}

// close ends an utterance: its step gets the text spoken (an utterance
// recorded without text is `audio`) and the ticks it spans.
func (b *builder) close(u *utterance) {
	if u.step < 0 {
		return
	}
	st := &b.sl.Steps[u.step]
	st.MessageKind = "audio"
	if u.text.Len() > 0 {
		st.MessageValue, st.MessageKind = model.StrAlways(u.text.String()), format.KindText
	}
	st.Extra = format.Extra(withoutNull(map[string]jsonx.RawMessage{"tick_start": u.start, "tick_end": u.end}))
	u.step = -1
}
