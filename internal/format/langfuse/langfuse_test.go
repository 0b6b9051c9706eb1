package langfuse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

const (
	claudeAgent  = "langfuse_claude-agent-2025-12-22.trace.json"
	openaiAgents = "langfuse_openai-agents-2025-09-30.trace.json"
	pydanticAI   = "langfuse_pydantic-ai-tools-2025-12-04.trace.json"
)

func TestGolden(t *testing.T) {
	testutil.GoldenSamples(t, New(), "langfuse", claudeAgent, openaiAgents, pydanticAI)
}

// figures is what one Storyline is checked against.
type figures struct {
	session, parent, agent string
	steps, calls           int64
	prompt, completion     int64 // -1: NULL
	links                  string
}

func figuresOf(sl *model.Storyline) figures {
	r := sl.Run
	var links []string
	for _, tc := range sl.ToolCalls {
		links = append(links, tc.ResultLink)
	}
	return figures{r.SessionID, model.Deref(r.ParentSessionID), model.Deref(r.AgentName), r.StepCount, r.ToolCallCount,
		testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens), strings.Join(links, ",")}
}

// TestSampleFigures, counted by hand from the files' top-level
// observations:
//   - Claude Agent SDK: 4 GENERATION (usage input 19+5+5+5, output
//     29+53+56+94), 2 TOOL with no call id (linked by name to the two
//     tool_use blocks), 1 SPAN (the conversation, the root): 1 user turn +
//     4 agent + 2 tool steps; scores correctness 0, hallucination 1,
//     toxicity 0.
//   - OpenAI Agents SDK: the root AGENT "Agent workflow" holds the AGENT
//     "Hello world" (a subagent: 1 user turn, 2 generations with input
//     55+85 and output 15+29, 1 TOOL linked by name to the Responses
//     function_call).
//   - Pydantic AI: the root SPAN holds three agent runs (gen_ai.agent.name):
//     joke_agent with 2 generations and 3 TOOL spans (linked by
//     gen_ai.tool.call.id) under "running 3 tools"; joke_agent again, given
//     the first run's messages (only its new user turn is its own); the
//     evaluator, whose final_result output tool has no TOOL span.
func TestSampleFigures(t *testing.T) {
	const pyd = "7a38edd8123db47ad8dcb8aa4c5e3926"
	tests := []struct {
		name   string
		want   []figures
		scores string
	}{
		{claudeAgent, []figures{{"097f1d8982fa909b8cffb14a166ec272", "", "claude.conversation", 7, 2, 34, 232, "name,name"}},
			`{"correctness":0,"hallucination":1,"toxicity":0}`},
		{openaiAgents, []figures{
			{"fee618f96dc31e0ca38b2f7b26eb8b29", "", "Agent workflow", 1, 0, -1, -1, ""},
			{"fee618f96dc31e0ca38b2f7b26eb8b29/d950b668796240b5", "fee618f96dc31e0ca38b2f7b26eb8b29", "Hello world", 4, 1, 140, 44, "name"},
		}, `{"hallucination":0,"toxicity":0.8}`},
		{pydanticAI, []figures{
			{pyd, "", "joke-generator", 3, 0, -1, -1, ""},
			{pyd + "/5b5c52d029f28206", pyd, "joke_agent", 7, 3, 265 + 417, 73 + 53, "id,id,id"},
			{pyd + "/49ae06cbfa06611f", pyd, "joke_agent", 2, 0, 502, 14, ""},
			{pyd + "/227eb5c856efa3d3", pyd, "evaluator_agent", 3, 1, 131, 69, "none"},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout, sls := testutil.MustNormalize(t, New(), tt.name, testutil.Sample(t, "langfuse/"+tt.name))
			if layout != LayoutExport || len(sls) != len(tt.want) {
				t.Fatalf("layout %s, %d Storylines", layout, len(sls))
			}
			for i, sl := range sls {
				if got := figuresOf(sl); got != tt.want[i] {
					t.Errorf("Storyline %d = %+v\nwant %+v", i, got, tt.want[i])
				}
				if sl.Run.Reward != nil {
					t.Errorf("Storyline %d: reward %v; Langfuse scores are evaluations, not a reward", i, *sl.Run.Reward)
				}
			}
			if got := model.Deref(sls[0].Run.Scores); got != tt.scores {
				t.Errorf("scores %s, want %s", got, tt.scores)
			}
		})
	}
	_, sls := testutil.MustNormalize(t, New(), claudeAgent, testutil.Sample(t, "langfuse/"+claudeAgent))
	calls := sls[0].ToolCalls
	if model.Deref(calls[0].Arguments) != `{"city":"Berlin"}` || model.Deref(calls[0].Result) != "Weather in Berlin: Cloudy, 59°F" ||
		calls[1].ToolCallID != "toolu_01NtVat4vJLFfVd5TqdLHcA7" || model.Deref(calls[1].Result) != "Weather in New York: Sunny, 75°F" {
		t.Errorf("calls %+v", calls)
	}
	if cost := sls[0].Run.CostUSD; cost == nil || fmt.Sprintf("%.6f", *cost) != "0.003582" {
		t.Errorf("cost %v", cost)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{"trace":{"id":"t","projectId":"p","timestamp":"2025-01-01T00:00:00Z","scores":[]},"observations":[]}`, LayoutExport},
		{`{"id":"t","projectId":"p","timestamp":"2025-01-01T00:00:00Z","name":"n","observations":[],"scores":[],"latency":1.2}`, LayoutTrace},
		// A trace without its project, or observations alone, is not proof.
		{`{"trace":{"id":"t","timestamp":"x"},"observations":[]}`, ""},
		{`{"observations":[{"id":"o","type":"GENERATION"}]}`, ""},
		{`{"id":"t","projectId":"p","timestamp":"x","observations":[]}`, ""},
		{`{"messages":[{"role":"user","content":"hi"}]}`, ""},
	}
	for _, tt := range tests {
		got, ok := New().Detect(format.NewProbe("x.json", []byte(tt.data), false))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", tt.data, got, ok, tt.want)
		}
	}
}

// TestBrokenExport: an export that is not JSON fails naming its line.
func TestBrokenExport(t *testing.T) {
	data := []byte("{\"trace\": {\"id\": \"t\", \"projectId\": \"p\", \"timestamp\": \"x\", \"scores\": []},\n \"observations\": [ oops ]}")
	err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "t.json", File: "t.json"}, LayoutExport,
		func(*model.Storyline) error { return nil })
	var pe *format.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || !strings.HasPrefix(err.Error(), "t.json:2: langfuse: invalid JSON at column") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzNormalize: any input, under both layouts, gives Storylines that keep
// testutil.CheckStoryline's invariants or a ParseError, and never panics.
func FuzzNormalize(f *testing.F) {
	f.Add(testutil.Sample(f, "langfuse/"+claudeAgent))
	f.Add(testutil.Sample(f, "langfuse/"+pydanticAI))
	f.Add([]byte(`{"trace":{"id":"t","observations":[{"id":"a","parentObservationId":"a","type":"AGENT"}]},"observations":[]}`))
	f.Add([]byte(`{"id":"t","observations":[{"id":"x","type":"AGENT","parentObservationId":"y"},{"id":"y","type":"AGENT","parentObservationId":"x"},` +
		`{"id":"g","type":"GENERATION","parentObservationId":"x","output":"{\"role\":1}","input":[null,{"parts":[7]}],"toolCalls":["{",{"id":2}]},` +
		`{"type":"TOOL","metadata":"{\"attributes\":\"{}\"}","level":"ERROR"}],"scores":[{"name":"s"},3]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, layout := range []string{LayoutExport, LayoutTrace} {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s: error is not a ParseError: %v", layout, err)
			}
		}
	})
}
