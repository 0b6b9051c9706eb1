package tau

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

const (
	tauSample   = "tool-calling-deepseek-v3-0.0_range_0-1_user-gpt-4o-human_0612073827.json"
	hotel       = "oscaralvaro_2026-04-04T13-13-08.148739_hotel_calle_llm_agent_gemma-3-27b-it_user_simulator_gemma-3-12b-it.json"
	restaurante = "oscaralvaro_resultados_restaurante_joaquin_cachay_full_throttled.json"
	salud       = "oscaralvaro_salud_mendoza_rag_demo_1.json"
	voiceSim    = "49b22f0c-4a56-41c5-922f-bc2a56e53a23.json"
	fixtureName = "tool-calling-gpt-4o-0.0_range_0-3_user-gpt-4o-llm_0101120000.json"
)

func TestGolden(t *testing.T) {
	testutil.GoldenSamples(t, New(), "tau-bench", tauSample)
	testutil.GoldenSamples(t, New(), "tau2-bench", hotel, restaurante, salud)
	testutil.GoldenSamples(t, New(), "tau2-bench/voice_experiment", "results.json")
	testutil.GoldenSamples(t, New(), "tau2-bench/voice_experiment/simulations", voiceSim)
	testutil.GoldenFixtures(t, New(), fixtureName)
}

// figures is what one Storyline's rows are checked against.
type figures struct {
	session, status                  string
	reward                           float64 // -1: NULL
	steps, calls, userCalls, errored int
	prompt                           int64 // -1: NULL
}

func figuresOf(sl *model.Storyline) figures {
	f := figures{session: sl.Run.SessionID, status: sl.Run.Status, reward: -1, steps: int(sl.Run.StepCount), calls: int(sl.Run.ToolCallCount),
		prompt: testutil.OrMinus1(sl.Run.PromptTokens)}
	if sl.Run.Reward != nil {
		f.reward = *sl.Run.Reward
	}
	source := map[string]string{}
	for _, st := range sl.Steps {
		source[st.StepID] = st.Source
	}
	for _, tc := range sl.ToolCalls {
		if source[tc.StepID] == model.SourceUser {
			f.userCalls++
		}
		if tc.ResultStatus == model.ResultError {
			f.errored++
		}
	}
	return f
}

