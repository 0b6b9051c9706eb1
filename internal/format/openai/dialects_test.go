package openai

import (
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Hand-made inputs for the dialects that carry tool use inside message
// content, each in the shape its producer writes (see docs/formats.md,
// openai section).
const (
	// Hermes function calling: the schema in <tools> (one JSON object per
	// line, as chat templates write it), two calls and a malformed one
	// (a Python dict, as models emit) in one turn, results in a tool turn
	// named out of order, and a result that comes back as a user turn.
	hermesJSONL = `{"messages":[` +
		`{"role":"system","content":"You are a function calling AI model. <tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}\n{\"type\": \"function\", \"function\": {\"name\": \"get_time\"}}\n</tools> Call them in <tool_call></tool_call> tags."},` +
		`{"role":"user","content":"Weather and time in Paris?"},` +
		`{"role":"assistant","content":"<think>two calls</think>Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>\n<tool_call>\n{'name': 'bad', 'arguments': {}}\n</tool_call>"},` +
		`{"role":"tool","content":"<tool_response>\n{\"name\": \"get_time\", \"content\": \"10:00\"}\n</tool_response>\n<tool_response>\n{\"name\": \"get_weather\", \"content\": {\"temp\": 20}}\n</tool_response>"},` +
		`{"role":"assistant","content":"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>"},` +
		`{"role":"user","content":"<tool_response>\nsunny\n</tool_response>"},` +
		`{"role":"assistant","content":"20C in Paris at 10:00, sunny in Lyon."}]}` + "\n"

	// LLaMA-Factory content parts {type, value}: text, an image, reasoning,
	// a tool_call part, a malformed one, and the tool turn that answers.
	llamaFactoryParts = `{"messages":[` +
		`{"role":"system","content":[{"type":"text","value":"Use tools."}],"loss_weight":0.0},` +
		`{"role":"user","content":[{"type":"text","value":"Add 2 and 3. Then the cat."},{"type":"image_url","value":"cat.png"}],"loss_weight":0.0},` +
		`{"role":"assistant","content":[{"type":"reasoning","value":"Need add."},{"type":"tool_call","value":"{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}"},{"type":"tool_call","value":"add(2, 3)"}],"loss_weight":1.0},` +
		`{"role":"tool","content":[{"type":"text","value":"5"}],"loss_weight":0.0},` +
		`{"role":"assistant","content":[{"type":"text","value":"2 + 3 = 5."}],"loss_weight":1.0}],` +
		`"tools":"[{\"name\": \"add\"}]"}` + "\n"

	// ShareGPT function_call turn holding a list of calls (LLaMA-Factory
	// accepts one call or a list), answered by two observations.
	shareGPTCallList = `[{"conversations":[{"from":"human","value":"both"},` +
		`{"from":"function_call","value":"[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": 1}, \"id_hint\": 7}]"},` +
		`{"from":"observation","value":"A"},{"from":"observation","value":"B"},{"from":"gpt","value":"done"}]}]`

	// A harbor trace row whose agent step made two Hermes calls: the export
	// writes the step's observation (both results joined) as one user turn.
	harborTwoCalls = `[{"conversations":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":"<tool_call>\n{\"name\": \"ls\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"pwd\", \"arguments\": {}}\n</tool_call>"},` +
		`{"role":"user","content":"a.txt\n/app"},{"role":"assistant","content":"done"}],` +
		`"agent":"openhands","model":"gpt-4o","episode":"episode-1","run_id":"r1","trial_name":"t1","result":"AgentTimeoutError"}]`
)

// call is a tool call in the terms the dialect tests check.
type call struct {
	step, name, args, status, resultStep, result, link string
}

func calls(sl *model.Storyline) []call {
	out := make([]call, len(sl.ToolCalls))
	for i, tc := range sl.ToolCalls {
		out[i] = call{tc.StepID, tc.FunctionName, model.Deref(tc.Arguments), tc.ResultStatus,
			model.Deref(tc.ResultStepID), model.Deref(tc.Result), tc.ResultLink}
	}
	return out
}

func wantCalls(t *testing.T, sl *model.Storyline, want []call) {
	t.Helper()
	got := calls(sl)
	if len(got) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d =\n %+v\nwant\n %+v", i, got[i], want[i])
		}
	}
}

func TestHermesToolCallsInContent(t *testing.T) {
	_, sls := mustNormalize(t, "hermes.jsonl", []byte(hermesJSONL))
	sl := sls[0]
	wantCalls(t, sl, []call{
		{"2", "get_weather", `{"city":"Paris"}`, "ok", "3", `{"name": "get_weather", "content": {"temp": 20}}`, model.LinkByName},
		{"2", "get_time", `{"tz":"CET"}`, "ok", "3", `{"name": "get_time", "content": "10:00"}`, model.LinkByName},
		{"4", "get_weather", `{"city":"Lyon"}`, "ok", "5", "sunny", model.LinkByOrder},
	})
	if got := sourceLetters(sl); got != "suatata" {
		t.Errorf("sources %q", got)
	}
	st := sl.Steps[2]
	if model.Deref(st.MessageValue) != "Checking.\n<tool_call>\n{'name': 'bad', 'arguments': {}}\n</tool_call>" || model.Deref(st.Reasoning) != "two calls" {
		t.Errorf("calling step keeps the malformed block only: %q, reasoning %q", model.Deref(st.MessageValue), model.Deref(st.Reasoning))
	}
	if st := sl.Steps[4]; st.MessageKind != kindToolCallsOnly || st.MessageValue != nil {
		t.Errorf("a turn of calls only: %+v", st)
	}
	if e := model.Deref(sl.Run.Extra); e != `{"tool_definitions":[{"type":"function","function":{"name":"get_weather"}},{"type":"function","function":{"name":"get_time"}}]}` {
		t.Errorf("run extra: %s", e)
	}
	if len(sl.Warnings) != 1 || !strings.Contains(sl.Warnings[0].String(), "hermes.jsonl:1#/messages/2/content: 1 <tool_call> block(s) are not {name, arguments} JSON; kept as text") {
		t.Errorf("warnings: %v", sl.Warnings)
	}
	if sl.Run.ToolCallCount != 3 {
		t.Errorf("tool_call_count %d", sl.Run.ToolCallCount)
	}
}

