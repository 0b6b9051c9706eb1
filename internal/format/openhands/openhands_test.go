package openhands

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// fixtures are synthetic files written after the OpenHands event stream
// (no licensed real sample exists): an evaluation output.jsonl with two
// instances (one resolved and finished, one that failed with an error)
// and a saved trajectory array.
var fixtures = []string{"output.jsonl", "trajectory-ipython.json"}

func normalize(t testing.TB, name string, data []byte) []*model.Storyline {
	t.Helper()
	_, sls := testutil.MustNormalize(t, New(), name, data)
	return sls
}

func TestGolden(t *testing.T) { testutil.GoldenFixtures(t, New(), fixtures...) }

// TestFigures asserts figures computed by hand from the fixtures.
//
// output.jsonl line 1 (django__django-11099): 13 events → 13 steps; the
// actions run(3), edit(5), think(6), run(9) give 4 calls, all answered
// (observations 4, 7, 8, 10); observation 4 has exit_code 1 → 1 error.
// Tokens per model_response id: chatcmpl-1 5200/120/4800, chatcmpl-2
// (edit + think, counted once) 5600/210/5100, chatcmpl-3 6100/95/5600,
// chatcmpl-4 (finish) 6300/60/6000 → prompt 23200, completion 485, cached
// 21500. finish → completed.
// Line 2 (astropy__astropy-12907): 5 steps, run(1) answered by an error
// observation, run(3) unanswered (1 warning); no usage; error → status
// error.
// trajectory-ipython.json: 8 steps; recall(1) answered by the recall
// observation, run_ipython(3) by observation 4; resp-1 1500/40, no cached.
func TestFigures(t *testing.T) {
	tests := []struct {
		file, session, sources, status, agent, model string
		steps, calls, linked, errorCalls, missing    int64
		prompt, completion, cached                   int64
		warnings                                     int
	}{
		{file: "output.jsonl", session: "django__django-11099",
			sources: "system,user,system,agent,tool,agent,agent,tool,tool,agent,tool,agent,system",
			steps:   13, calls: 4, linked: 4, errorCalls: 1, prompt: 23200, completion: 485, cached: 21500,
			status: model.StatusCompleted, agent: "CodeActAgent", model: "anthropic/claude-3-5-sonnet-20241022"},
		{file: "output.jsonl", session: "astropy__astropy-12907", sources: "user,agent,tool,agent,system",
			steps: 5, calls: 2, linked: 1, errorCalls: 1, missing: 1, prompt: -1, completion: -1, cached: -1, warnings: 1,
			status: model.StatusError, agent: "CodeActAgent", model: "openai/gpt-4o"},
		{file: "trajectory-ipython.json", session: "trajectory-ipython", sources: "user,user,tool,agent,tool,agent,system,system",
			steps: 8, calls: 2, linked: 2, prompt: 1500, completion: 40, cached: -1,
			status: model.StatusUnknown, agent: "openhands", model: "gpt-4o-2024-08-06"},
	}
	for _, tt := range tests {
		t.Run(tt.session, func(t *testing.T) {
			var sl *model.Storyline
			for _, s := range normalize(t, tt.file, testutil.Fixture(t, tt.file)) {
				if s.Run.SessionID == tt.session {
					sl = s
				}
			}
			if sl == nil {
				t.Fatalf("no Storyline %q", tt.session)
			}
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
		!strings.Contains(model.Deref(fin.Extra), `"task_completed":"true"`) {
		t.Errorf("finish step: %+v extra %s", fin, model.Deref(fin.Extra))
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
	if tc := tr.ToolCalls[0]; tc.ToolCallID != "oh-1" || tc.FunctionName != "recall" || model.Deref(tc.ResultStepID) != "2" ||
		tr.Steps[1].Source != model.SourceUser {
		t.Errorf("recall call: %+v", tc)
	}
	if st := tr.Steps[6]; st.Source != model.SourceSystem || model.Deref(st.MessageValue) != "No observation" || len(tr.Warnings) != 0 {
		t.Errorf("null observation: %+v %v", st, tr.Warnings)
	}
	if st := tr.Steps[5]; !strings.Contains(model.Deref(st.Extra), `"llm_metrics":{"accumulated_cost":0.0042}`) ||
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
					!strings.Contains(model.Deref(sl.Steps[0].Extra), `"outputs":{"x":1}`) || model.Deref(sl.Run.Extra) != `{"extra":true}` {
					t.Errorf("%+v %+v", sl.Run, sl.Steps)
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
	f.Add([]byte(`{"history":[{"id":1,"source":"agent","action":"run","tool_call_metadata":{"model_response":{"usage":null}}},{"id":2,"observation":"run","cause":1,"extras":[]}]}`))
	f.Add([]byte(`[{"id":"a","source":"user","action":"message","args":{"content":[{"type":"image","data":1}]}},null,{"observation":"error","cause":"a"}]`))
	f.Add([]byte("null\n[]\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.jsonl", data, false))
		for _, layout := range []string{LayoutJSONL, LayoutJSON} {
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
					return nil
				})
			var pe *format.ParseError
			if err != nil && (!errors.As(err, &pe) || (layout == LayoutJSONL && pe.Line == 0)) {
				t.Fatalf("%s: error is not a located ParseError: %v", layout, err)
			}
		}
	})
}
