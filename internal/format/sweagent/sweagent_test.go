package sweagent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// samples are the public files in ../shared/samples/sweagent.
var samples = []string{
	"mini-swe-agent-v1.13.4_harbor-rfc_hello-world.traj.json",
	"mini-swe-agent-v1.15_gemini-3-pro_django__django-10097_format-errors.traj.json",
	"swe-agent_6e44b9__sweagenttestrepo-1c2844.traj",
	"swe-agent_enigma-demo_ctf_pwn_warmup.traj",
	"swe-agent_function_calling_simple.history-only.traj",
}

// fixtures cover what no public sample has, written after the producers'
// own code: mini-swe-agent 2.x (trajectory format 1.1) with tool calling
// (parallel calls, a FormatError interrupt, the exit message) and
// text-based (LimitsExceeded, a timed-out command); a SWE-agent RetryAgent
// file (attempts, a rejected turn, an automatic submission, a
// demonstration, a thinking block).
var fixtures = []string{
	"mini-swe-agent-2.1_toolcall.traj.json",
	"mini-swe-agent-2.0_textbased_limits.traj.json",
	"swe-agent-1.1_retry-attempts.traj",
}

func TestGolden(t *testing.T) {
	testutil.GoldenSamples(t, New(), "sweagent", samples...)
	testutil.GoldenFixtures(t, New(), fixtures...)
}

func sample(t testing.TB, name string) []byte { return testutil.Sample(t, "sweagent/"+name) }

