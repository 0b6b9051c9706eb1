package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Hand-made inputs, one per layout and deviation of OPENAI.md.
const (
	// Cookbook drone_training style: every call id is "call_id", content
	// absent with tool_calls, double-encoded and invalid arguments, a call
	// without a result.
	droneJSONL = `{"messages":[{"role":"system","content":"You are a drone."},{"role":"user","content":"Take off"},{"role":"assistant","tool_calls":[{"id":"call_id","type":"function","function":{"name":"takeoff","arguments":"{\"altitude\": 100}"}}]},{"role":"tool","tool_call_id":"call_id","content":"ok"},{"role":"assistant","tool_calls":[{"id":"call_id","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"call_id","type":"function","function":{"name":"b","arguments":"\"{\\\"location\\\": \\\"x\\\"}\""}}]},{"role":"tool","tool_call_id":"call_id","content":"A"},{"role":"tool","tool_call_id":"call_id","content":"B"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_id","type":"function","function":{"name":"land","arguments":"{"}}]}],"tools":[{"type":"function","function":{"name":"takeoff"}}],"parallel_tool_calls":true}
{"messages":[{"role":"developer","content":[{"type":"text","text":"Be brief."}],"name":"ops"},{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]},{"role":"assistant","content":"<think>hmm</think>Answer","weight":0,"reasoning_content":"rc","usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":2}}},{"role":"assistant","content":null,"refusal":"I can't"},{"role":"function","name":"old","content":"orphan"}],"model":"gpt-4o","id":"conv-9"}
`
	b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggiVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggiVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

	chatArray = `[{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}],"images":["a.png"]},{"messages":[{"role":"user","content":"<image>what?"}]}]`

	// miniSWE and sweAgentTraj belong to internal/format/sweagent: this
	// adapter must not claim them.
	miniSWE = `{"info":{"exit_status":"Submitted","submission":"diff","model_stats":{"instance_cost":0.12,"api_calls":2},"mini_version":"1.9.0","config":{"model":{"model_name":"anthropic/claude"}}},
 "messages":[{"role":"system","content":"sys"},{"role":"user","content":"task"},
  {"role":"assistant","content":"THOUGHT: list\n` + "```bash\\nls\\n```" + `","extra":{"response":{"id":"r1","model":"claude-x","choices":[{"message":{}}],"usage":{"prompt_tokens":100,"completion_tokens":20}},"cost":0.05,"timestamp":1735689600.5}},
  {"role":"user","content":"output"},{"role":"exit","content":"diff","extra":{"exit_status":"Submitted","submission":"diff"}}],
 "trajectory_format":"mini-swe-agent-1.1","instance_id":"astropy__astropy-12907"}`

	openAIChatExport = `{"format":"openai-chat","model":"claude-opus","task_id":"TASK-1","source_events":5,"message_count":4,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"<thinking>plan</thinking>Let me look."},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"Read","arguments":"{\"p\":1}"}}]},{"role":"tool","tool_call_id":"t1","content":"data"}]}`

	sweAgentTraj = `{"trajectory":[{"action":"ls","observation":"x"}],"history":[{"role":"system","content":"s","agent":"main","message_type":"system_prompt"},{"role":"assistant","content":"t","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}],"message_type":"action"},{"role":"tool","content":"x","tool_call_ids":["c1"],"message_type":"observation"}],"info":{"exit_status":"submitted (exit_cost)","swe_agent_version":"1.0.1","model_stats":{"instance_cost":1.5,"tokens_sent":1000,"tokens_received":50}},"replay_config":"{}"}`

	shareGPT = `[{"conversations":[{"from":"human","value":"weather?"},{"from":"function_call","value":"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"},{"from":"observation","value":"{\"temp\": 20}"},{"from":"gpt","value":"20C"}],"tools":"[{\"name\":\"get_weather\"}]","system":"be nice"}]`

	messageLines = `{"role":"system","content":"s","session_id":"a"}
{"role":"user","content":"u","session_id":"a"}
{"role":"assistant","content":"x","session_id":"a"}
{"role":"user","content":"u2","session_id":"b"}
{"role":"system","content":"s2","session_id":"b"}
{"role":"user","content":"u3","session_id":"a"}
`
	batchInput = `{"custom_id":"request-1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"system","content":"S"},{"role":"user","content":"Q1"}],"max_tokens":100}}
{"custom_id":"request-2","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"system","content":"S"},{"role":"user","content":"Q2"}]}}
`
	batchOutput = `{"id":"batch_req_1","custom_id":"request-1","response":{"status_code":200,"request_id":"r","body":{"id":"chatcmpl-1","object":"chat.completion","created":1711652795,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"A1"},"finish_reason":"stop"}],"usage":{"prompt_tokens":22,"completion_tokens":2,"total_tokens":24}}},"error":null}
{"id":"batch_req_2","custom_id":"request-2","response":{"status_code":400,"body":{"error":{"message":"bad"}}},"error":null}
`
	proxyLog = `{"request":{"model":"m","messages":[{"role":"user","content":"Q"}]},"response":{"model":"m","choices":[{"message":{"role":"assistant","content":"A"},"finish_reason":"stop"}]}}
{"request":{"model":"m","messages":[{"role":"user","content":"Q"},{"role":"assistant","content":"A"},{"role":"user","content":"Q2"}]},"response":{"model":"m","choices":[{"message":{"role":"assistant","content":"A2","refusal":null},"finish_reason":"length"}]}}
`
	responseObject = `{"id":"resp_1","object":"response","created_at":1741476542,"status":"completed","model":"gpt-4.1","output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"x\"}","status":"completed"},{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}],"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}}`

	itemArray = `[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"done"},{"role":"assistant","content":[{"type":"output_text","text":"ok"}]}]`

	legacyCodex = `{
  "session": {"timestamp": "2025-04-16T10:00:00Z", "id": "s-1", "instructions": "be good"},
  "items": [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    {"type": "local_shell_call", "id": "x", "call_id": "c", "status": "completed", "action": {"type": "exec", "command": ["ls"]}},
    {"type": "local_shell_call_output", "call_id": "c", "output": "{\"output\":\"a\\n\",\"metadata\":{\"exit_code\":0}}"}
  ]
}`

	// A rollout cut off mid-session: a dangling call, a repeated
	// token_count, an event_msg duplicate and a torn last line.
	codexTruncated = `{"timestamp":"2025-09-01T10:00:00Z","type":"session_meta","payload":{"id":"sess-1","timestamp":"2025-09-01T09:59:59Z","originator":"codex_cli_rs","cli_version":"0.30.0"}}
{"timestamp":"2025-09-01T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5","cwd":"/x"}}
{"timestamp":"2025-09-01T10:00:02Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2025-09-01T10:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}
{"timestamp":"2025-09-01T10:00:02Z","type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"timestamp":"2025-09-01T10:00:03Z","type":"turn_context","payload":{"model":"gpt-5-mini"}}
{"timestamp":"2025-09-01T10:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}}
{"timestamp":"2025-09-01T10:00:05Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":7,"reasoning_output_tokens":3},"last_token_usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":7,"reasoning_output_tokens":3}}}}
{"timestamp":"2025-09-01T10:00:06Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":7,"reasoning_output_tokens":3},"last_token_usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":7,"reasoning_output_tokens":3}}}}
{"timestamp":"2025-09-01T10:00:07Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch","call_id":"call_2"}}
{"timestamp":"2025-09-01T10:00:08Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a.txt"}}
{"timestamp":"2025-09-01T10:00:09Z","type":"response_item","payload":{"type":"mess`
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"drone.jsonl", droneJSONL, layoutChatJSONL},
		{"demo.json", chatArray, layoutChatArray},
		{"glaive.json", shareGPT, layoutShareGPT},
		{"traj.json", miniSWE, ""}, // mini-swe-agent and SWE-agent: internal/format/sweagent
		{"export.json", openAIChatExport, layoutWrapped},
		{"x.traj", sweAgentTraj, ""},
		{"log.jsonl", messageLines, layoutMessages},
		{"batch_in.jsonl", batchInput, layoutRequestLog},
		{"batch_out.jsonl", batchOutput, layoutRequestLog},
		{"proxy.jsonl", proxyLog, layoutRequestLog},
		{"resp.json", responseObject, layoutResponses},
		{"items.json", itemArray, layoutResponses},
		{"rollout.json", legacyCodex, layoutCodex},
		{"rollout.jsonl", codexTruncated, layoutCodex},
		{"harbor.jsonl", `{"conversations":[{"role":"user","content":"x"}],"run_id":"r","episode":"episode-0"}` + "\n", layoutHarbor},
		// Not ours.
		{"atif.json", `{"schema_version":"ATIF-v1.5","session_id":"s","agent":{},"steps":[]}`, ""},
		{"actf.jsonl", `{"atof_version":"0.1","kind":"scope"}` + "\n" + `{"kind":"mark"}`, ""},
		{"atif.jsonl", `{"__header__":true,"schema_version":"ATIF-v1.5"}` + "\n" + `{"step_id":1}`, ""},
		// Not trajectories: one record per file, a message header without
		// content, a single request with its response (docs/formats.md, "What
		// is not a trajectory").
		{"msg_1.json", `{"id":"msg_1","sessionID":"ses_1","role":"assistant","time":{"created":1},"modelID":"m"}`, ""},
		{"item.json", `{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`, ""},
		{"message.json", `{"role":"user","content":"hi"}`, ""},
		{"prt_1.json", `{"id":"prt_1","messageID":"msg_1","type":"reasoning","text":"think"}`, ""},
		{"one.jsonl", `{"role":"user","content":"hi"}` + "\n", ""},
		{"one-item.json", `[{"type":"message","role":"user","content":"hi"}]`, ""},
		{"headers.jsonl", `{"role":"user","message":{"content":[]}}` + "\n" + `{"role":"assistant","message":{"content":[]}}` + "\n", ""},
		{"completion.json", `{"model":"m","messages":[{"role":"user","content":"q"}],"response":{"choices":[{"message":{"role":"assistant","content":"a"}}]}}`, ""},
		{"nomessages.json", `{"messages":[]}`, ""},
		{"empty.json", "", ""},
		{"text.txt", "hello", ""},
		{"array.json", `[1,2]`, ""},
	}
	for _, tt := range tests {
		got, ok := detect(tt.name, []byte(tt.data))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", tt.name, got, ok, tt.want)
		}
	}
}

