package otel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

const (
	genAIFixture = "genai-travel-agent.otlp.json"
	oiFixture    = "openinference-agents.otlp.jsonl"
)

func TestGolden(t *testing.T) {
	testutil.GoldenFixtures(t, New(), genAIFixture, oiFixture)
}

type figures struct {
	session, parent, agent, status string
	steps, calls                   int64
	prompt, completion, cached     int64
	links                          string
}

func figuresOf(sl *model.Storyline) figures {
	r := sl.Run
	var links []string
	for _, tc := range sl.ToolCalls {
		links = append(links, tc.ResultLink+"/"+tc.ResultStatus)
	}
	return figures{r.SessionID, model.Deref(r.ParentSessionID), model.Deref(r.AgentName), r.Status, r.StepCount, r.ToolCallCount,
		testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens), testutil.OrMinus1(r.CachedTokens), strings.Join(links, ",")}
}

// TestFixtureFigures, counted by hand from the fixtures:
//   - genai-travel-agent (GenAI conventions 1.37+, one OTLP document):
//     trace 5b8e… is the invoke_agent span travel-agent with two chat
//     spans (120+300 input, 64 cached, 20+25 output), an execute_tool span
//     answering call_1, and a nested invoke_agent booking-agent (two chat
//     spans 40+70 / 12+9, its execute_tool failed: error status). Steps of
//     the trace: the system instructions, the user turn, 2 model calls, the
//     tool, the subagent = 6. The second trace holds one HTTP span and no
//     GenAI span: no Storyline.
//   - openinference-agents (OpenInference, two Collector lines splitting
//     one trace): AGENT root, LLM (55/15) with a tool call, TOOL with no
//     call id (linked by name), LLM (85/29): system, user, 2 model calls,
//     the tool = 5 steps.
func TestFixtureFigures(t *testing.T) {
	const t1 = "5b8efff798038103d269b633813fc60c"
	tests := []struct {
		name, layout string
		want         []figures
	}{
		{genAIFixture, LayoutJSON, []figures{
			{t1, "", "invoke_agent travel-agent", model.StatusUnknown, 6, 1, 420, 45, 64, "id/ok"},
			{t1 + "/a000000000000002", t1, "booking-agent", model.StatusUnknown, 4, 1, 110, 21, -1, "id/error"},
		}},
		{oiFixture, LayoutJSONL, []figures{
			{"3e4f6a1b2c3d4e5f60718293a4b5c6d7", "", "Assistant", model.StatusUnknown, 5, 1, 140, 44, 0, "name/ok"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout, sls := testutil.MustNormalize(t, New(), tt.name, testutil.Fixture(t, tt.name))
			if layout != tt.layout || len(sls) != len(tt.want) {
				t.Fatalf("layout %s, %d Storylines", layout, len(sls))
			}
			for i, sl := range sls {
				if got := figuresOf(sl); got != tt.want[i] {
					t.Errorf("Storyline %d = %+v\nwant %+v", i, got, tt.want[i])
				}
			}
		})
	}
	_, sls := testutil.MustNormalize(t, New(), genAIFixture, testutil.Fixture(t, genAIFixture))
	main, sub := sls[0], sls[1]
	var texts []string
	for _, st := range main.Steps {
		texts = append(texts, st.Source+":"+model.Deref(st.MessageValue))
	}
	want := "system:You are a travel assistant.|user:Weather in Paris, and is my flight booked?|agent:|tool:rainy, 57°F|agent:booking-agent|agent:It is rainy in Paris (57°F); the booking could not be checked."
	if strings.Join(texts, "|") != want {
		t.Errorf("steps\n%s\nwant\n%s", strings.Join(texts, "|"), want)
	}
	if tc := main.ToolCalls[0]; model.Deref(tc.Arguments) != `{"location":"Paris"}` || model.Deref(tc.ResultStepID) != "e000000000000001" ||
		model.Deref(main.Run.AgentModelName) != "gpt-4o-2024-08-06" {
		t.Errorf("call %+v", tc)
	}
	if !strings.Contains(model.Deref(sub.Steps[2].Extra), `"status_message":"booking service unavailable"`) ||
		!strings.Contains(model.Deref(main.Run.SubagentRefs), `"child_session_id":"`+sub.Run.SessionID+`"`) ||
		!strings.Contains(model.Deref(main.Run.Extra), `"service.name":"travel-app"`) {
		t.Errorf("sub step extra %s, refs %s, run extra %s", model.Deref(sub.Steps[2].Extra), model.Deref(main.Run.SubagentRefs), model.Deref(main.Run.Extra))
	}
}

// wrap puts a flat attribute map into an OTLP document as one span's
// attributes, as an exporter writes them.
func wrap(t *testing.T, attrs []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(attrs, &m); err != nil {
		t.Fatal(err)
	}
	var kvs []map[string]any
	for k, v := range m {
		var val map[string]any
		switch x := v.(type) {
		case string:
			val = map[string]any{"stringValue": x}
		case float64:
			val = map[string]any{"intValue": strconv.FormatFloat(x, 'f', -1, 64)} // the maps' numbers are token counts
		case []any:
			var vals []map[string]any
			for _, e := range x {
				vals = append(vals, map[string]any{"stringValue": e})
			}
			val = map[string]any{"arrayValue": map[string]any{"values": vals}}
		}
		kvs = append(kvs, map[string]any{"key": k, "value": val})
	}
	doc := map[string]any{"resourceSpans": []any{map[string]any{"scopeSpans": []any{map[string]any{"spans": []any{map[string]any{
		"traceId": "t", "spanId": "s", "name": "chat gpt-4", "startTimeUnixNano": "1735689600000000000", "attributes": kvs}}}}}}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSampleAttributeMaps: the two public attribute maps of one LLM span
// (the same call in OpenInference and in GenAI conventions), each put in
// a span, give the same Storyline: the history it was given (the user's
// question, the assistant's reply) as copied context, then the answer;
// model gpt-4-0613 (OpenInference's model name, GenAI's response model),
// 97 input and 52 output tokens. The history's tool call is not a call of
// this span (it was made, and answered, before it).
func TestSampleAttributeMaps(t *testing.T) {
	var got []string
	for _, name := range []string{"openinference-genai_openinference_client_span_tool_calls.attributes.json", "openinference-genai_otel_genai_client_span_tool_calls.attributes.json"} {
		data := wrap(t, testutil.Sample(t, "otel-genai/"+name))
		if _, ok := New().Detect(format.NewProbe("x.json", data, false)); !ok {
			t.Fatalf("%s: not detected once wrapped", name)
		}
		_, sls := testutil.MustNormalize(t, New(), "x.json", data)
		sl := sls[0]
		var steps []string
		for _, st := range sl.Steps {
			copied := ""
			if st.IsCopiedContext {
				copied = "(copied)"
			}
			steps = append(steps, st.Source+copied+":"+model.Deref(st.MessageValue))
		}
		got = append(got, strings.Join(steps, "|")+" steps="+itoa(sl.Run.StepCount)+" model="+model.Deref(sl.Run.AgentModelName)+
			" tokens="+itoa(testutil.OrMinus1(sl.Run.PromptTokens))+"/"+itoa(testutil.OrMinus1(sl.Run.CompletionTokens))+" calls="+itoa(sl.Run.ToolCallCount))
	}
	want := "user(copied):Weather in Paris?|agent(copied):Absolutely! Let me check the weather for you.|" +
		"agent:The weather in Paris is currently rainy with a temperature of 57°F. steps=1 model=gpt-4-0613 tokens=97/52 calls=0"
	for i, g := range got {
		if g != want {
			t.Errorf("map %d: %s\nwant %s", i, g, want)
		}
	}
	// Unwrapped, an attribute map is not a trace.
	raw := testutil.Sample(t, "otel-genai/openinference-genai_otel_genai_client_span_tool_calls.attributes.json")
	if layout, ok := New().Detect(format.NewProbe("x.json", raw, false)); ok {
		t.Errorf("a bare attribute map was claimed as %s", layout)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestDetect(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}]}]}]}]}`, LayoutJSON},
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"openinference.span.kind","value":{"stringValue":"LLM"}}]}]}]}]}` + "\n", LayoutJSONL},
		// A trace of some other service, and spans without the envelope.
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"GET /","attributes":[{"key":"http.route","value":{"stringValue":"/"}}]}]}]}]}`, ""},
		{`{"resourceSpans":[{"resource":{}}],"note":"gen_ai."}`, ""},
		{`{"gen_ai.operation.name":"chat","gen_ai.input.messages":"[]"}`, ""},
		{`[{"traceId":"t","spanId":"s","attributes":{"gen_ai.operation.name":"chat"}}]`, ""},
	}
	for _, tt := range tests {
		name := "x.json"
		if strings.HasSuffix(tt.data, "\n") {
			name = "x.jsonl"
		}
		got, ok := New().Detect(format.NewProbe(name, []byte(tt.data), false))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", tt.data, got, ok, tt.want)
		}
	}
}

// TestBrokenFile: a document or a line that is not JSON fails naming its
// line.
func TestBrokenFile(t *testing.T) {
	doc := []byte("{\"resourceSpans\": [\n {\"scopeSpans\": [ oops ]}]}")
	err := New().Normalize(context.Background(), bytes.NewReader(doc), format.Source{Path: "t.json", File: "t.json"}, LayoutJSON, func(*model.Storyline) error { return nil })
	var pe *format.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 {
		t.Errorf("document: %v", err)
	}
	lines := []byte(`{"resourceSpans":[]}` + "\n" + `{"resourceSpans":[` + "\n")
	err = New().Normalize(context.Background(), bytes.NewReader(lines), format.Source{Path: "t.jsonl", File: "t.jsonl"}, LayoutJSONL, func(*model.Storyline) error { return nil })
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "t.jsonl:2") {
		t.Errorf("lines: %v", err)
	}
}

// FuzzNormalize: any input, under both layouts, gives Storylines that keep
// testutil.CheckStoryline's invariants or a ParseError, and never panics.
func FuzzNormalize(f *testing.F) {
	f.Add(testutil.Fixture(f, genAIFixture))
	f.Add(testutil.Fixture(f, oiFixture))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"a","parentSpanId":"a","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}},` +
		`{"key":"llm.input_messages.99999999999.message.role","value":{"intValue":"x"}},{"key":"k","value":{"kvlistValue":{"values":[{"key":"a","value":{"arrayValue":{"values":[{"doubleValue":"1e999"}]}}}]}}}]},3]}]},7]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, layout := range []string{LayoutJSON, LayoutJSONL} {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s: error is not a ParseError: %v", layout, err)
			}
		}
	})
}