// TestSampleFigures: counted by hand from the files (messages, tool_calls
// per role, tool messages with error: true, reward_info.reward, and the
// assistant messages' usage.prompt_tokens summed).
func TestSampleFigures(t *testing.T) {
	tests := []struct {
		family, name, layout string
		want                 []figures
	}{
		// τ-bench: one element, traj [], info.error (the human user
		// strategy had no stdin): run.py wrote reward 0.0.
		{"tau-bench", tauSample, LayoutResults, []figures{{"task-0-trial-0", model.StatusError, 0, 0, 0, 0, 0, -1}}},
		// 10 tasks, 3 simulations of 18, 14, 14 messages; 3 agent calls
		// each, 2 tool errors in the first.
		{"tau2-bench", hotel, LayoutTau2, []figures{
			{"afb1e583-8052-4770-915c-a83e0a975c9a", model.StatusCompleted, 0, 18, 3, 0, 2, 16046},
			{"b5ee85bc-b0f2-402c-be52-b5d7ac33fc3f", model.StatusCompleted, 1, 14, 3, 0, 0, 12353},
			{"fc077496-3734-45dc-a1b9-e9af2c204897", model.StatusCompleted, 1, 14, 3, 0, 0, 14721},
		}},
		{"tau2-bench", salud, LayoutTau2, nil},
		// The directory layout's results.json holds no simulations.
		{"tau2-bench/voice_experiment", "results.json", LayoutTau2, nil},
		// 973 ticks: 15 agent and 11 user utterances (runs of chunks with
		// contains_speech), no text, no calls, no reward_info.
		{"tau2-bench/voice_experiment/simulations", voiceSim, LayoutTau2Sim, []figures{
			{"49b22f0c-4a56-41c5-922f-bc2a56e53a23", model.StatusCompleted, -1, 26, 0, 0, 0, -1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout, sls := testutil.MustNormalize(t, New(), tt.name, testutil.Sample(t, tt.family+"/"+tt.name))
			if layout != tt.layout || len(sls) != len(tt.want) {
				t.Fatalf("layout %q, %d Storylines", layout, len(sls))
			}
			for i, sl := range sls {
				if got := figuresOf(sl); got != tt.want[i] {
					t.Errorf("Storyline %d = %+v, want %+v", i, got, tt.want[i])
				}
			}
		})
	}
}

// TestRestauranteFigures: 12 simulations, 42 tool calls of which 8 were
// made by the simulated user (add_item_to_cart ×5, request_payment ×2,
// submit_order ×1), 11 tool results with error: true; rewards eleven 1 and
// one 0 (Σ 11); every simulation ended by user_stop.
func TestRestauranteFigures(t *testing.T) {
	_, sls := testutil.MustNormalize(t, New(), restaurante, testutil.Sample(t, "tau2-bench/"+restaurante))
	var calls, userCalls, errored, completed int
	var reward float64
	userFns := map[string]int{}
	for _, sl := range sls {
		f := figuresOf(sl)
		calls, userCalls, errored = calls+f.calls, userCalls+f.userCalls, errored+f.errored
		reward += f.reward
		if f.status == model.StatusCompleted {
			completed++
		}
		source := map[string]string{}
		for _, st := range sl.Steps {
			source[st.StepID] = st.Source
		}
		for _, tc := range sl.ToolCalls {
			if source[tc.StepID] == model.SourceUser {
				userFns[tc.FunctionName]++
				if !strings.Contains(model.Deref(tc.Extra), `"requestor":"user"`) {
					t.Errorf("user call %s: extra %s", tc.ToolCallID, model.Deref(tc.Extra))
				}
			}
			if tc.ResultLink != model.LinkByID {
				t.Errorf("call %s: link %s", tc.ToolCallID, tc.ResultLink)
			}
		}
		if model.Deref(sl.Run.AgentModelName) != "gemini/gemma-3-27b-it" || model.Deref(sl.Run.AgentName) != "llm_agent" {
			t.Errorf("agent %v %v", model.Deref(sl.Run.AgentName), model.Deref(sl.Run.AgentModelName))
		}
	}
	if len(sls) != 12 || calls != 42 || userCalls != 8 || errored != 11 || reward != 11 || completed != 12 {
		t.Errorf("%d simulations, %d calls (%d by the user), %d errored, reward %v, %d completed", len(sls), calls, userCalls, errored, reward, completed)
	}
	if userFns["add_item_to_cart"] != 5 || userFns["request_payment"] != 2 || userFns["submit_order"] != 1 {
		t.Errorf("user calls %v", userFns)
	}
}

// TestFixtureFigures: the fixture is a τ-bench results file as run.py
// writes it for the tool-calling agent: task 0 graded 1.0 after 2 calls
// (the second answered "Error: user not found": an error), task 1 graded
// 0.0, task 2 out of steps (reward_info null: truncated, reward 0.0 as
// written), and task 0 again with trial 0 (a rerun appended to the same
// file), whose id is made unique.
func TestFixtureFigures(t *testing.T) {
	_, sls := testutil.MustNormalize(t, New(), fixtureName, testutil.Fixture(t, fixtureName))
	want := []figures{
		{"task-0-trial-0", model.StatusCompleted, 1, 8, 2, 0, 1, -1},
		{"task-1-trial-0", model.StatusCompleted, 0, 4, 0, 0, 0, -1},
		{"task-2-trial-0", model.StatusTruncated, 0, 4, 1, 0, 0, -1},
		{"task-0-trial-0#2", model.StatusCompleted, 1, 4, 0, 0, 0, -1},
	}
	if len(sls) != len(want) {
		t.Fatalf("%d Storylines", len(sls))
	}
	for i, sl := range sls {
		if got := figuresOf(sl); got != want[i] {
			t.Errorf("Storyline %d = %+v, want %+v", i, got, want[i])
		}
	}
	first := sls[0]
	tc := first.ToolCalls[0]
	if tc.FunctionName != "find_user_id_by_name_zip" || model.Deref(tc.Arguments) != `{"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}` ||
		!tc.ArgumentsValid || model.Deref(tc.ResultStepID) != "3" || model.Deref(tc.Result) != "yusuf_rossi_9620" {
		t.Errorf("call 0: %+v", tc)
	}
	if !strings.Contains(model.Deref(first.Run.Scores), `"r_actions":1`) || first.Steps[2].MessageKind != "tool_calls_only" ||
		first.ToolCalls[1].ResultStatus != model.ResultError {
		t.Errorf("scores %s, step 2 %+v", model.Deref(first.Run.Scores), first.Steps[2])
	}
	if sls[3].Run.OriginalSessionID == nil || *sls[3].Run.OriginalSessionID != "task-0-trial-0" {
		t.Errorf("repeated id: %+v", sls[3].Run)
	}
	if w := sls[2].Warnings; len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"r.json", `[{"task_id":0,"reward":1.0,"info":{},"traj":[],"trial":0}]`, LayoutResults},
		{"r.json", `{"timestamp":"t","info":{"git_commit":"c","num_trials":1,"user_info":{},"agent_info":{}},"tasks":[],"simulations":[]}`, LayoutTau2},
		{"s.json", `{"id":"x","task_id":"1","timestamp":"t","start_time":"a","end_time":"b","duration":1,"termination_reason":"user_stop","messages":[]}`, LayoutTau2Sim},
		// τ² task definitions and split files are not runs.
		{"tasks.json", `[{"id":"0","description":null,"user_scenario":{},"evaluation_criteria":{"actions":[]}}]`, ""},
		{"split_tasks.json", `{"train":["0"],"test":["1"],"base":["0","1"]}`, ""},
		// An info without the run's git commit and participants is not τ².
		{"x.json", `{"timestamp":"t","info":{"version":"1"},"tasks":[]}`, ""},
		{"x.json", `[{"task_id":0,"reward":1.0,"info":{}}]`, ""},
		{"chat.json", `{"messages":[{"role":"user","content":"hi"}]}`, ""},
	}
	for _, tt := range tests {
		got, ok := New().Detect(format.NewProbe(tt.name, []byte(tt.data), false))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", tt.data, got, ok, tt.want)
		}
	}
	for _, neg := range []string{"tau2-bench_airline_tasks.json", "tau2-bench_airline_split_tasks.json"} {
		data := testutil.Sample(t, "negatives/"+neg)
		if layout, ok := New().Detect(format.NewProbe(neg, data[:min(len(data), format.DefaultMaxDetectionBytes)], len(data) > format.DefaultMaxDetectionBytes)); ok {
			t.Errorf("%s claimed as %s", neg, layout)
		}
	}
}

