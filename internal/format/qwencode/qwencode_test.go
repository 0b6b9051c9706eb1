package qwencode

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
	sampleName  = "agent-sessions_qwen_019f0000-0000-7000-8000-000000000001.jsonl"
	fixtureName = "3f1c0d9e-1111-4a2b-9c3d-5e6f7a8b9c0d.jsonl"
)

func TestGolden(t *testing.T) {
	testutil.GoldenSamples(t, New(), "qwen-code", sampleName)
	testutil.GoldenFixtures(t, New(), fixtureName)
}

func steps(sl *model.Storyline) string {
	var out []string
	for _, st := range sl.Steps {
		out = append(out, st.Source+"/"+st.MessageKind+":"+model.Deref(st.MessageValue))
	}
	return strings.Join(out, " | ")
}

func calls(sl *model.Storyline) string {
	var out []string
	for _, tc := range sl.ToolCalls {
		out = append(out, tc.ToolCallID+"/"+tc.FunctionName+"/"+tc.ResultLink+"/"+tc.ResultStatus+":"+model.Deref(tc.Result))
	}
	return strings.Join(out, " | ")
}

// TestSampleFigures: the sample's 6 records are a user turn (with the hook
// context the model saw as a second part), a reply with a thought and a
// read_file call, its tool_result, a final reply, a ui_telemetry system
// record (no step) and a background notification (a system step).
func TestSampleFigures(t *testing.T) {
	layout, sls := testutil.MustNormalize(t, New(), sampleName, testutil.Sample(t, "qwen-code/"+sampleName))
	if layout != LayoutJSONL || len(sls) != 1 {
		t.Fatalf("layout %s, %d Storylines", layout, len(sls))
	}
	sl := sls[0]
	want := "user/text:Inspect the synthetic fixture.\n<qwen:user-prompt-submit-context>\nSynthetic hook context that is not the user's prompt.\n</qwen:user-prompt-submit-context> | " +
		"agent/tool_calls_only: | tool/text:Synthetic file contents. | agent/text:The synthetic fixture is valid. | system/notification:Synthetic background notification."
	if got := steps(sl); got != want {
		t.Errorf("steps\n%s\nwant\n%s", got, want)
	}
	if got := calls(sl); got != "synthetic-call-1/read_file/id/ok:Synthetic file contents." {
		t.Errorf("calls %s", got)
	}
	r := sl.Run
	if r.SessionID != "019f0000-0000-7000-8000-000000000001" || model.Deref(r.AgentModelName) != "synthetic-model" || model.Deref(r.AgentVersion) != "0.21.13" ||
		model.Deref(sl.Steps[1].Reasoning) != "I should read the synthetic file." || len(sl.Warnings) != 0 {
		t.Errorf("run %+v, warnings %v", r, sl.Warnings)
	}
}

// TestFixtureFigures: the main conversation (6 steps: the user, 2
// replies, 2 tool results — one an error —, the chat compression; tokens
// 1000+2000 / 50+10, cached 600+1500) and the Explore subagent's records
// (agentId, isSidechain: a reply calling glob, its result), a custom title
// in the run's extra, and a line that is not JSON.
func TestFixtureFigures(t *testing.T) {
	_, sls := testutil.MustNormalize(t, New(), fixtureName, testutil.Fixture(t, fixtureName))
	if len(sls) != 2 {
		t.Fatalf("%d Storylines", len(sls))
	}
	main, sub := sls[0], sls[1]
	if got := calls(main); got != "c1/run_shell_command/id/ok:--- FAIL: TestX (0.00s) | c2/read_file/id/error:File not found: /home/li/proj/x.go" {
		t.Errorf("main calls %s", got)
	}
	r := main.Run
	if r.StepCount != 6 || testutil.OrMinus1(r.PromptTokens) != 3000 || testutil.OrMinus1(r.CompletionTokens) != 60 || testutil.OrMinus1(r.CachedTokens) != 2100 ||
		!strings.Contains(model.Deref(r.Extra), `"title":"fix the failing test"`) || !strings.Contains(model.Deref(r.Extra), `"cwd":"/home/li/proj"`) {
		t.Errorf("main run %+v extra %s", r, model.Deref(r.Extra))
	}
	if len(main.Warnings) != 1 || main.Warnings[0].String() != fixtureName+":9: line is not valid JSON; skipped" {
		t.Errorf("warnings %v", main.Warnings)
	}
	if sub.Run.SessionID != r.SessionID+"/explore-7f3c" || model.Deref(sub.Run.ParentSessionID) != r.SessionID || model.Deref(sub.Run.AgentName) != "Explore" ||
		sub.Run.StepCount != 2 || calls(sub) != "c3/glob/id/ok:a.go\nx_test.go" {
		t.Errorf("subagent %+v calls %s", sub.Run, calls(sub))
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{"uuid":"u","parentUuid":null,"sessionId":"s","timestamp":"t","type":"user","message":{"role":"user","parts":[{"text":"hi"}]}}` + "\n", LayoutJSONL},
		{`{"uuid":"u","sessionId":"s","timestamp":"t","type":"system","subtype":"session_source","systemPayload":{"sourceType":"cli"}}` + "\n", LayoutJSONL},
		// Claude Code's lines: the same envelope, a message with content.
		{`{"parentUuid":null,"sessionId":"s","type":"user","message":{"role":"user","content":"hi"},"uuid":"u","timestamp":"t"}` + "\n", ""},
		{`{"uuid":"u","sessionId":"s","timestamp":"t","type":"summary","message":{"parts":[]}}` + "\n", ""},
	}
	for _, tt := range tests {
		got, ok := New().Detect(format.NewProbe("s.jsonl", []byte(tt.data), false))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", tt.data, got, ok, tt.want)
		}
	}
}

// FuzzNormalize: any input gives Storylines that keep
// testutil.CheckStoryline's invariants or a ParseError, and never panics.
func FuzzNormalize(f *testing.F) {
	f.Add(testutil.Sample(f, "qwen-code/"+sampleName))
	f.Add(testutil.Fixture(f, fixtureName))
	f.Add([]byte(`{"type":"assistant","isSidechain":true,"message":{"parts":[{"functionCall":{"id":1,"args":"x"}},{"text":2,"thought":"y"},3]}}` + "\n" +
		`{"type":"user","message":{"parts":[{"functionResponse":{"name":null,"response":[1]}}]}}` + "\n" + `{"type":"system","subtype":"custom_title","systemPayload":7}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, LayoutJSONL,
			func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
		var pe *format.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a ParseError: %v", err)
		}
	})
}
