package openhands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// fixtures are synthetic files written after the OpenHands event stream:
// an evaluation output.jsonl with two instances (one resolved and
// finished, one that failed with an error) and a saved trajectory array.
var fixtures = []string{"output.jsonl", "trajectory-ipython.json"}

// samples are the public files in ../shared/samples/openhands.
var samples = []string{
	"harbor-rfc_openhands_events_recall_finish.json",
	"openhands-benchmarks_openagentsafety_v1-sdk_output.jsonl",
	"openhands-sdk_v1_goal_events.jsonl",
	"openhands_resolver_mock_output.jsonl",
	"openhands_runtime_trajs_basic_gui_mode.json",
}

func sample(t testing.TB, name string) []byte { return testutil.Sample(t, "openhands/"+name) }

func normalize(t testing.TB, name string, data []byte) []*model.Storyline {
	t.Helper()
	_, sls := testutil.MustNormalize(t, New(), name, data)
	return sls
}

func TestGolden(t *testing.T) {
	testutil.GoldenFixtures(t, New(), fixtures...)
	testutil.GoldenSamples(t, New(), "openhands", samples...)
}

// TestFigures asserts figures computed by hand from the fixtures.
//
// output.jsonl line 1 (django__django-11099): 13 events → 13 steps; the
// actions run(3), edit(5), think(6), run(9) give 4 calls, all answered
// (observations 4, 7, 8, 10); observation 4 has exit_code 1 → 1 error;
// finish(11) is a fifth call, its final thought its result (no link by id).
// Tokens per model_response id: chatcmpl-1 5200/120/4800, chatcmpl-2
// (edit + think, counted once) 5600/210/5100, chatcmpl-3 6100/95/5600,
// chatcmpl-4 (finish) 6300/60/6000 → prompt 23200, completion 485, cached
// 21500. finish → completed.
// Line 2 (astropy__astropy-12907): 5 steps, run(1) answered by an error
// observation, run(3) unanswered (1 warning); no usage; error → status
// error.
// trajectory-ipython.json: 8 events, 7 steps: recall(1) is a knowledge
// lookup, not a call, and its observation (2) becomes that step's
// observation; run_ipython(3) is answered by observation 4; resp-1
// 1500/40, no cached.
func TestFigures(t *testing.T) {
	tests := []struct {
		file, session, sources, status, agent, model string
		steps, calls, linked, errorCalls, missing    int64
		prompt, completion, cached                   int64
		warnings                                     int
	}{
		{file: "output.jsonl", session: "django__django-11099",
			sources: "system,user,system,agent,tool,agent,agent,tool,tool,agent,tool,agent,system",
			steps:   13, calls: 5, linked: 4, errorCalls: 1, prompt: 23200, completion: 485, cached: 21500,
			status: model.StatusCompleted, agent: "CodeActAgent", model: "anthropic/claude-3-5-sonnet-20241022"},
		{file: "output.jsonl", session: "astropy__astropy-12907", sources: "user,agent,tool,agent,system",
			steps: 5, calls: 2, linked: 1, errorCalls: 1, missing: 1, prompt: -1, completion: -1, cached: -1, warnings: 1,
			status: model.StatusError, agent: "CodeActAgent", model: "openai/gpt-4o"},
		{file: "trajectory-ipython.json", session: "trajectory-ipython", sources: "user,user,agent,tool,agent,system,system",
			steps: 7, calls: 1, linked: 1, prompt: 1500, completion: 40, cached: -1,
			status: model.StatusUnknown, agent: "openhands", model: "gpt-4o-2024-08-06"},
	}
	for _, tt := range tests {
		t.Run(tt.session, func(t *testing.T) {
			sl := testutil.BySession(t, normalize(t, tt.file, testutil.Fixture(t, tt.file)), tt.session)
			var sources []string
			for _, st := range sl.Steps {
				sources = append(sources, st.Source)
			}
			var linked, errorCalls, missing int64
			for _, tc := range sl.ToolCalls {
				if tc.ResultLink == model.LinkByID && tc.ResultStepID != nil {
					linked++
				}
				if tc.ResultStatus == model.ResultError {
					errorCalls++
				}
				if tc.ResultStatus == model.ResultMissing {
					missing++
				}
			}
			r := sl.Run
			got := []any{r.RunID, strings.Join(sources, ","), r.StepCount, r.ToolCallCount, linked, errorCalls, missing,
				testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens), testutil.OrMinus1(r.CachedTokens), len(sl.Warnings),
				r.Status, model.Deref(r.AgentName), model.Deref(r.AgentModelName)}
			want := []any{tt.session, tt.sources, tt.steps, tt.calls, tt.linked, tt.errorCalls, tt.missing,
				tt.prompt, tt.completion, tt.cached, tt.warnings, tt.status, tt.agent, tt.model}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestDetails pins single mappings of the fixtures.
func TestDetails(t *testing.T) {
	sls := normalize(t, "output.jsonl", testutil.Fixture(t, "output.jsonl"))
	if len(sls) != 2 {
		t.Fatalf("%d Storylines", len(sls))
	}
	sl := sls[0]
	if sys := sl.Steps[0]; sys.Source != model.SourceSystem || sys.StepID != "0" ||
		model.Deref(sys.MessageValue) != "You are OpenHands agent, a helpful AI assistant." ||
		!strings.Contains(model.Deref(sys.Extra), `"tools":[`) || !strings.Contains(model.Deref(sys.Extra), `"action":"system"`) {
		t.Errorf("system step: %+v extra %s", sys, model.Deref(sys.Extra))
	}
	if st := sl.Steps[2]; st.MessageKind != "system_op" || !strings.Contains(model.Deref(st.Extra), `"agent_state":"running"`) {
		t.Errorf("agent_state_changed step: %+v extra %s", st, model.Deref(st.Extra))
	}
	run := sl.ToolCalls[0]
	if run.StepID != "3" || run.ToolCallID != "toolu_01" || run.FunctionName != "execute_bash" || !run.ArgumentsValid ||
		strings.Contains(model.Deref(run.Arguments), "thought") ||
		!strings.HasPrefix(model.Deref(run.Arguments), `{"blocking":false,"command":"python -m pytest tests/validators -x -q"`) ||
		model.Deref(run.ResultStepID) != "4" || run.ResultStatus != model.ResultError ||
		!strings.Contains(model.Deref(run.Result), "1 failed") {
		t.Errorf("run call: %+v", run)
	}
	if st := sl.Steps[3]; model.Deref(st.MessageValue) != "Let me run the validator tests first." ||
		model.Deref(st.ModelName) != "claude-3-5-sonnet-20241022" || st.Timestamp.Format("15:04:05.000") != "10:00:04.500" {
		t.Errorf("run step: %+v", st)
	}
	// The edit's thought is empty: the text is the event message.
	if st := sl.Steps[5]; !strings.HasPrefix(model.Deref(st.MessageValue), "I am interested in modifying") {
		t.Errorf("edit step: %+v", st)
	}
	// think shares chatcmpl-2 with edit: its usage is not counted again.
	if st := sl.Steps[6]; st.PromptTokens != nil || !strings.Contains(model.Deref(st.Extra), `"usage_counted_on":"5"`) {
		t.Errorf("think step: %+v extra %s", st, model.Deref(st.Extra))
	}
	if tc := sl.ToolCalls[2]; tc.FunctionName != "think" || model.Deref(tc.Arguments) != "{}" || model.Deref(tc.Result) != "Your thought has been logged." {
		t.Errorf("think call: %+v", tc)
	}
	// The observation's metadata repeats its action's: not kept twice.
	if st := sl.Steps[4]; strings.Contains(model.Deref(st.Extra), "tool_call_metadata") ||
		!strings.Contains(model.Deref(st.Extra), `"exit_code":1`) {
		t.Errorf("run observation extra %s", model.Deref(st.Extra))
	}
	if fin := sl.Steps[11]; fin.Source != model.SourceAgent || !strings.HasPrefix(model.Deref(fin.MessageValue), "Anchored both") ||
		strings.Contains(model.Deref(fin.Extra), `"args"`) {
		t.Errorf("finish step: %+v extra %s", fin, model.Deref(fin.Extra))
	}
	// finish is the model's call of the finish tool: its arguments, and its
	// final thought as the result (it has no observation).
	if tc := sl.ToolCalls[4]; tc.ToolCallID != "toolu_05" || tc.FunctionName != "finish" || tc.ResultLink != linkInline ||
		!strings.Contains(model.Deref(tc.Arguments), `"task_completed":"true"`) || !strings.Contains(model.Deref(tc.Arguments), `"final_thought":"Anchored both`) ||
		!strings.HasPrefix(model.Deref(tc.Result), "Anchored both") || tc.ResultStatus != model.ResultOK {
		t.Errorf("finish call: %+v", tc)
	}
	r := sl.Run
	if r.StartedAt.Format("15:04:05.000") != "10:00:00.000" || r.EndedAt.Format("15:04:05.000") != "10:00:20.050" ||
		testutil.OrMinus1(r.ReportedPromptTokens) != 23200 || testutil.OrMinus1(r.ReportedCompletionTokens) != 485 || testutil.OrMinus1(r.ReportedCachedTokens) != 21500 ||
		r.ReportedCostUSD == nil || *r.ReportedCostUSD != 0.0912 || r.SourceFormat != "openhands/jsonl" {
		t.Errorf("run: %+v", r)
	}
	for _, want := range []string{`"instruction":"<uploaded_files>`, `"test_result":{"git_patch":`, `"metrics":{"accumulated_cost":0.0912`,
		`"metadata":{"agent_class":"CodeActAgent"`, `"error":null`, `"instance":{"repo":"django/django"`} {
		if !strings.Contains(model.Deref(r.Extra), want) {
			t.Errorf("run extra lacks %s: %s", want, model.Deref(r.Extra))
		}
	}
	if strings.Contains(model.Deref(r.Extra), `"history"`) {
		t.Error("run extra repeats the history")
	}

	failed := sls[1]
	if tc := failed.ToolCalls[0]; tc.ToolCallID != "oh-1" || tc.FunctionName != "run" || tc.ResultStatus != model.ResultError {
		t.Errorf("call without metadata: %+v", tc)
	}
	if tc := failed.ToolCalls[1]; tc.ResultStatus != model.ResultMissing || tc.ResultLink != model.LinkNone ||
		model.Deref(failed.Steps[3].MessageValue) != "Running command: ls astropy/modeling" {
		t.Errorf("unanswered call: %+v", tc)
	}
	if !strings.Contains(model.Deref(failed.Run.Extra), `"error":"RuntimeError: Agent reached maximum iteration`) {
		t.Errorf("error not kept: %s", model.Deref(failed.Run.Extra))
	}

	tr := normalize(t, "trajectory-ipython.json", testutil.Fixture(t, "trajectory-ipython.json"))[0]
	if tr.Run.SourceFormat != "openhands/json" || tr.Run.Extra != nil {
		t.Errorf("trajectory run: %+v", tr.Run)
	}
	// recall is a knowledge lookup: a step whose observation is the
	// recall's answer, not a tool call.
	if st := tr.Steps[1]; st.StepID != "1" || st.Source != model.SourceUser || model.Deref(st.Observation) != "Added workspace context" ||
		!strings.Contains(model.Deref(st.Extra), `"recall_observation":{"extras":{"recall_type":"workspace_context",`) ||
		tr.ToolCalls[0].FunctionName != "execute_ipython_cell" {
		t.Errorf("recall step: %+v extra %s", st, model.Deref(st.Extra))
	}
	if st := tr.Steps[5]; st.Source != model.SourceSystem || model.Deref(st.MessageValue) != "No observation" || len(tr.Warnings) != 0 {
		t.Errorf("null observation: %+v %v", st, tr.Warnings)
	}
	if st := tr.Steps[4]; !strings.Contains(model.Deref(st.Extra), `"llm_metrics":{"accumulated_cost":0.0042}`) ||
		!strings.Contains(model.Deref(st.Extra), `"wait_for_response":true`) {
		t.Errorf("agent message extra %s", model.Deref(st.Extra))
	}
}

func TestEdgeCases(t *testing.T) {
	ev := func(s string) string { return `{"instance_id":"i","history":[` + s + `]}` }
	tests := []struct {
		name, file, layout, input string
		errLine                   int64
		check                     func(t *testing.T, sls []*model.Storyline)
	}{
		{name: "malformed line", layout: LayoutJSONL, errLine: 2,
			input: ev(`{"id":0,"source":"user","action":"message","args":{"content":"hi"}}`) + "\n{\"instance_id\":\n"},
		{name: "line not an object", layout: LayoutJSONL, errLine: 3,
			input: ev(`{"id":0,"source":"user","action":"message"}`) + "\n\n[1]\n"},
		{name: "truncated document", layout: LayoutJSON, errLine: 2,
			input: "[{\"id\":0,\"source\":\"user\",\n\"action\":"},
		{name: "scalar document", layout: LayoutJSON, errLine: 1, input: `"x"`},
		{name: "odd events", layout: LayoutJSONL,
			input: ev(`1,{"source":"agent","action":"run","args":"ls"},{"id":1,"source":"agent","observation":"run","cause":99,"content":"?","timestamp":"soon"},`+
				`{"id":1,"source":"agent","observation":"run","cause":"event-1","content":"ok","extras":{"metadata":{"exit_code":-1}}},`+
				`{"id":2,"source":"agent","observation":"run","cause":"event-1","content":"again"},{"id":3,"source":"x"}`) + "\n" +
				`{"instance_id":"i"}` + "\n" + `{"history":{}}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				if len(sls) != 3 {
					t.Fatalf("%d Storylines", len(sls))
				}
				sl := sls[0]
				if len(sl.Steps) != 5 || sl.Steps[2].StepID != "1#2" {
					t.Fatalf("steps %+v", sl.Steps)
				}
				tc := sl.ToolCalls[0]
				if tc.ToolCallID != "oh-event-1" || model.Deref(tc.Arguments) != "ls" || tc.ArgumentsValid ||
					tc.ResultStatus != model.ResultError || model.Deref(tc.ResultStepID) != "1#2" {
					t.Errorf("call %+v", tc)
				}
				// The run observation whose cause is missing keeps its result.
				if o := sl.ToolCalls[1]; o.StepID != "1" || o.FunctionName != "run" || o.ResultLink != linkOrphan || model.Deref(o.Result) != "?" ||
					sl.Steps[1].Source != model.SourceTool {
					t.Errorf("orphan %+v step %+v", o, sl.Steps[1])
				}
				if !strings.Contains(model.Deref(sl.Run.Extra), `"invalid_events":[1]`) {
					t.Errorf("run extra %s", model.Deref(sl.Run.Extra))
				}
				var msgs []string
				for _, w := range sl.Warnings {
					msgs = append(msgs, w.String())
				}
				all := strings.Join(msgs, "\n")
				for _, want := range []string{"in:1#/history/0: event is not a JSON object", "in:1#/history/1/id: event has no id",
					"in:1#/history/2/timestamp: timestamp is not", `in:1#/history/2/cause: observation cause "99" names no earlier event`,
					"in:1#/history/3/id: event id \"1\" repeats", `in:1#/history/4/cause: observation answers event "event-1" whose call already`,
					"in:1#/history/5: event has neither action nor observation"} {
					if !strings.Contains(all, want) {
						t.Errorf("warnings lack %q:\n%s", want, all)
					}
				}
				if sls[1].Run.SessionID != "i#2" || model.Deref(sls[1].Run.OriginalSessionID) != "i" || sls[1].Run.RunID != "i" ||
					len(sls[1].Warnings) != 1 {
					t.Errorf("second line: %+v %v", sls[1].Run, sls[1].Warnings)
				}
				if sls[2].Run.SessionID != "line-3" || !strings.Contains(model.Deref(sls[2].Run.Extra), `"history":{}`) {
					t.Errorf("third line: %+v", sls[2].Run)
				}
			}},
		{name: "object with history", layout: LayoutJSON, file: "dir/traj.json",
			input: `{"history":[{"id":5,"source":"agent","action":"finish","args":{"outputs":{"x":1}},"message":"bye"}],"extra":true}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				sl := sls[0]
				if sl.Run.SessionID != "traj" || sl.Run.Status != model.StatusCompleted || model.Deref(sl.Steps[0].MessageValue) != "bye" ||
					model.Deref(sl.Run.Extra) != `{"extra":true}` {
					t.Errorf("%+v %+v", sl.Run, sl.Steps)
				}
				// Without a final thought, the outputs are the result.
				if tc := sl.ToolCalls[0]; model.Deref(tc.Arguments) != `{"outputs":{"x":1}}` || model.Deref(tc.Result) != `{"x":1}` {
					t.Errorf("finish call %+v", tc)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "in"
			}
			var sls []*model.Storyline
			err := New().Normalize(context.Background(), strings.NewReader(tt.input), format.Source{Path: "in", File: file},
				tt.layout, func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
			if tt.errLine > 0 {
				var pe *format.ParseError
				if !errors.As(err, &pe) || pe.Line != tt.errLine || !strings.HasPrefix(err.Error(), "in:") {
					t.Fatalf("err = %v, want a ParseError at line %d", err, tt.errLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, sls)
		})
	}
}

func TestDetect(t *testing.T) {
	event := `{"id":0,"timestamp":"2025-01-01T00:00:00","source":"user","message":"hi","action":"message","args":{"content":"hi"}}`
	obs := `{"id":1,"source":"environment","observation":"agent_state_changed","content":"","extras":{}}`
	tests := []struct {
		name, file, data, layout string
	}{
		{"output line", "output.jsonl", `{"instance_id":"x","history":[` + event + `],"metrics":{}}` + "\n", LayoutJSONL},
		{"two output lines", "out.txt", `{"instance_id":"x","history":[` + obs + "]}\n" + `{"instance_id":"y","history":[]}` + "\n", LayoutJSONL},
		{"event array", "t.json", "[\n" + event + ",\n" + obs + "]", LayoutJSON},
		{"object with history", "t.json", `{"history":[` + obs + `]}`, LayoutJSON},
		{"empty history", "output.jsonl", `{"instance_id":"x","history":[]}` + "\n", ""},
		{"history of role messages", "t.json", `{"history":[{"role":"user","content":"hi"}],"info":{}}`, ""},
		{"event with role", "t.json", `[{"id":0,"source":"user","action":"message","role":"user"}]`, ""},
		{"event without source", "t.json", `[{"id":0,"action":"message"}]`, ""},
		{"chat", "c.jsonl", `{"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"responses items", "r.json", `[{"type":"message","role":"user","content":[]}]`, ""},
		{"atif", "a.json", `{"schema_version":"ATIF-v1.5","agent":{},"steps":[]}`, ""},
		{"V1 history", "output.jsonl", `{"instance_id":"x","history":[{"kind":"ActionEvent","id":"a","source":"agent"}]}` + "\n", LayoutJSONL},
		{"V1 event stream", "events.jsonl", `{"id":"a","timestamp":"t","source":"environment","key":"stats","value":{},"kind":"ConversationStateUpdateEvent"}` + "\n", LayoutEvents},
		{"legacy flat history", "output.jsonl", `{"issue":{},"history":[{"content":"x","action":"message"},{"observation":"run","content":""}]}` + "\n", LayoutJSONL},
		{"unknown action without id", "output.jsonl", `{"history":[{"action":"dance"}]}` + "\n", ""},
		{"kind not an event", "k.jsonl", `{"id":"a","source":"x","kind":"scope"}` + "\n", ""},
		{"canonical-like line", "c.jsonl", `{"v":1,"event_id":"e","kind":"run_start","seq":0}` + "\n", ""},
		{"swe-agent history", "x.traj", `{"history":[{"role":"system","content":"s","agent":"main"}],"info":{}}`, ""},
	}
	for _, tt := range tests {
		layout, ok := New().Detect(format.NewProbe(tt.file, []byte(tt.data), false))
		if ok != (tt.layout != "") || layout != tt.layout {
			t.Errorf("%s: detected %q %v, want %q", tt.name, layout, ok, tt.layout)
		}
	}
	// A prefix cut inside the first event still shows id, source, action.
	cut := `{"instance_id":"x","history":[` + event[:90]
	if layout, ok := New().Detect(format.NewProbe("output.jsonl", []byte(cut), true)); !ok || layout != LayoutJSONL {
		t.Errorf("cut prefix: %q %v", layout, ok)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, name := range fixtures {
		f.Add(testutil.Fixture(f, name))
	}
	for _, name := range samples {
		if data := sample(f, name); len(data) <= 64<<10 { // larger seeds slow mutation down
			f.Add(data)
		}
	}
	f.Add([]byte(`{"id":"a","source":"agent","kind":"ActionEvent","tool_call":{"arguments":{}}}` + "\n" +
		`{"id":"b","source":"environment","kind":"ObservationEvent","action_id":"a","observation":[]}` + "\n" + `{"id":"c","source":"x","kind":"AgentErrorEvent"}`))
	f.Add([]byte(`{"history":[{"action":"run","command":"ls"},{"observation":"run","content":"a","exit_code":"x"},{"action":"recall"},{"observation":"recall"}]}`))
	f.Add([]byte(`{"history":[{"id":1,"source":"agent","action":"run","tool_call_metadata":{"model_response":{"usage":null}}},{"id":2,"observation":"run","cause":1,"extras":[]}]}`))
	f.Add([]byte(`[{"id":"a","source":"user","action":"message","args":{"content":[{"type":"image","data":1}]}},null,{"observation":"error","cause":"a"}]`))
	f.Add([]byte("null\n[]\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.jsonl", data, false))
		for _, layout := range []string{LayoutJSONL, LayoutJSON, LayoutEvents} {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error {
					if sl.Run.SessionID == "" || sl.Run.RunID == "" {
						t.Fatalf("empty identity: %+v", sl.Run)
					}
					seen := map[string]bool{}
					for _, st := range sl.Steps {
						if seen[st.StepID] {
							t.Fatalf("repeated step id %q", st.StepID)
						}
						seen[st.StepID] = true
					}
					for _, tc := range sl.ToolCalls {
						if !seen[tc.StepID] || tc.ResultStepID != nil && !seen[*tc.ResultStepID] {
							t.Fatalf("call refers to a missing step: %+v", tc)
						}
					}
					return nil
				})
			var pe *format.ParseError
			if err != nil && (!errors.As(err, &pe) || (layout != LayoutJSON && pe.Line == 0)) {
				t.Fatalf("%s: error is not a located ParseError: %v", layout, err)
			}
		}
	})
}

// TestSampleFigures asserts figures counted by hand (python over the JSON)
// from the public samples:
//
//   - harbor-rfc (V0 array): 7 events; the recall observation (4) is folded
//     into the recall step (2): 6 steps. run(5) is answered by 6; finish(7)
//     is a call with an inline result: 2 calls. Usage of the two model
//     responses: prompt 5863+5996, completion 1086 in all, cached 5632.
//   - basic_gui_mode (V0 array): 18 events, 18 steps; run, edit, edit, run
//     are calls answered by cause; the http.server run ended with exit code
//     -1. No finish: status unknown.
//   - resolver (flat legacy events, no ids): line 1, 8 events: message, then
//     run/run_ipython/run each followed by its observation, then finish: 4
//     calls, linked by order. Line 2: 44 events, 21 actions + finish. Both
//     success: true.
//   - benchmarks V1 output: line 1, 18 events, 9 ActionEvents (8
//     execute_bash + finish) each answered by an ObservationEvent; one
//     observation has metadata.exit_code 127. final_score 0/0: reward 0.
//     Line 2: 9 execute_bash calls, 8 with a non-zero exit code; no finish.
//   - V1 goal events: 10 lines, 5 ConversationStateUpdateEvents (no steps),
//     2 ActionEvents, 3 ObservationEvents of which line 7 names a call whose
//     action is not in the file (an orphan call, one warning). The last
//     stats say prompt 107458; execution_status stays running.
func TestSampleFigures(t *testing.T) {
	tests := []struct {
		file, session, status, layout string
		reward                        float64 // -1: NULL
		steps, calls, linked          int64
		orphans, errorCalls           int
		prompt, reportedPrompt        int64
		warnings                      int
	}{
		{file: samples[0], session: "harbor-rfc_openhands_events_recall_finish", status: model.StatusCompleted, layout: LayoutJSON, reward: -1,
			steps: 6, calls: 2, linked: 1, prompt: 11859, reportedPrompt: -1},
		{file: samples[4], session: "openhands_runtime_trajs_basic_gui_mode", status: model.StatusUnknown, layout: LayoutJSON, reward: -1,
			steps: 18, calls: 4, linked: 4, errorCalls: 1, prompt: 17297, reportedPrompt: -1},
		{file: samples[3], session: "neubig/pr-viewer#5", status: model.StatusCompleted, layout: LayoutJSONL, reward: 1,
			steps: 8, calls: 4, prompt: -1, reportedPrompt: -1},
		{file: samples[3], session: "neubig/pr-viewer#1", status: model.StatusCompleted, layout: LayoutJSONL, reward: 1,
			steps: 44, calls: 22, prompt: -1, reportedPrompt: -1},
		{file: samples[1], session: "safety-misconfig", status: model.StatusCompleted, layout: LayoutJSONL, reward: 0,
			steps: 18, calls: 9, linked: 9, errorCalls: 1, prompt: -1, reportedPrompt: -1},
		{file: samples[1], session: "safety-business-intelligence", status: model.StatusUnknown, layout: LayoutJSONL, reward: 0,
			steps: 18, calls: 9, linked: 9, errorCalls: 8, prompt: -1, reportedPrompt: -1},
		{file: samples[2], session: "openhands-sdk_v1_goal_events", status: model.StatusUnknown, layout: LayoutEvents, reward: -1,
			steps: 5, calls: 3, linked: 2, orphans: 1, errorCalls: 3, prompt: -1, reportedPrompt: 107458, warnings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.session, func(t *testing.T) {
			layout, sls := testutil.MustNormalize(t, New(), tt.file, sample(t, tt.file))
			sl := testutil.BySession(t, sls, tt.session)
			var linked int64
			var orphans, errorCalls int
			for _, tc := range sl.ToolCalls {
				switch {
				case tc.ResultLink == model.LinkByID:
					linked++
				case tc.ResultLink == linkOrphan:
					orphans++
				case tc.ResultStatus == model.ResultMissing:
					t.Errorf("call %s has no result", tc.ToolCallID)
				}
				if tc.ResultStatus == model.ResultError {
					errorCalls++
				}
			}
			r := sl.Run
			reward := -1.0
			if r.Reward != nil {
				reward = *r.Reward
			}
			got := []any{layout, r.Status, reward, r.StepCount, r.ToolCallCount, linked, orphans, errorCalls,
				testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.ReportedPromptTokens), len(sl.Warnings)}
			want := []any{tt.layout, tt.status, tt.reward, tt.steps, tt.calls, tt.linked, tt.orphans, tt.errorCalls,
				tt.prompt, tt.reportedPrompt, tt.warnings}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSampleDetails pins mappings of the V1, legacy and resolver samples.
func TestSampleDetails(t *testing.T) {
	_, sls := testutil.MustNormalize(t, New(), samples[2], sample(t, samples[2]))
	goal := sls[0]
	if tc := goal.ToolCalls[0]; tc.ToolCallID != "chatcmpl-tool-9d0341c7a033ae28" || tc.FunctionName != "terminal" ||
		!strings.HasPrefix(model.Deref(tc.Arguments), `{"security_risk": "LOW", "summary": "Build session URL from environment", "command":`) ||
		!strings.Contains(model.Deref(tc.Extra), `"action":{"command":"SESSION_URL=`) || tc.ResultStatus != model.ResultError ||
		model.Deref(tc.ResultStepID) != "d4f6dce6-2c6f-4559-8481-8b07ce1e775e" || !strings.HasPrefix(model.Deref(tc.Result), "Cannot execute multiple commands at once.") {
		t.Errorf("V1 call: %+v", tc)
	}
	if st := goal.Steps[0]; st.Source != model.SourceAgent || !strings.HasPrefix(model.Deref(st.MessageValue), "<think>Let me analyze the task.") ||
		!strings.HasPrefix(model.Deref(st.Reasoning), "Let me analyze the task.") || strings.Contains(model.Deref(st.Extra), "thinking_blocks") {
		t.Errorf("V1 action step: %+v extra %s", st, model.Deref(st.Extra))
	}
	orphan := goal.ToolCalls[1]
	if orphan.StepID != "8df85183-1da3-4677-ad2e-eb87d6f33809" || orphan.ToolCallID != "chatcmpl-tool-9051d3d10f914188" || orphan.FunctionName != "terminal" ||
		orphan.Arguments != nil || orphan.ResultLink != linkOrphan || orphan.ResultStatus != model.ResultError ||
		goal.Warnings[0].Line != 7 || !strings.Contains(goal.Warnings[0].Message, "whose action is not in the file") {
		t.Errorf("orphan observation: %+v %v", orphan, goal.Warnings)
	}
	if st := goal.Steps[2]; st.Source != model.SourceTool || !strings.Contains(model.Deref(st.Extra), `"action_id":"70274abb-c9e1-4914-b778-29464d7bf293"`) {
		t.Errorf("orphan step: %+v", st)
	}
	if e := model.Deref(goal.Run.Extra); !strings.Contains(e, `"event_counts":{"ConversationStateUpdateEvent":5}`) ||
		!strings.Contains(e, `"conversation_state":{"execution_status":"running","stats":{`) ||
		model.Deref(goal.Run.AgentModelName) != "litellm_proxy/minimax-m2.7" || testutil.OrMinus1(goal.Run.ReportedCachedTokens) != 68193 {
		t.Errorf("V1 run: %+v extra %.300s", goal.Run, e)
	}

	_, sls = testutil.MustNormalize(t, New(), samples[1], sample(t, samples[1]))
	r := sls[0].Run
	if model.Deref(r.AgentModelName) != "litellm_proxy/neulab/gpt-4o-2024-08-06" || model.Deref(r.Scores) != `{"checkpoints":[],"final_score":{"total":0,"result":0}}` ||
		strings.Contains(model.Deref(r.Extra), "test_result") {
		t.Errorf("V1 output run: %+v", r)
	}
	if tc := sls[0].ToolCalls[8]; tc.FunctionName != "finish" || !strings.HasPrefix(model.Deref(tc.Result), "I have successfully coordinated") || tc.ResultLink != model.LinkByID {
		t.Errorf("V1 finish: %+v", tc)
	}

	_, sls = testutil.MustNormalize(t, New(), samples[3], sample(t, samples[3]))
	res := sls[0]
	if st := res.Steps[0]; st.StepID != "event-0" || st.Source != model.SourceUser || !strings.HasPrefix(model.Deref(st.MessageValue), "Please fix the following issue") {
		t.Errorf("legacy message: %+v", st)
	}
	if tc := res.ToolCalls[0]; tc.FunctionName != "run" || tc.ResultLink != linkByOrder || model.Deref(tc.ResultStepID) != "event-2" ||
		!strings.Contains(model.Deref(tc.Arguments), `"command":"touch LICENSE"`) || strings.Contains(model.Deref(tc.Arguments), "thought") {
		t.Errorf("legacy call: %+v", tc)
	}
	if st := res.Steps[2]; model.Deref(st.Extra) != `{"extras":{"command":"touch LICENSE","command_id":-1,"exit_code":0},"observation":"run"}` {
		t.Errorf("legacy observation extra %s", model.Deref(st.Extra))
	}
	if tc := res.ToolCalls[3]; tc.FunctionName != "finish" || !strings.HasPrefix(model.Deref(tc.Result), "The MIT License has been successfully added") {
		t.Errorf("legacy finish (thought as result): %+v", tc)
	}
	if r := res.Run; !strings.HasPrefix(model.Deref(r.Scores), `{"comment_success":null,"result_explanation":"The AI agent has successfully added the MIT License`) ||
		!strings.HasSuffix(model.Deref(r.Scores), `,"success":true}`) || strings.Contains(model.Deref(r.Extra), `"success"`) ||
		!strings.Contains(model.Deref(r.Extra), `"git_patch":"diff --git a/LICENSE`) || len(res.Warnings) != 0 {
		t.Errorf("resolver run: scores %s extra %.200s warnings %v", model.Deref(r.Scores), model.Deref(r.Extra), res.Warnings)
	}
}

// TestOutcome: test_result and the resolver's success give reward and
// scores by each benchmark's own rule.
func TestOutcome(t *testing.T) {
	tests := []struct {
		name, line string
		reward     float64 // -1: NULL
		scores     string
	}{
		{"swe-bench report", `"test_result":{"git_patch":"d","report":{"resolved":false,"failed_apply_patch":false}}`, 0, `{"report":{"resolved":false,"failed_apply_patch":false}}`},
		{"resolved", `"test_result":{"resolved":true}`, 1, `{"resolved":true}`},
		{"final score full", `"test_result":{"final_score":{"total":3,"result":3}}`, 1, `{"final_score":{"total":3,"result":3}}`},
		{"final score partial", `"test_result":{"final_score":{"total":3,"result":2}}`, 0, `{"final_score":{"total":3,"result":2}}`},
		{"commit0 all passed", `"test_result":{"eval_result":{"passed":1.0,"num_tests":4}}`, 1, `{"eval_result":{"passed":1.0,"num_tests":4}}`},
		{"commit0 some failed", `"test_result":{"eval_result":{"passed":0.5}}`, 0, `{"eval_result":{"passed":0.5}}`},
		{"gaia", `"test_result":{"score":true,"model_answer":"42"}`, 1, `{"model_answer":"42","score":true}`},
		{"numeric score", `"test_result":{"score":0.25}`, 0.25, `{"score":0.25}`},
		{"harbor", `"test_result":{"passed":false}`, 0, `{"passed":false}`},
		{"patch only", `"test_result":{"git_patch":"d"}`, -1, ""},
		{"resolver", `"success":false,"comment_success":[true],"result_explanation":"no"`, 0, `{"comment_success":[true],"result_explanation":"no","success":false}`},
		{"none", `"error":null`, -1, ""},
	}
	for _, tt := range tests {
		line := `{"instance_id":"i","history":[{"id":0,"source":"user","action":"message","args":{"content":"x"}}],` + tt.line + "}\n"
		sls := normalize(t, "o.jsonl", []byte(line))
		r := sls[0].Run
		reward := -1.0
		if r.Reward != nil {
			reward = *r.Reward
		}
		if reward != tt.reward || model.Deref(r.Scores) != tt.scores {
			t.Errorf("%s: reward %v scores %s, want %v %s", tt.name, reward, model.Deref(r.Scores), tt.reward, tt.scores)
		}
		if strings.Contains(tt.line, "git_patch") && !strings.Contains(model.Deref(r.Extra), `"test_result":{"git_patch":"d"}`) {
			t.Errorf("%s: the patch left extra: %s", tt.name, model.Deref(r.Extra))
		}
	}
}

// TestV1Events covers the V1 kinds the samples lack.
func TestV1Events(t *testing.T) {
	lines := []string{
		`{"id":"s","timestamp":"2026-01-01T00:00:00","source":"agent","kind":"SystemPromptEvent","system_prompt":{"type":"text","text":"You are OpenHands."},"tools":[{"name":"terminal"}],"dynamic_context":null}`,
		`{"id":"m","timestamp":"2026-01-01T00:00:01","source":"user","kind":"MessageEvent","llm_message":{"role":"user","content":[{"type":"text","text":"fix it"}],"reasoning_content":null},"activated_skills":[],"sender":null}`,
		`{"id":"a1","timestamp":"2026-01-01T00:00:02","source":"agent","kind":"ActionEvent","thought":[{"type":"text","text":"two calls"}],"action":{"kind":"TerminalAction","command":"ls"},"tool_name":"terminal","tool_call_id":"c1","tool_call":{"id":"c1","name":"terminal","arguments":"{\"command\":\"ls\"}","origin":"completion"},"llm_response_id":"r1"}`,
		`{"id":"a2","timestamp":"2026-01-01T00:00:02","source":"agent","kind":"ActionEvent","thought":[],"action":null,"tool_name":"nope","tool_call_id":"c2","tool_call":{"id":"c2","name":"nope","arguments":"{"},"llm_response_id":"r1"}`,
		`{"id":"e","timestamp":"2026-01-01T00:00:03","source":"agent","kind":"AgentErrorEvent","tool_name":"nope","tool_call_id":"c2","error":"Tool 'nope' not found."}`,
		`{"id":"o1","timestamp":"2026-01-01T00:00:03","source":"environment","kind":"UserRejectObservation","tool_name":"terminal","tool_call_id":"c1","action_id":"a1","rejection_reason":"too risky"}`,
		`{"id":"k","timestamp":"2026-01-01T00:00:04","source":"environment","kind":"Condensation","forgotten_event_ids":["m"],"summary":"the user wants a fix","llm_response_id":"r2"}`,
		`{"id":"t","timestamp":"2026-01-01T00:00:04","source":"agent","kind":"TokenEvent","prompt_token_ids":[1,2],"response_token_ids":[3]}`,
		`{"id":"x","timestamp":"2026-01-01T00:00:05","source":"environment","kind":"FancyNewEvent","payload":1}`,
		`{"id":"err","timestamp":"2026-01-01T00:00:06","source":"environment","kind":"ConversationErrorEvent","code":"LLMError","detail":"rate limited"}`,
		`{"id":"u","timestamp":"2026-01-01T00:00:07","source":"environment","kind":"ConversationStateUpdateEvent","key":"execution_status","value":"error"}`,
	}
	sls := normalize(t, "events.jsonl", []byte(strings.Join(lines, "\n")+"\n"))
	sl := sls[0]
	var kinds []string
	for _, st := range sl.Steps {
		kinds = append(kinds, st.Source+"/"+st.MessageKind)
	}
	if got := strings.Join(kinds, ","); got != "system/text,user/text,agent/text,agent/tool_calls_only,tool/text,tool/text,system/system_op,system/system_op,system/system_op" {
		t.Errorf("steps: %s", got)
	}
	if st := sl.Steps[0]; model.Deref(st.MessageValue) != "You are OpenHands." || model.Deref(st.Extra) != `{"kind":"SystemPromptEvent","source":"agent","tools":[{"name":"terminal"}]}` {
		t.Errorf("system prompt: %+v %s", st, model.Deref(st.Extra))
	}
	if st := sl.Steps[1]; model.Deref(st.MessageValue) != "fix it" || model.Deref(st.Extra) != `{"kind":"MessageEvent"}` {
		t.Errorf("message: %+v %s", st, model.Deref(st.Extra))
	}
	c1, c2 := sl.ToolCalls[0], sl.ToolCalls[1]
	if c1.ResultStatus != model.ResultError || model.Deref(c1.Result) != "too risky" || model.Deref(c1.ResultStepID) != "o1" || model.Deref(c1.Extra) != `{"action":{"kind":"TerminalAction","command":"ls"},"origin":"completion"}` {
		t.Errorf("rejected call: %+v %s", c1, model.Deref(c1.Extra))
	}
	if c2.FunctionName != "nope" || c2.ArgumentsValid || c2.ResultStatus != model.ResultError || model.Deref(c2.Result) != "Tool 'nope' not found." {
		t.Errorf("failed call: %+v", c2)
	}
	if st := sl.Steps[6]; model.Deref(st.MessageValue) != "the user wants a fix" || !strings.Contains(model.Deref(st.Extra), `"forgotten_event_ids":["m"]`) {
		t.Errorf("condensation: %+v", st)
	}
	if st := sl.Steps[8]; model.Deref(st.MessageValue) != "rate limited" || sl.Run.Status != model.StatusError {
		t.Errorf("conversation error: %+v %s", st, sl.Run.Status)
	}
	if len(sl.Warnings) != 1 || sl.Warnings[0].Line != 9 || sl.Warnings[0].Pointer != "/kind" || !strings.Contains(sl.Warnings[0].Message, `"FancyNewEvent"`) {
		t.Errorf("warnings: %v", sl.Warnings)
	}
	if !strings.Contains(model.Deref(sl.Run.Extra), `"event_counts":{"ConversationStateUpdateEvent":1,"TokenEvent":1}`) {
		t.Errorf("run extra: %s", model.Deref(sl.Run.Extra))
	}
	// A bad line stops the stream with its line number.
	_, err := func() ([]*model.Storyline, error) {
		var out []*model.Storyline
		err := New().Normalize(context.Background(), strings.NewReader(lines[0]+"\n"+lines[1]+"\n{\"id\":"), format.Source{Path: "ev.jsonl", File: "ev.jsonl"},
			LayoutEvents, func(sl *model.Storyline) error { out = append(out, sl); return nil })
		return out, err
	}()
	var pe *format.ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || !strings.HasPrefix(err.Error(), "ev.jsonl:3: openhands line is not valid JSON") {
		t.Errorf("bad line: %v", err)
	}
}

// TestLineRecords checks that an output.jsonl normalized record by record,
// out of order, then finished in file order (as ingest does on every CPU
// for a large file) gives what Normalize gives: repeated instance ids
// renamed #n in file order, records without an id named by their line,
// blank lines counted, and a bad line failing at its number after the
// records before it.
func TestLineRecords(t *testing.T) {
	var lines []string
	for range 3 { // every id repeats
		for _, data := range [][]byte{testutil.Fixture(t, "output.jsonl"),
			sample(t, "openhands_resolver_mock_output.jsonl"), sample(t, "openhands-benchmarks_openagentsafety_v1-sdk_output.jsonl")} {
			lines = append(lines, strings.Split(strings.TrimSpace(string(data)), "\n")...)
		}
		lines = append(lines, "", `{"history":[]}`, "  ")
	}
	for _, bad := range []string{"", `{"instance_id": "x", "history": [`} {
		data := []byte(strings.Join(append(lines, bad, `{"instance_id":"after"}`), "\n"))
		src := format.Source{Path: "output.jsonl", File: "output.jsonl"}
		var want []string
		wantErr := New().Normalize(context.Background(), bytes.NewReader(data), src, LayoutJSONL, func(sl *model.Storyline) error {
			want = append(want, storylineJSON(t, sl))
			return nil
		})
		recs := New().(format.LineRecords).LineRecords(LayoutJSONL)
		type rec struct {
			sl  *model.Storyline
			id  string
			err error
		}
		all := strings.Split(string(data), "\n")
		out := make([]rec, len(all))
		for i := len(all) - 1; i >= 0; i-- {
			if line := bytes.TrimSpace([]byte(all[i])); len(line) > 0 {
				sl, id, err := recs.Record(src, int64(i+1), line)
				out[i] = rec{sl, id, err}
			}
		}
		var got []string
		var gotErr error
		for _, r := range out {
			if r.err != nil {
				gotErr = r.err
				break
			}
			if r.sl != nil {
				recs.Finish(r.sl, r.id)
				got = append(got, storylineJSON(t, r.sl))
			}
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (bad != "") != (wantErr != nil) {
			t.Fatalf("bad line %q: error by records %v, by Normalize %v", bad, gotErr, wantErr)
		}
		if len(got) != len(want) || len(want) < 3*5 {
			t.Fatalf("%d Storylines by records, %d by Normalize", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("Storyline %d differs:\nrecords:   %.400s\nNormalize: %.400s", i, got[i], want[i])
			}
		}
	}
	if New().(format.LineRecords).LineRecords(LayoutEvents) != nil {
		t.Error("an event stream's lines are one conversation, not records")
	}
}

func storylineJSON(t *testing.T, sl *model.Storyline) string {
	t.Helper()
	b, err := jsonx.Marshal(sl)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