// TestTicks: a full-duplex simulation's speech becomes one step per
// utterance, with its text, and tool calls made in a tick belong to the
// participant's utterance (a step of their own when it is silent).
func TestTicks(t *testing.T) {
	doc := `{"id":"v","task_id":"1","start_time":"2026-01-01T00:00:00","end_time":"2026-01-01T00:00:01","termination_reason":"agent_stop","mode":"full_duplex","ticks":[
	{"tick_id":0,"timestamp":"2026-01-01T00:00:00.0","agent_chunk":{"role":"assistant","content":"Hel","contains_speech":true},"user_chunk":{"role":"user","contains_speech":false}},
	{"tick_id":1,"timestamp":"2026-01-01T00:00:00.1","agent_chunk":{"role":"assistant","content":"lo","contains_speech":true},"user_chunk":null},
	{"tick_id":2,"timestamp":"2026-01-01T00:00:00.2","agent_chunk":{"role":"assistant","contains_speech":false},"user_chunk":{"role":"user","contains_speech":true},"user_transcript":"my id is 7",
	 "agent_tool_calls":[{"id":"c1","name":"get_user","arguments":{"id":"7"},"requestor":"assistant"}],
	 "agent_tool_results":[{"id":"c1","role":"tool","content":"{\"name\":\"Ann\"}","requestor":"assistant","error":false}]},
	{"tick_id":3,"timestamp":"2026-01-01T00:00:00.3","user_chunk":{"role":"user","contains_speech":true},
	 "user_tool_calls":[{"id":"c2","name":"toggle_airplane_mode","arguments":{},"requestor":"user"}],
	 "user_tool_results":[{"id":"c2","role":"tool","content":"done","requestor":"user","error":true}]}]}`
	_, sls := testutil.MustNormalize(t, New(), "v.json", []byte(doc))
	sl := sls[0]
	var got []string
	for _, st := range sl.Steps {
		got = append(got, st.StepID+"/"+st.Source+"/"+st.MessageKind+"/"+model.Deref(st.MessageValue))
	}
	want := "tick-0-agent/agent/text/Hello,tick-2-agent-calls/agent/tool_calls_only/,tick-2-agent-result-0/tool/text/{\"name\":\"Ann\"},tick-2-user/user/text/my id is 7,tick-3-user-result-0/tool/text/done"
	if strings.Join(got, ",") != want {
		t.Errorf("steps\n%s\nwant\n%s", strings.Join(got, ","), want)
	}
	if len(sl.ToolCalls) != 2 || sl.ToolCalls[1].StepID != "tick-2-user" || sl.ToolCalls[1].ResultStatus != model.ResultError ||
		sl.ToolCalls[0].ResultStatus != model.ResultOK || model.Deref(sl.Steps[0].Extra) != `{"tick_end":1,"tick_start":0}` {
		t.Errorf("calls %+v\nsteps %+v", sl.ToolCalls, sl.Steps)
	}
}