// TestHermesTextIsNotParsedTwice: a message that carries structured
// tool_calls keeps <tool_call> text as text (one call, never two), and a
// tool message naming its call id links by id whatever its text holds.
func TestHermesTextIsNotParsedTwice(t *testing.T) {
	const chat = `{"messages":[{"role":"assistant","content":"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",` +
		`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"<tool_response>\nok\n</tool_response>"}]}` + "\n"
	_, sls := mustNormalize(t, "both.jsonl", []byte(chat))
	wantCalls(t, sls[0], []call{{"0", "f", "{}", "ok", "1", "<tool_response>\nok\n</tool_response>", model.LinkByID}})
	if v := model.Deref(sls[0].Steps[0].MessageValue); !strings.HasPrefix(v, "<tool_call>") {
		t.Errorf("text changed: %q", v)
	}
}

func TestLLaMAFactoryContentParts(t *testing.T) {
	_, sls := mustNormalize(t, "v1.jsonl", []byte(llamaFactoryParts))
	sl := sls[0]
	wantCalls(t, sl, []call{{"2", "add", `{"a":2,"b":3}`, "ok", "3", "5", model.LinkByOrder}})
	steps := sl.Steps
	checks := []struct {
		what      string
		got, want any
	}{
		{"sources", sourceLetters(sl), "suata"},
		{"system text", model.Deref(steps[0].MessageValue), "Use tools."},
		{"loss_weight extra", model.Deref(steps[0].Extra), `{"loss_weight":0.0}`},
		{"image kind", steps[1].MessageKind, format.KindMultimodal},
		{"image parts", model.Deref(steps[1].MessageValue), `[{"type":"text","value":"Add 2 and 3. Then the cat."},{"type":"image_url","value":"cat.png"}]`},
		{"reasoning", model.Deref(steps[2].Reasoning), "Need add."},
		{"malformed call kept as text", model.Deref(steps[2].MessageValue), "add(2, 3)"},
		{"tool text", model.Deref(steps[3].MessageValue), "5"},
		{"answer", model.Deref(steps[4].MessageValue), "2 + 3 = 5."},
		{"tools in run extra", model.Deref(sl.Run.Extra), `{"tools":"[{\"name\": \"add\"}]"}`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if len(sl.Warnings) != 1 || sl.Warnings[0].Pointer != "/messages/2/content/2" || !strings.Contains(sl.Warnings[0].Message, "tool_call part is not {name, arguments} JSON") {
		t.Errorf("warnings: %v", sl.Warnings)
	}
}

func TestShareGPTFunctionCallList(t *testing.T) {
	_, sls := mustNormalize(t, "list.json", []byte(shareGPTCallList))
	wantCalls(t, sls[0], []call{
		{"1", "a", "{}", "ok", "2", "A", model.LinkByOrder},
		{"1", "b", `{"x":1}`, "ok", "3", "B", model.LinkByOrder},
	})
	if e := model.Deref(sls[0].ToolCalls[1].Extra); e != `{"extra":{"id_hint":7}}` {
		t.Errorf("call extra: %s", e)
	}
	if len(sls[0].Warnings) != 0 {
		t.Errorf("warnings: %v", sls[0].Warnings)
	}
}

// TestHarborPlainObservation: in a harbor trace row, the user turn right
// after an assistant turn's <tool_call> blocks is that step's observation;
// with two calls each gets the whole text (result_link ambiguous). The
// row's result names the exception the trial raised.
func TestHarborPlainObservation(t *testing.T) {
	_, sls := mustNormalize(t, "traces.json", []byte(harborTwoCalls))
	sl := sls[0]
	wantCalls(t, sl, []call{
		{"1", "ls", "{}", "ok", "2", "a.txt\n/app", model.LinkAmbiguous},
		{"1", "pwd", "{}", "ok", "2", "a.txt\n/app", model.LinkAmbiguous},
	})
	if got := sourceLetters(sl); got != "uata" {
		t.Errorf("sources %q", got)
	}
	if sl.Run.Reward != nil || model.Deref(sl.Run.Scores) != `{"exception_type":"AgentTimeoutError"}` {
		t.Errorf("reward %v scores %v", sl.Run.Reward, model.Deref(sl.Run.Scores))
	}
	// Outside harbor rows a plain user turn stays a user turn.
	_, sls = mustNormalize(t, "chat.jsonl", []byte(`{"messages":[{"role":"assistant","content":"<tool_call>\n{\"name\": \"ls\", \"arguments\": {}}\n</tool_call>"},{"role":"user","content":"thanks"}]}`+"\n"))
	if got := sourceLetters(sls[0]); got != "au" || sls[0].ToolCalls[0].ResultStatus != model.ResultMissing {
		t.Errorf("chat: sources %q, call %+v", got, sls[0].ToolCalls[0])
	}
}