// TestFigures asserts figures counted by hand (python over the JSON) from
// each file by its producer's rules:
//
//   - hello-world (mini-swe-agent 1.13.4): 8 messages = system, task, and 3
//     turns each with one ```bash block followed by its observation; the
//     system prompt's example block is not a turn. The last observation is
//     the Submitted message "" (the command's output after the marker).
//     Usage: prompt 752+841+919, completion 69+53+77, cached 0.
//   - django-10097 (1.15): 54 messages; 26 assistant turns, of which 22 hold
//     exactly one block (calls) and messages 18, 26, 28, 34 hold 3, 2, 2, 3
//     (format errors, each answered by the agent's feedback: 4 more system
//     steps and 4 warnings). Message 11 reports <returncode>1</returncode>.
//     Sources: 1+4 system, 1 user, 26 agent, 22 tool.
//   - SWE-agent function calling: history has 10 entries (4 tool_calls
//     answered by role=tool by id); trajectory[4] "submit" is not in the
//     history and adds a step with an inline result: 11 steps, 5 calls.
//   - EnIGMA demonstration (text actions): 15 history entries, 7 actions,
//     each in the trajectory; the last one (submit) has no observation in
//     the history and takes the trajectory's ("").
//   - history-only: 12 entries, 5 calls by id, no info.
//   - fixtures: see their description above; 2.1 usage is 900+980+1100+1300
//     prompt (the rejected turn was billed too), 40+25+70+30 completion,
//     0+896+896+1024 cached.
func TestFigures(t *testing.T) {
	tests := []struct {
		file, session, status, model, version       string
		reward                                      float64 // -1: NULL (always: neither agent grades its submission)
		steps, copied, calls, errorCalls, formatErr int64
		sources                                     string // system,user,agent,tool counts
		prompt, completion, cached                  int64
		reportedCost                                float64
		warnings                                    int
	}{
		{file: "mini-swe-agent-v1.13.4_harbor-rfc_hello-world.traj.json", session: "mini-swe-agent-v1.13.4_harbor-rfc_hello-world",
			status: model.StatusCompleted, model: "anthropic/claude-3-5-sonnet-20241022", version: "1.13.4", reward: -1,
			steps: 8, calls: 3, sources: "1,1,3,3", prompt: 2512, completion: 199, cached: 0, reportedCost: 0.010520999999999999},
		{file: "mini-swe-agent-v1.15_gemini-3-pro_django__django-10097_format-errors.traj.json", session: "django__django-10097",
			status: model.StatusCompleted, model: "google/gemini-3-pro-preview", version: "1.15.0", reward: -1,
			steps: 54, calls: 22, errorCalls: 1, formatErr: 4, sources: "5,1,26,22", prompt: 201441, completion: 7816, cached: 150917,
			reportedCost: 0.22502339999999998, warnings: 4},
		{file: "swe-agent_6e44b9__sweagenttestrepo-1c2844.traj", session: "SWE-agent__test-repo-i1",
			status: model.StatusCompleted, model: "gpt-4o", reward: -1,
			steps: 11, calls: 5, sources: "1,1,5,4", prompt: -1, completion: -1, cached: -1, reportedCost: 0.019520000000000006},
		{file: "swe-agent_enigma-demo_ctf_pwn_warmup.traj", session: "swe-agent_enigma-demo_ctf_pwn_warmup",
			status: model.StatusCompleted, reward: -1,
			steps: 15, calls: 7, sources: "1,1,7,6", prompt: -1, completion: -1, cached: -1},
		{file: "swe-agent_function_calling_simple.history-only.traj", session: "swe-agent_function_calling_simple.history-only",
			status: model.StatusUnknown, reward: -1,
			steps: 12, calls: 5, sources: "1,1,5,5", prompt: -1, completion: -1, cached: -1, reportedCost: -1},
		{file: "mini-swe-agent-2.1_toolcall.traj.json", session: "demo__greeting-1",
			status: model.StatusCompleted, model: "openai/gpt-5-mini", version: "2.1.0", reward: -1,
			steps: 10, calls: 4, errorCalls: 1, formatErr: 1, sources: "3,1,3,3", prompt: 4280, completion: 165, cached: 2816,
			reportedCost: 0.0046, warnings: 1},
		{file: "mini-swe-agent-2.0_textbased_limits.traj.json", session: "mini-swe-agent-2.0_textbased_limits",
			status: model.StatusTruncated, model: "anthropic/claude-sonnet-4-5", version: "2.0.0", reward: -1,
			steps: 7, calls: 2, errorCalls: 1, sources: "2,1,2,2", prompt: 1060, completion: 50, cached: -1, reportedCost: 0.004},
		{file: "swe-agent-1.1_retry-attempts.traj", session: "demo__greeting-2/attempt-0",
			status: model.StatusTruncated, model: "claude-sonnet-4-20250514", version: "1.1.0", reward: -1,
			steps: 8, calls: 2, formatErr: 1, sources: "1,1,4,2", prompt: -1, completion: -1, cached: -1, reportedCost: 1.02, warnings: 1},
		{file: "swe-agent-1.1_retry-attempts.traj", session: "demo__greeting-2/attempt-1",
			status: model.StatusCompleted, model: "claude-sonnet-4-20250514", version: "1.1.0", reward: -1,
			steps: 6, copied: 3, calls: 2, sources: "1,2,3,3", prompt: -1, completion: -1, cached: -1, reportedCost: 0.4},
	}
	for _, tt := range tests {
		t.Run(tt.session, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				data = sample(t, tt.file)
			}
			_, sls := testutil.MustNormalize(t, New(), tt.file, data)
			sl := testutil.BySession(t, sls, tt.session)
			bySource := map[string]int{}
			var copied, formatErr, errorCalls int64
			for _, st := range sl.Steps {
				bySource[st.Source]++
				if st.IsCopiedContext {
					copied++
				}
				if st.MessageKind == kindFormatError {
					formatErr++
				}
			}
			for _, tc := range sl.ToolCalls {
				if tc.ResultStatus == model.ResultError {
					errorCalls++
				}
				if tc.ResultStatus == model.ResultMissing {
					t.Errorf("call %s has no result", tc.ToolCallID)
				}
			}
			r := sl.Run
			reward, cost := -1.0, -1.0
			if r.Reward != nil {
				reward = *r.Reward
			}
			if r.ReportedCostUSD != nil {
				cost = *r.ReportedCostUSD
			}
			sources := strings.Join([]string{strconv.Itoa(bySource[model.SourceSystem]), strconv.Itoa(bySource[model.SourceUser]), strconv.Itoa(bySource[model.SourceAgent]), strconv.Itoa(bySource[model.SourceTool])}, ",")
			got := []any{r.Status, model.Deref(r.AgentModelName), model.Deref(r.AgentVersion), reward, r.StepCount, copied, r.ToolCallCount,
				errorCalls, formatErr, sources, testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens),
				testutil.OrMinus1(r.CachedTokens), cost, len(sl.Warnings)}
			want := []any{tt.status, tt.model, tt.version, tt.reward, tt.steps, tt.copied, tt.calls,
				tt.errorCalls, tt.formatErr, tt.sources, tt.prompt, tt.completion, tt.cached, tt.reportedCost, tt.warnings}
			names := []string{"status", "model", "version", "reward", "step_count", "copied", "tool_call_count",
				"error calls", "format errors", "sources", "prompt", "completion", "cached", "reported cost", "warnings"}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s: got %v, want %v", names[i], got[i], want[i])
				}
			}
			if t.Failed() {
				for _, w := range sl.Warnings {
					t.Log(w)
				}
			}
		})
	}
}