// TestBrokenDocument: a results file that is not JSON fails with an error
// naming the file and the line of the fault.
func TestBrokenDocument(t *testing.T) {
	data := []byte("[\n  {\"task_id\": 0, \"reward\": 1.0, \"info\": {}, \"traj\": [ oops ]}\n]")
	err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "results/x.json", File: "x"}, LayoutResults,
		func(*model.Storyline) error { return nil })
	var pe *format.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || !strings.HasPrefix(err.Error(), "results/x.json:2: tau-bench: invalid JSON at column") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzNormalize: any input, under every layout, normalizes into
// Storylines that keep testutil.CheckStoryline's invariants or fails with
// a ParseError, and never panics.
func FuzzNormalize(f *testing.F) {
	f.Add(testutil.Sample(f, "tau-bench/"+tauSample))
	f.Add(testutil.Sample(f, "tau2-bench/"+hotel))
	f.Add(testutil.Fixture(f, fixtureName))
	f.Add([]byte(`{"id":"v","task_id":"1","start_time":1,"end_time":null,"termination_reason":"x","ticks":[{"tick_id":"a","agent_chunk":{},"agent_tool_calls":[1,{}],"user_tool_results":[{"id":null}]},3]}`))
	f.Add([]byte(`{"info":{"agent_info":[]},"simulations":[{"messages":[{"role":"tool","tool_messages":[{"id":"x"},2]},{"role":"bot","tool_calls":{}}]}]}`))
	f.Add([]byte(`[{"task_id":"t","reward":"high","info":{"error":1,"reward_info":null},"traj":[{"role":"assistant","tool_calls":[{"function":{"name":1,"arguments":"{"}}]},7],"trial":null}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, layout := range []string{LayoutResults, LayoutTau2, LayoutTau2Sim} {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s: error is not a ParseError: %v", layout, err)
			}
		}
	})
}
