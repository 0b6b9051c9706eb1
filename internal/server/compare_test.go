package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/model"
)

// loader is a StorylineReader over Storylines in memory: Compare only loads.
type loader map[string]*model.Storyline

func (l loader) Load(_ context.Context, k engine.StorylineKey) (*model.Storyline, error) {
	if sl, ok := l[k.SessionID]; ok {
		return sl, nil
	}
	return nil, fmt.Errorf("%s: %w", k, catalog.ErrNotFound)
}
func (loader) Run(context.Context, engine.StorylineKey) (*model.Run, error) { panic("unused") }
func (loader) StepHeaders(context.Context, engine.StorylineKey, int64, int64) ([]engine.StepHeader, error) {
	panic("unused")
}
func (loader) StepBodies(context.Context, engine.StorylineKey, int64, int64, int) ([]engine.StepBody, error) {
	panic("unused")
}
func (loader) FindSteps(context.Context, engine.StorylineKey, string, int64, int64) ([]int64, error) {
	panic("unused")
}
func (loader) Events(context.Context, engine.StorylineKey) ([]model.Event, error) { panic("unused") }

// storylineOf builds a Storyline from a compact spec, one step per item:
// "user:text", "agent:text", or "agent>tool(args)=result" for a call.
func storylineOf(session string, items ...string) *model.Storyline {
	sl := &model.Storyline{Run: model.Run{RunID: session, SessionID: session, SourceFormat: "test", Status: model.StatusCompleted}}
	for i, it := range items {
		id := fmt.Sprint(i)
		st := model.Step{StepID: id, MessageKind: "text"}
		if role, call, ok := strings.Cut(it, ">"); ok {
			st.Source = role
			name, rest, _ := strings.Cut(call, "(")
			args, result, _ := strings.Cut(rest, ")=")
			tok := int64(10 * (i + 1))
			st.PromptTokens = &tok
			sl.ToolCalls = append(sl.ToolCalls, model.ToolCall{StepID: id, ToolCallID: "c" + id, FunctionName: name,
				Arguments: &args, ArgumentsValid: strings.HasPrefix(args, "{"), Result: &result, ResultStatus: "ok", ResultLink: "id"})
		} else {
			role, text, _ := strings.Cut(it, ":")
			st.Source, st.MessageValue = role, &text
		}
		sl.Steps = append(sl.Steps, st)
	}
	sl.Finalize("f.json")
	return sl
}

func TestCompareStorylines(t *testing.T) {
	rd := loader{
		"a": storylineOf("a", "system:be careful", "user:fix the test", `agent>bash({"cmd":"pytest","v":1})=FAILED`,
			`agent>bash({"cmd":"cat x.py"})=code`, "agent:done"),
		// B spells the first call's JSON differently (same value), reads
		// another file, edits, and ends with another message.
		"b": storylineOf("b", "system:be careful", "user:fix the test", `agent>bash({"v":1, "cmd":"pytest"})=FAILED`,
			`agent>bash({"cmd":"cat y.py"})=code`, `agent>edit({"path":"y.py"})=ok`, "assistant:fixed it"),
	}
	c, err := compareStorylines(context.Background(), rd, engine.StorylineKey{SessionID: "a"}, engine.StorylineKey{SessionID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Rows {
		s := r.Op
		if len(r.Differs) > 0 {
			s += "(" + strings.Join(r.Differs, ",") + ")"
		}
		got = append(got, s)
	}
	want := "same same same changed(arguments) b_only changed(message)"
	if strings.Join(got, " ") != want {
		t.Errorf("rows:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if c.FirstDivergence != 3 {
		t.Errorf("first divergence %d, want 3", c.FirstDivergence)
	}
	if c.Count[opSame] != 3 || c.Count[opChanged] != 2 || c.Count[opBOnly] != 1 || c.Count[opAOnly] != 0 {
		t.Errorf("counts %v", c.Count)
	}
	d := delta(c.A, c.B)
	if d["step_count"] != int64(1) || d["tool_call_count"] != int64(1) || d["prompt_tokens"] != int64(50) || d["same_status"] != true {
		t.Errorf("delta %v", d)
	}
	if _, err := compareStorylines(context.Background(), rd, engine.StorylineKey{SessionID: "a"}, engine.StorylineKey{SessionID: "nope"}); err == nil {
		t.Error("comparing with a missing Storyline did not fail")
	}
}