// TestDetails pins single mappings of the samples and fixtures.
func TestDetails(t *testing.T) {
	_, sls := testutil.MustNormalize(t, New(), samples[1], sample(t, samples[1]))
	mini := sls[0]
	// Message 18 holds three bash blocks: a format error, nothing ran; the
	// agent's feedback (a user message) is a system step.
	if st := mini.Steps[18]; st.Source != model.SourceAgent || st.MessageKind != kindFormatError {
		t.Errorf("format error turn: %+v", st)
	}
	if st := mini.Steps[19]; st.Source != model.SourceSystem || model.Deref(st.Extra) != `{"role":"user"}` ||
		!strings.HasPrefix(model.Deref(st.MessageValue), "Please always provide EXACTLY ONE action in triple backticks, found 3 actions.") {
		t.Errorf("format error feedback: %+v", st)
	}
	if w := mini.Warnings[0]; w.Pointer != "/messages/18/content" || !strings.Contains(w.Message, "gave 3 actions") {
		t.Errorf("warning: %+v", w)
	}
	call := mini.ToolCalls[4] // message 10: python3 reproduce_issue.py → returncode 1
	if call.StepID != "10" || call.ToolCallID != "action-10" || call.FunctionName != "python3" ||
		model.Deref(call.Arguments) != `{"command":"python3 reproduce_issue.py"}` || !call.ArgumentsValid ||
		call.ResultStatus != model.ResultError || model.Deref(call.ResultStepID) != "11" || call.ResultLink != linkByOrder {
		t.Errorf("call of message 10: %+v", call)
	}
	last := mini.ToolCalls[len(mini.ToolCalls)-1]
	if !strings.HasPrefix(model.Deref(last.Arguments), `{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"`) ||
		!strings.HasPrefix(model.Deref(last.Result), "diff --git a/django/core/validators.py") || model.Deref(last.ResultStepID) != "53" {
		t.Errorf("submitting call: %+v", last)
	}
	if st := mini.Steps[2]; model.Deref(st.ModelName) != "google/gemini-3-pro-preview" || testutil.OrMinus1(st.PromptTokens) != 1915 ||
		testutil.OrMinus1(st.ReasoningTokens) != 167 || st.CostUSD == nil || *st.CostUSD != 0.006626 ||
		st.Timestamp == nil || strings.Contains(model.Deref(st.Extra), `"choices"`) || strings.Contains(model.Deref(st.Extra), `"usage"`) {
		t.Errorf("assistant metrics: %+v extra %s", st, model.Deref(st.Extra))
	}
	r := mini.Run
	if model.Deref(r.Scores) == "" || !strings.HasPrefix(model.Deref(r.Scores), `{"exit_status":"Submitted","submission":"diff --git`) ||
		strings.Contains(model.Deref(r.Extra), `"submission"`) || !strings.Contains(model.Deref(r.Extra), `"model_stats":{"api_calls":26}`) ||
		!strings.Contains(model.Deref(r.Extra), `"trajectory_format":"mini-swe-agent-1"`) || r.SourceFormat != "swe-agent/mini-swe-agent-1" {
		t.Errorf("mini run: scores %s extra %.300s", model.Deref(r.Scores), model.Deref(r.Extra))
	}

	_, sls = testutil.MustNormalize(t, New(), samples[2], sample(t, samples[2]))
	fc := sls[0]
	if c := fc.ToolCalls[0]; c.ToolCallID != "call_fJuazlMUN5fQDQ73G6XSpYpx" || c.FunctionName != "find_file" ||
		model.Deref(c.Arguments) != `{"file_name":"missing_colon.py"}` || c.ResultLink != model.LinkByID || model.Deref(c.ResultStepID) != "3" ||
		!strings.HasPrefix(model.Deref(c.Extra), `{"action":"find_file missing_colon.py","execution_time":0.2814128329991945,"state":{"open_file":"n/a"`) {
		t.Errorf("function call: %+v extra %s", c, model.Deref(c.Extra))
	}
	// The history lacks the final submit: the trajectory step gives it,
	// holding its own observation.
	if c := fc.ToolCalls[4]; c.StepID != "trajectory-4" || c.FunctionName != "submit" || c.ResultLink != linkInline ||
		c.ResultStepID != nil || !strings.Contains(model.Deref(c.Result), "+def division(a: float, b: float) -> float:") {
		t.Errorf("trailing submit: %+v", c)
	}
	if r := fc.Run; model.Deref(r.AgentID) != "main" || testutil.OrMinus1(r.ReportedPromptTokens) != 7141 || testutil.OrMinus1(r.ReportedCompletionTokens) != 243 ||
		!strings.Contains(model.Deref(r.Extra), `"replay_config":{`) || !strings.Contains(model.Deref(r.Extra), `"model_stats":{"api_calls":5}`) ||
		strings.Contains(model.Deref(r.Extra), `"trajectory"`) || r.SourceFormat != "swe-agent/traj" {
		t.Errorf("fc run: %+v", r)
	}

	_, sls = testutil.MustNormalize(t, New(), samples[3], sample(t, samples[3]))
	enigma := sls[0]
	if c := enigma.ToolCalls[3]; c.FunctionName != "edit" ||
		model.Deref(c.Arguments) != `{"command":"edit 1:9\nfrom pwn import *\np = remote(\"pwn.chal.csaw.io\", 8000)\np.recvuntil(b\">\")\np.sendline(flat({72:0x40060d}, word_size=64))\nprint(p.recvall().decode(\"ascii\"))\nend_of_input\nend_of_edit"}` {
		t.Errorf("multi-line edit: %+v", c)
	}
	if c := enigma.ToolCalls[6]; c.FunctionName != "submit" || c.ResultLink != linkInline || model.Deref(c.Result) != "" || c.ResultStatus != model.ResultOK {
		t.Errorf("submit without history observation: %+v", c)
	}

	_, sls = testutil.MustNormalize(t, New(), fixtures[2], testutil.Fixture(t, fixtures[2]))
	if len(sls) != 2 || sls[0].Run.RunID != "demo__greeting-2" || sls[1].Run.RunID != "demo__greeting-2" {
		t.Fatalf("attempts: %d Storylines", len(sls))
	}
	if st := sls[0].Steps[4]; st.StepID != "trajectory-1" || st.MessageKind != kindFormatError ||
		model.Deref(st.MessageValue) != "I will now edit the file, I think line 1 is wrong." ||
		model.Deref(st.Extra) != `{"execution_time":0.0,"query_messages":1,"state":{}}` {
		t.Errorf("rejected turn: %+v extra %s", st, model.Deref(st.Extra))
	}
	if e := model.Deref(sls[0].Run.Extra); strings.Contains(e, `"retry"`) {
		t.Errorf("attempt 0 is not the chosen one: %s", e)
	}
	if e := model.Deref(sls[1].Run.Extra); !strings.Contains(e, `"retry":{"best_attempt_idx":1,"chooser":{"chosen_idx":1,`) ||
		!strings.Contains(e, `"total_model_stats":{"instance_cost":1.42,"tokens_sent":71000`) {
		t.Errorf("chosen attempt extra: %s", e)
	}
	att := sls[1]
	if st := att.Steps[2]; !st.IsCopiedContext || !strings.Contains(model.Deref(st.Extra), `"tool_calls":[`) {
		t.Errorf("demonstration turn: %+v", st)
	}
	if st := att.Steps[5]; model.Deref(st.Reasoning) != "The file prints helo; a one-word replacement fixes it." {
		t.Errorf("thinking block: %+v", st)
	}

	_, sls = testutil.MustNormalize(t, New(), fixtures[0], testutil.Fixture(t, fixtures[0]))
	v2 := sls[0]
	if st := v2.Steps[4]; st.Source != model.SourceSystem || st.MessageKind != kindFormatError || testutil.OrMinus1(st.PromptTokens) != 980 ||
		st.CostUSD == nil || *st.CostUSD != 0.0009 {
		t.Errorf("1.1 format error: %+v", st)
	}
	if c := v2.ToolCalls[3]; c.ToolCallID != "call_4" || model.Deref(c.ResultStepID) != "9" || !strings.HasPrefix(model.Deref(c.Result), "diff --git") {
		t.Errorf("call answered by the exit message: %+v", c)
	}
	if st := v2.Steps[3]; st.Extra != nil || st.Timestamp == nil {
		t.Errorf("observation: %+v extra %s", st, model.Deref(st.Extra))
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct{ exit, status string }{
		{"submitted", model.StatusCompleted},
		{"Submitted", model.StatusCompleted},
		{"submitted (exit_cost)", model.StatusTruncated},
		{"submitted (exit_context)", model.StatusTruncated},
		{"submitted (exit_error)", model.StatusError},
		{"exit_cost", model.StatusTruncated},
		{"exit_total_execution_time", model.StatusTruncated},
		{"LimitsExceeded", model.StatusTruncated},
		{"TimeExceeded", model.StatusTruncated},
		{"exit_format", model.StatusError},
		{"RepeatedFormatError", model.StatusError},
		{"exit_forfeit", model.StatusError},
		{"KeyboardInterrupt", model.StatusCancelled},
	}
	for _, tt := range tests {
		b := newBuilder(format.Source{}, LayoutTraj)
		b.outcome(mustJSON(tt.exit), nil, nil)
		// A submission is a status, never a reward: neither agent grades it.
		if r := b.sl.Run; r.Status != tt.status || r.Reward != nil || !strings.Contains(model.Deref(r.Scores), `"exit_status"`) {
			t.Errorf("%s: status %s reward %v scores %s", tt.exit, r.Status, r.Reward, model.Deref(r.Scores))
		}
	}
	b := newBuilder(format.Source{}, LayoutTraj)
	b.outcome(nil, nil, nil)
	if r := b.sl.Run; r.Status != model.StatusUnknown || r.Reward != nil || r.Scores != nil {
		t.Errorf("no exit status: %+v", r)
	}
}

func TestDetect(t *testing.T) {
	mini := `{"info":{"exit_status":"Submitted","mini_version":"1.9.0","config":{}},"messages":[{"role":"system","content":"x"}],"trajectory_format":"mini-swe-agent-1"}`
	tests := []struct{ name, data, layout string }{
		{"mini 1", mini, LayoutMini1},
		{"mini cut before trajectory_format", mini[:90], LayoutMini1},
		{"mini 2 by version", `{"info":{"mini_version":"2.1.0"},"messages":[`, LayoutMini11},
		{"mini 1.1", `{"messages":[],"trajectory_format":"mini-swe-agent-1.1"}`, LayoutMini11},
		{"traj", `{"trajectory":[{"action":"ls","observation":"a"`, LayoutTraj},
		{"traj environment first", `{"environment":"main","trajectory":[{"action":"ls"}],"history":[]}`, LayoutTraj},
		{"traj empty trajectory", `{"trajectory":[],"history":[{"role":"system","content":"s","agent":"main"}],"info":{}}`, LayoutTraj},
		{"attempts", `{"attempts":[{"trajectory":[{"action":"ls"`, LayoutTraj},
		{"history only", `{"history":[{"role":"system","content":"s","agent":"main","message_type":"system_prompt"}]}`, LayoutHistory},
		{"chat export", `{"format":"openai-chat","model":"m","messages":[{"role":"user","content":"hi"}]}`, ""},
		{"history of plain messages", `{"history":[{"role":"user","content":"hi"}],"info":{}}`, ""},
		{"openhands history", `{"instance_id":"x","history":[{"id":0,"source":"user","action":"message"}]}`, ""},
		{"atif", `{"schema_version":"ATIF-v1.5","agent":{},"steps":[]}`, ""},
		{"array", `[{"trajectory":[{"action":"ls"}]}]`, ""},
	}
	for _, tt := range tests {
		layout, ok := New().Detect(format.NewProbe("f.traj", []byte(tt.data), len(tt.data) < 60))
		if ok != (tt.layout != "") || layout != tt.layout {
			t.Errorf("%s: detected %q %v, want %q", tt.name, layout, ok, tt.layout)
		}
	}
	for i, name := range samples {
		want := []string{LayoutMini1, LayoutMini1, LayoutTraj, LayoutTraj, LayoutHistory}[i]
		data := sample(t, name)
		p, err := format.ReadProbe(bytes.NewReader(data), name, 4096) // far less than the files
		if err != nil {
			t.Fatal(err)
		}
		if layout, ok := New().Detect(p); !ok || layout != want {
			t.Errorf("%s from a 4 KiB prefix: %q %v, want %q", name, layout, ok, want)
		}
	}
}

func normalizeString(layout, input string) ([]*model.Storyline, error) {
	var sls []*model.Storyline
	err := New().Normalize(context.Background(), strings.NewReader(input), format.Source{Path: "in.traj", File: "in.traj"}, layout,
		func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
	return sls, err
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, layout, input string
		line                int64
		msg                 string
	}{
		{"truncated", LayoutTraj, "{\"trajectory\": [\n{\"action\": \"ls\",", 2, "document ends early"},
		{"bad byte", LayoutMini1, "{\"messages\": [\n  {\"role\": x}]}", 2, "invalid JSON at column"},
		{"not an object", LayoutHistory, `[{"history":[]}]`, 1, "not a JSON object"},
		{"empty", LayoutMini11, "", 1, "invalid JSON"},
	}
	for _, tt := range tests {
		_, err := normalizeString(tt.layout, tt.input)
		var pe *format.ParseError
		if !errors.As(err, &pe) || pe.Line != tt.line || !strings.HasPrefix(err.Error(), "in.traj:") || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want a ParseError at line %d with %q", tt.name, err, tt.line, tt.msg)
		}
	}
}