func TestDroneStyleToolCalls(t *testing.T) {
	_, sls := mustNormalize(t, "drone.jsonl", []byte(droneJSONL))
	if len(sls) != 2 {
		t.Fatalf("%d conversations", len(sls))
	}
	sl := sls[0]
	type call struct {
		step, name, status, resultStep, result string
		valid                                  bool
	}
	want := []call{
		{"2", "takeoff", "ok", "3", "ok", true},
		{"4", "a", "ok", "5", "A", true},
		{"4", "b", "ok", "6", "B", true}, // double-encoded: a valid JSON string
		{"7", "land", "missing", "", "", false},
	}
	if len(sl.ToolCalls) != len(want) {
		t.Fatalf("%d calls", len(sl.ToolCalls))
	}
	for i, w := range want {
		tc := sl.ToolCalls[i]
		got := call{tc.StepID, tc.FunctionName, tc.ResultStatus, model.Deref(tc.ResultStepID), model.Deref(tc.Result), tc.ArgumentsValid}
		if got != w || tc.ToolCallID != "call_id" {
			t.Errorf("call %d = %+v, want %+v", i, got, w)
		}
	}
	if a := model.Deref(sl.ToolCalls[2].Arguments); a != `"{\"location\": \"x\"}"` {
		t.Errorf("double-encoded arguments not kept raw: %s", a)
	}
	if sl.Steps[2].MessageKind != kindToolCallsOnly || sl.Steps[2].MessageValue != nil || sl.Steps[7].MessageKind != kindToolCallsOnly {
		t.Errorf("tool_calls_only steps: %+v %+v", sl.Steps[2], sl.Steps[7])
	}
	if sl.Steps[3].Source != model.SourceTool || !strings.Contains(model.Deref(sl.Steps[3].Extra), `"tool_call_id":"call_id"`) {
		t.Errorf("tool step: %+v", sl.Steps[3])
	}
	if e := model.Deref(sl.Run.Extra); !strings.Contains(e, `"parallel_tool_calls":true`) || !strings.Contains(e, `"tools":[`) {
		t.Errorf("run extra: %s", e)
	}
	wantWarnings(t, sl, "double-encoded", "1 tool call(s) have no result")

	sl = sls[1]
	if sl.Run.SessionID != "conv-9" || model.Deref(sl.Run.AgentModelName) != "gpt-4o" {
		t.Errorf("run: %+v", sl.Run)
	}
	steps := sl.Steps
	checks := []struct {
		what      string
		got, want any
	}{
		{"developer source", steps[0].Source, model.SourceSystem},
		{"developer extra", model.Deref(steps[0].Extra), `{"name":"ops","role":"developer"}`},
		{"text parts", model.Deref(steps[0].MessageValue), "Be brief."},
		{"image kind", steps[1].MessageKind, format.KindMultimodal},
		{"image stripped", strings.Contains(model.Deref(steps[1].MessageValue), "sha256:"), true},
		{"no base64", strings.Contains(model.Deref(steps[1].MessageValue), b64[:40]), false},
		{"think stripped", model.Deref(steps[2].MessageValue), "Answer"},
		{"reasoning", model.Deref(steps[2].Reasoning), "rc\nhmm"},
		{"weight extra", model.Deref(steps[2].Extra), `{"weight":0}`},
		{"prompt", *steps[2].PromptTokens, int64(10)},
		{"cached", *steps[2].CachedTokens, int64(3)},
		{"reasoning tokens", *steps[2].ReasoningTokens, int64(2)},
		{"refusal kind", steps[3].MessageKind, kindRefusal},
		{"refusal text", model.Deref(steps[3].MessageValue), "I can't"},
		{"function source", steps[4].Source, model.SourceTool},
		{"run prompt", *sl.Run.PromptTokens, int64(10)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	wantWarnings(t, sl, "matches no unanswered call")
}

// TestAnthropicContentBlocks: a message list whose content uses Anthropic
// blocks keeps one step per message; tool_use blocks become calls with
// their input as arguments, tool_result blocks link to them (is_error →
// error), and thinking blocks are the step's reasoning.
func TestAnthropicContentBlocks(t *testing.T) {
	const chat = `{"system":"be brief","messages":[{"role":"user","content":"list and count"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"two tools"},{"type":"text","text":"Looking."},` +
		`{"type":"tool_use","id":"toolu_1","name":"bash","input":{"cmd":"ls"}},{"type":"tool_use","id":"toolu_2","name":"wc","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"},` +
		`{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"no such file"}],"is_error":true}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_3","name":"bash","input":{"cmd":"pwd"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"?"},{"type":"text","text":"stop"}]}]}`
	_, sls := mustNormalize(t, "anthropic.jsonl", []byte(chat+"\n"))
	sl := sls[0]
	if len(sl.Steps) != 5 || len(sl.ToolCalls) != 3 {
		t.Fatalf("%d steps, %d calls; want one step per message and 3 calls", len(sl.Steps), len(sl.ToolCalls))
	}
	agent, results, last := sl.Steps[1], sl.Steps[2], sl.Steps[4]
	if model.Deref(agent.MessageValue) != "Looking." || model.Deref(agent.Reasoning) != "two tools" {
		t.Errorf("agent step: %q, reasoning %q", model.Deref(agent.MessageValue), model.Deref(agent.Reasoning))
	}
	if results.Source != model.SourceTool || model.Deref(results.MessageValue) != "a.txt\nno such file" {
		t.Errorf("result step: %s %q", results.Source, model.Deref(results.MessageValue))
	}
	if sl.Steps[3].MessageKind != kindToolCallsOnly || last.Source != model.SourceUser || model.Deref(last.MessageValue) != "stop" {
		t.Errorf("steps 3/4: %+v %+v", sl.Steps[3], last)
	}
	type call struct{ id, name, args, status, result, resultStep string }
	want := []call{
		{"toolu_1", "bash", `{"cmd":"ls"}`, model.ResultOK, "a.txt", "2"},
		{"toolu_2", "wc", `{}`, model.ResultError, "no such file", "2"},
		{"toolu_3", "bash", `{"cmd":"pwd"}`, "missing", "", ""},
	}
	for i, w := range want {
		tc := sl.ToolCalls[i]
		got := call{tc.ToolCallID, tc.FunctionName, model.Deref(tc.Arguments), tc.ResultStatus, model.Deref(tc.Result), model.Deref(tc.ResultStepID)}
		if got != w {
			t.Errorf("call %d = %+v, want %+v", i, got, w)
		}
	}
	if len(sl.Warnings) != 2 || !strings.Contains(sl.Warnings[0].Message, "tool result matches no unanswered call") ||
		!strings.Contains(sl.Warnings[1].Message, "1 tool call(s) have no result") {
		t.Errorf("warnings: %+v", sl.Warnings)
	}
}

// TestGeminiParts: Gemini messages (role user/model, parts instead of
// content) keep one step per message; functionCall parts become calls,
// functionResponse parts answer them by id, else by function name, and
// thought parts are reasoning.
func TestGeminiParts(t *testing.T) {
	const chat = `[{"role":"user","parts":[{"text":"list"},{"text":"then count"}]},` +
		`{"role":"model","parts":[{"text":"plan","thought":true},{"text":"Sure."},{"functionCall":{"name":"ls","args":{"path":"."}}},{"functionCall":{"id":"c2","name":"wc","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"wc","response":{"n":1}}},{"functionResponse":{"name":"ls","response":{"output":"a.txt"}}}]},` +
		`{"role":"model","parts":[{"text":"One file."}]}]`
	_, sls := mustNormalize(t, "gemini.json", []byte(chat))
	sl := sls[0]
	if len(sl.Steps) != 4 || len(sl.ToolCalls) != 2 || len(sl.Warnings) != 0 {
		t.Fatalf("%d steps, %d calls, warnings %+v", len(sl.Steps), len(sl.ToolCalls), sl.Warnings)
	}
	if v := model.Deref(sl.Steps[0].MessageValue); v != "list\nthen count" {
		t.Errorf("user text %q", v)
	}
	agent := sl.Steps[1]
	if agent.Source != model.SourceAgent || model.Deref(agent.MessageValue) != "Sure." || model.Deref(agent.Reasoning) != "plan" {
		t.Errorf("model step: %s %q reasoning %q", agent.Source, model.Deref(agent.MessageValue), model.Deref(agent.Reasoning))
	}
	if sl.Steps[2].Source != model.SourceTool || model.Deref(sl.Steps[2].Extra) != "" {
		t.Errorf("result step: %s extra %s", sl.Steps[2].Source, model.Deref(sl.Steps[2].Extra))
	}
	type call struct{ name, args, result, link, resultStep string }
	want := []call{{"ls", `{"path":"."}`, `{"output":"a.txt"}`, model.LinkByName, "2"}, {"wc", `{}`, `{"n":1}`, model.LinkByID, "2"}}
	for i, w := range want {
		tc := sl.ToolCalls[i]
		if got := (call{tc.FunctionName, model.Deref(tc.Arguments), model.Deref(tc.Result), tc.ResultLink, model.Deref(tc.ResultStepID)}); got != w {
			t.Errorf("call %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestChatArray(t *testing.T) {
	layout, sls := mustNormalize(t, "demo.json", []byte(chatArray))
	if layout != layoutChatArray || len(sls) != 2 || sls[0].Run.SessionID != "item-0" || sls[1].Run.SessionID != "item-1" {
		t.Fatalf("layout %q, %d storylines", layout, len(sls))
	}
	if e := model.Deref(sls[0].Run.Extra); e != `{"images":["a.png"]}` || sls[1].Run.SourceFormat != "openai/chat-array" {
		t.Errorf("run: %+v", sls[0].Run)
	}
}

func TestWrapped(t *testing.T) {
	t.Run("openai-chat export", func(t *testing.T) {
		_, sls := mustNormalize(t, "trajectory.json", []byte(openAIChatExport))
		sl := sls[0]
		if sl.Run.SessionID != "TASK-1" || model.Deref(sl.Run.AgentModelName) != "claude-opus" || *sl.Run.ReportedStepCount != 4 || sl.Run.StepCount != 4 {
			t.Errorf("run: %+v", sl.Run)
		}
		if model.Deref(sl.Steps[1].Reasoning) != "plan" || model.Deref(sl.Steps[1].MessageValue) != "Let me look." {
			t.Errorf("thinking: %+v", sl.Steps[1])
		}
		if tc := sl.ToolCalls[0]; model.Deref(tc.ResultStepID) != "3" || model.Deref(tc.Result) != "data" || tc.ResultLink != model.LinkByID {
			t.Errorf("call: %+v", tc)
		}
		if e := model.Deref(sl.Run.Extra); e != `{"format":"openai-chat","message_count":4,"source_events":5}` {
			t.Errorf("run extra: %s", e)
		}
	})
}

func TestShareGPT(t *testing.T) {
	_, sls := mustNormalize(t, "glaive.json", []byte(shareGPT))
	sl := sls[0]
	if got := sourceLetters(sl); got != "uata" {
		t.Errorf("sources %q", got)
	}
	tc := sl.ToolCalls[0]
	if tc.FunctionName != "get_weather" || model.Deref(tc.Arguments) != `{"city":"Paris"}` || !tc.ArgumentsValid ||
		tc.ResultLink != model.LinkByOrder || model.Deref(tc.ResultStepID) != "2" || model.Deref(tc.Result) != `{"temp": 20}` {
		t.Errorf("call: %+v", tc)
	}
	if e := model.Deref(sl.Run.Extra); !strings.Contains(e, `"system":"be nice"`) || !strings.Contains(e, `"tools":`) {
		t.Errorf("run extra: %s", e)
	}
}

func TestMessageLines(t *testing.T) {
	_, sls := mustNormalize(t, "log.jsonl", []byte(messageLines))
	want := []struct {
		session, original string
		steps             int
	}{{"a", "", 3}, {"b", "", 1}, {"b#2", "b", 1}, {"a#2", "a", 1}}
	if len(sls) != len(want) {
		t.Fatalf("%d conversations", len(sls))
	}
	for i, w := range want {
		run := sls[i].Run
		if run.SessionID != w.session || model.Deref(run.OriginalSessionID) != w.original || len(sls[i].Steps) != w.steps {
			t.Errorf("%d: %q %v %d steps; want %+v", i, run.SessionID, run.OriginalSessionID, len(sls[i].Steps), w)
		}
	}
}

func TestRequestLog(t *testing.T) {
	t.Run("batch input", func(t *testing.T) {
		_, sls := mustNormalize(t, "in.jsonl", []byte(batchInput))
		if len(sls) != 2 || sls[1].Run.SessionID != "request-2" || sls[1].Steps[0].IsCopiedContext {
			t.Fatalf("unrelated requests sharing a system prompt must not be copied context: %+v", sls[1].Steps)
		}
		if e := model.Deref(sls[0].Run.Extra); e != `{"method":"POST","request":{"max_tokens":100},"url":"/v1/chat/completions"}` {
			t.Errorf("run extra: %s", e)
		}
	})
	t.Run("batch output", func(t *testing.T) {
		_, sls := mustNormalize(t, "out.jsonl", []byte(batchOutput))
		st := sls[0].Steps[0]
		if sls[0].Run.Status != model.StatusCompleted || *st.PromptTokens != 22 || *st.CompletionTokens != 2 ||
			st.Timestamp.Unix() != 1711652795 || model.Deref(st.ModelName) != "gpt-4o-mini" {
			t.Errorf("first: %+v %+v", sls[0].Run, st)
		}
		if sls[1].Run.Status != model.StatusError || len(sls[1].Steps) != 0 {
			t.Errorf("second: %+v", sls[1].Run)
		}
	})
	t.Run("proxy history", func(t *testing.T) {
		_, sls := mustNormalize(t, "proxy.jsonl", []byte(proxyLog))
		sl := sls[1]
		if !sl.Steps[0].IsCopiedContext || !sl.Steps[1].IsCopiedContext || sl.Steps[2].IsCopiedContext || sl.Run.StepCount != 2 || sl.Run.Status != model.StatusTruncated {
			t.Errorf("history: %+v", sl)
		}
	})
}

func TestResponses(t *testing.T) {
	t.Run("response object", func(t *testing.T) {
		_, sls := mustNormalize(t, "resp.json", []byte(responseObject))
		sl := sls[0]
		if sl.Run.SessionID != "resp_1" || sl.Run.Status != model.StatusCompleted || len(sl.Steps) != 3 {
			t.Fatalf("run: %+v", sl.Run)
		}
		if fc := sl.ToolCalls[0]; fc.ToolCallID != "call_1" || fc.ResultStatus != model.ResultMissing || model.Deref(fc.Extra) != `{"id":"fc_1","status":"completed"}` {
			t.Errorf("function call: %+v", fc)
		}
		if ws := sl.ToolCalls[1]; ws.FunctionName != "web_search" || ws.ResultLink != model.LinkInline || ws.ResultStatus != model.ResultOK {
			t.Errorf("web search: %+v", ws)
		}
		if st := sl.Steps[2]; *st.PromptTokens != 36 || *st.CompletionTokens != 87 || model.Deref(st.ModelName) != "gpt-4.1" {
			t.Errorf("usage step: %+v", st)
		}
	})
	t.Run("item array", func(t *testing.T) {
		_, sls := mustNormalize(t, "items.json", []byte(itemArray))
		sl := sls[0]
		if got := sourceLetters(sl); got != "uata" || model.Deref(sl.ToolCalls[0].ResultStepID) != "2" || model.Deref(sl.Steps[3].MessageValue) != "ok" {
			t.Errorf("steps %q calls %+v", got, sl.ToolCalls)
		}
	})
}

func TestCodexVariants(t *testing.T) {
	t.Run("legacy json", func(t *testing.T) {
		_, sls := mustNormalize(t, "rollout-2025-04-16.json", []byte(legacyCodex))
		sl := sls[0]
		tc := sl.ToolCalls[0]
		if sl.Run.SessionID != "s-1" || sl.Run.StartedAt == nil || tc.FunctionName != "local_shell" ||
			model.Deref(tc.Arguments) != `{"type":"exec","command":["ls"]}` || model.Deref(tc.ResultStepID) != "2" {
			t.Errorf("run %+v call %+v", sl.Run, tc)
		}
		if e := model.Deref(sl.Run.Extra); e != `{"session":{"instructions":"be good"}}` {
			t.Errorf("run extra: %s", e)
		}
	})
	t.Run("truncated rollout", func(t *testing.T) {
		_, sls := mustNormalize(t, "rollout.jsonl", []byte(codexTruncated))
		sl := sls[0]
		run := sl.Run
		if run.Status != model.StatusTruncated || run.SessionID != "sess-1" || model.Deref(run.AgentModelName) != "gpt-5" ||
			run.StepCount != 4 || *run.PromptTokens != 100 || *run.ReportedPromptTokens != 100 || *run.ReportedCachedTokens != 10 {
			t.Errorf("run: %+v", run)
		}
		call := sl.Steps[1]
		if call.StepID != "7" || model.Deref(call.ModelName) != "gpt-5-mini" || *call.ReasoningTokens != 3 {
			t.Errorf("call step: %+v", call)
		}
		if sl.ToolCalls[0].ResultStatus != model.ResultOK || sl.ToolCalls[1].ResultStatus != model.ResultMissing ||
			model.Deref(sl.ToolCalls[1].Arguments) != "*** Begin Patch" || sl.ToolCalls[1].ArgumentsValid {
			t.Errorf("calls: %+v", sl.ToolCalls)
		}
		wantWarnings(t, sl, "rollout.jsonl:12: unreadable line", "1 tool call(s) have no result")
	})
}

// TestCodexStatus: a rollout is truncated only on evidence of an unfinished
// turn. Older CLIs wrote no task events; a rollout of theirs that ends on
// the assistant's message is complete.
func TestCodexStatus(t *testing.T) {
	const (
		meta      = `{"timestamp":"2025-05-01T10:00:00Z","type":"session_meta","payload":{"id":"s","cli_version":"0.1.2504"}}` + "\n"
		user      = `{"timestamp":"2025-05-01T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}` + "\n"
		call      = `{"timestamp":"2025-05-01T10:00:02Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}` + "\n"
		output    = `{"timestamp":"2025-05-01T10:00:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"ok"}}` + "\n"
		reasoning = `{"timestamp":"2025-05-01T10:00:04Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"done"}]}}` + "\n"
		answer    = `{"timestamp":"2025-05-01T10:00:05Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed."}]}}` + "\n"
		started   = `{"timestamp":"2025-05-01T10:00:01Z","type":"event_msg","payload":{"type":"task_started"}}` + "\n"
		complete  = `{"timestamp":"2025-05-01T10:00:06Z","type":"event_msg","payload":{"type":"task_complete"}}` + "\n"
		aborted   = `{"timestamp":"2025-05-01T10:00:06Z","type":"event_msg","payload":{"type":"turn_aborted"}}` + "\n"
		torn      = `{"timestamp":"2025-05-01T10:00:07Z","type":"respo`
	)
	for _, tt := range []struct{ name, rollout, status string }{
		{"old CLI ends on the answer", meta + user + call + output + reasoning + answer, model.StatusCompleted},
		{"old CLI ends on a call", meta + user + call, model.StatusTruncated},
		{"old CLI ends on an output", meta + user + call + output, model.StatusTruncated},
		{"old CLI ends on reasoning", meta + user + call + output + reasoning, model.StatusTruncated},
		{"old CLI, nothing but metadata", meta, model.StatusUnknown},
		{"old CLI, last line being written", meta + user + answer + torn, model.StatusTruncated},
		{"task complete", meta + started + user + answer + complete, model.StatusCompleted},
		{"task started, never complete", meta + started + user + answer, model.StatusTruncated},
		{"turn aborted", meta + started + user + call + aborted, model.StatusCancelled},
	} {
		_, sls := mustNormalize(t, "rollout.jsonl", []byte(tt.rollout))
		if got := sls[0].Run.Status; got != tt.status {
			t.Errorf("%s: status %s, want %s", tt.name, got, tt.status)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, layout, data string
		line               int64
		pointer            string
	}{
		{"bad.jsonl", layoutChatJSONL, `{"messages":[]}` + "\n" + `{"messages":[` + "\n", 2, ""},
		{"bad.jsonl", layoutChatJSONL, `{"messages":[]}` + "\n" + `[1]` + "\n", 2, ""},
		{"bad.json", layoutChatArray, `[{"messages":[]},{"messages":`, 0, "/1"},
		{"bad.json", layoutWrapped, `{"messages":[`, 1, ""},
		{"bad.jsonl", layoutRequestLog, "{\"custom_id\":1}\n{", 2, ""},
		{"bad.json", layoutResponses, `[{"type":"message"`, 1, ""},
		{"bad.json", layoutCodex, `{"session":`, 1, ""},
	}
	for _, tt := range tests {
		var emitted int
		err := New().Normalize(t.Context(), strings.NewReader(tt.data), format.Source{Path: tt.name, File: tt.name}, tt.layout,
			func(*model.Storyline) error { emitted++; return nil })
		var pe *format.ParseError
		if !errors.As(err, &pe) || pe.Line != tt.line || pe.Pointer != tt.pointer || pe.Path != tt.name {
			t.Errorf("%s %s: err = %v (%#v)", tt.layout, tt.data, err, pe)
		}
	}
}

func wantWarnings(t *testing.T, sl *model.Storyline, subs ...string) {
	t.Helper()
	var all []string
	for _, w := range sl.Warnings {
		all = append(all, w.String())
	}
	joined := strings.Join(all, "\n")
	for _, s := range subs {
		if !strings.Contains(joined, s) {
			t.Errorf("no warning containing %q in:\n%s", s, joined)
		}
	}
}