// TestEdgeCases covers shapes the samples do not have; each is read
// leniently and reported.
func TestEdgeCases(t *testing.T) {
	tests := []struct {
		name, layout, input string
		check               func(t *testing.T, sl *model.Storyline, warnings string)
	}{
		{name: "odd history", layout: LayoutTraj,
			input: `{"history":[1,{"role":"critic","content":"c"},{"role":"tool","content":"x","tool_call_ids":["nope"]},` +
				`{"role":"assistant","content":"t","tool_calls":[2,{"id":"c1","function":{"arguments":"{"}}]},{"role":"user","content":"late"}],` +
				`"trajectory":{},"info":{"exit_status":null}}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				for _, want := range []string{"#/history/0: history entry is not a JSON object", `#/history/1/role: unknown role "critic"`,
					"#/history/2: tool message answers no call", "#/history/3/tool_calls/0: tool call is not a JSON object",
					"#/history/3/tool_calls/1/function: tool call has no function name", "#/trajectory: trajectory is not an array"} {
					if !strings.Contains(w, want) {
						t.Errorf("warnings lack %q:\n%s", want, w)
					}
				}
				if len(sl.Steps) != 4 || sl.Steps[0].StepID != "1" || sl.Steps[0].Source != model.SourceSystem ||
					model.Deref(sl.Steps[0].Extra) != `{"role":"critic"}` || sl.Steps[3].Source != model.SourceTool {
					t.Errorf("steps: %+v", sl.Steps)
				}
				if tc := sl.ToolCalls[0]; tc.ToolCallID != "c1" || tc.ArgumentsValid || model.Deref(tc.Result) != "late" || tc.ResultLink != linkByOrder {
					t.Errorf("call: %+v", tc)
				}
				if sl.Run.Status != model.StatusUnknown || sl.Run.Reward != nil || !strings.Contains(model.Deref(sl.Run.Extra), `"trajectory":{}`) {
					t.Errorf("run: %+v", sl.Run)
				}
			}},
		{name: "trajectory only", layout: LayoutTraj,
			input: `{"trajectory":[{"action":"ls -a","observation":"x","response":"look\n` + "```\\nls -a\\n```" + `","thought":"look"},{"action":"","observation":"","response":"Exit due to context window"}],"info":{"exit_status":"exit_context"}}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				if len(sl.Steps) != 2 || sl.Steps[1].MessageKind != kindExit || sl.Steps[1].Source != model.SourceSystem ||
					sl.ToolCalls[0].FunctionName != "ls" || model.Deref(sl.ToolCalls[0].Result) != "x" || sl.Steps[0].Extra != nil {
					t.Errorf("steps %+v calls %+v", sl.Steps, sl.ToolCalls)
				}
				if sl.Run.Status != model.StatusTruncated || sl.Run.Reward != nil || w != "" {
					t.Errorf("run %+v warnings %s", sl.Run, w)
				}
			}},
		{name: "replay_config string", layout: LayoutTraj,
			input: `{"trajectory":[],"history":[],"info":{},"replay_config":"{\"agent\":{\"model\":{\"name\":\"m1\"}},\"problem_statement\":{\"id\":\"inst-1\"}}"}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				if sl.Run.SessionID != "inst-1" || model.Deref(sl.Run.AgentModelName) != "m1" {
					t.Errorf("run %+v", sl.Run)
				}
			}},
		{name: "configured action regex", layout: LayoutMini1,
			input: `{"info":{"mini_version":"1.17.0","config":{"agent":{"action_regex":"<cmd>(.*?)</cmd>"}}},"messages":[` +
				`{"role":"assistant","content":"<cmd>ls</cmd> and ` + "```bash\\npwd\\n```" + `"},{"role":"user","content":"a"},` +
				`{"role":"assistant","content":"none"},{"role":"user","content":"Please always provide EXACTLY ONE action"},{"role":"user","content":""}]}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				if len(sl.ToolCalls) != 1 || model.Deref(sl.ToolCalls[0].Arguments) != `{"command":"ls"}` ||
					sl.Steps[2].MessageKind != kindFormatError || sl.Steps[3].Source != model.SourceSystem || sl.Steps[4].MessageKind != kindExit {
					t.Errorf("steps %+v calls %+v", sl.Steps, sl.ToolCalls)
				}
				if !strings.Contains(w, "#/messages/2/content: the model gave 0 actions") {
					t.Errorf("warnings %s", w)
				}
			}},
		{name: "python-only regex", layout: LayoutMini1,
			input: `{"info":{"mini_version":"1.17.0","config":{"agent":{"action_regex":"(?<=x)y"}}},"messages":[{"role":"assistant","content":"` + "```bash\\nls\\n```" + `"}]}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				if len(sl.ToolCalls) != 1 || !strings.Contains(w, "#/info/config/agent/action_regex: action_regex cannot be used here") ||
					!strings.Contains(w, "1 tool call(s) have no result") {
					t.Errorf("calls %+v warnings %s", sl.ToolCalls, w)
				}
			}},
		{name: "before 1.12 the block needs a newline right after bash", layout: LayoutMini1,
			input: `{"info":{"mini_version":"1.9.0"},"messages":[{"role":"assistant","content":"` + "```bash \\nls\\n```" + `"}]}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				if len(sl.ToolCalls) != 0 || sl.Steps[0].MessageKind != kindFormatError {
					t.Errorf("1.9 parsed %+v", sl.ToolCalls)
				}
			}},
		{name: "odd messages", layout: LayoutMini11,
			input: `{"messages":[null,{"role":"robot","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"instance_id":"i"}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				if sl.Run.SessionID != "i" || len(sl.Steps) != 1 || model.Deref(sl.Steps[0].MessageValue) != "a\nb" ||
					!strings.Contains(w, "#/messages/0: message is not a JSON object") || !strings.Contains(w, `#/messages/1/role: unknown role "robot"`) {
					t.Errorf("%+v %s", sl.Steps, w)
				}
			}},
		{name: "messages not an array", layout: LayoutMini1, input: `{"messages":{}}`,
			check: func(t *testing.T, sl *model.Storyline, w string) {
				if len(sl.Steps) != 0 || !strings.Contains(w, "#/messages: messages is not an array") || model.Deref(sl.Run.Extra) != `{"messages":{}}` {
					t.Errorf("%+v %s", sl.Run, w)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sls, err := normalizeString(tt.layout, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			var w []string
			for _, x := range sls[0].Warnings {
				w = append(w, x.String())
			}
			tt.check(t, sls[0], strings.Join(w, "\n"))
		})
	}
}

// FuzzNormalize: any input, under every layout, either fails with a
// located ParseError or gives Storylines whose rows refer to each other
// consistently; it never panics.
func FuzzNormalize(f *testing.F) {
	for _, name := range samples {
		if data := sample(f, name); len(data) <= 64<<10 { // larger seeds slow mutation down
			f.Add(data)
		}
	}
	for _, name := range fixtures {
		f.Add(testutil.Fixture(f, name))
	}
	f.Add([]byte(`{"attempts":[null,{"history":[{"role":"assistant","action":"x","tool_calls":[{}]}]}],"info":{"best_attempt_idx":1}}`))
	f.Add([]byte(`{"trajectory":[{"action":"a"},{"action":"a"},{}],"history":[{"role":"assistant","action":"a","content":"c"},{"role":"tool","tool_call_ids":[1]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":null,"extra":{"actions":[{},{"command":"ls"}]}},{"role":"exit"},{"role":"tool","tool_call_id":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.traj", data, false))
		for _, layout := range []string{LayoutTraj, LayoutHistory, LayoutMini1, LayoutMini11} {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error {
					steps := map[string]bool{}
					for _, st := range sl.Steps {
						if steps[st.StepID] || st.Source == "" || st.MessageKind == "" {
							t.Fatalf("%s: bad step %+v", layout, st)
						}
						steps[st.StepID] = true
					}
					for _, tc := range sl.ToolCalls {
						if !steps[tc.StepID] || (tc.ResultStepID != nil && !steps[*tc.ResultStepID]) || tc.FunctionName == "" && tc.ToolCallID == "" {
							t.Fatalf("%s: call refers to a missing step: %+v", layout, tc)
						}
					}
					if sl.Run.SessionID == "" || sl.Run.RunID == "" || sl.Run.Status == "" {
						t.Fatalf("%s: run without identity or status: %+v", layout, sl.Run)
					}
					return nil
				})
			var pe *format.ParseError
			if err != nil && (!errors.As(err, &pe) || pe.Line == 0) {
				t.Fatalf("%s: error is not a located ParseError: %v", layout, err)
			}
		}
	})
}
