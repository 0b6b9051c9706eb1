package geminicli

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
	sampleName  = "gemini-cli_harbor-rfc_session.json"
	fixtureName = "session-2026-03-01T10-00-a1b2c3d4.jsonl"
)

func sample(t testing.TB) []byte { return testutil.Sample(t, "other/"+sampleName) }

// TestGolden covers the public sample (the legacy JSON document) and the
// hand-made JSON Lines session written as the CLI's recording service
// writes it (no licensed JSONL session was found).
func TestGolden(t *testing.T) {
	for name, data := range map[string][]byte{sampleName: sample(t), fixtureName: testutil.Fixture(t, fixtureName)} {
		t.Run(name, func(t *testing.T) { testutil.GoldenInput(t, New(), name, data) })
	}
}

// TestSampleFigures: the sample holds 2 messages (user, gemini) and no
// tool calls (the file write the agent performed is not recorded in it);
// the gemini message's tokens are input 5915, output 24, cached 0,
// thoughts 0.
func TestSampleFigures(t *testing.T) {
	layout, sls := testutil.MustNormalize(t, New(), sampleName, sample(t))
	if layout != LayoutJSON || len(sls) != 1 {
		t.Fatalf("layout %q, %d Storylines", layout, len(sls))
	}
	sl := sls[0]
	r := sl.Run
	checks := []struct {
		what      string
		got, want any
	}{
		{"session", r.SessionID, "cdd63974-c2a3-4f1c-931d-cce1db22ec03"},
		{"format", r.SourceFormat, "gemini-cli/json"},
		{"agent", model.Deref(r.AgentName), "gemini-cli"},
		{"model", model.Deref(r.AgentModelName), "gemini-2.0-flash"},
		{"started", r.StartedAt.Format("15:04:05.000"), "06:59:39.894"},
		{"ended", r.EndedAt.Format("15:04:05.000"), "06:59:41.751"},
		{"steps", r.StepCount, int64(2)},
		{"calls", r.ToolCallCount, int64(0)},
		{"prompt", testutil.OrMinus1(r.PromptTokens), int64(5915)},
		{"completion", testutil.OrMinus1(r.CompletionTokens), int64(24)},
		{"cached", testutil.OrMinus1(r.CachedTokens), int64(0)},
		{"extra", model.Deref(r.Extra), `{"projectHash":"f53b52ad6d21cceb72dfa78fb67614fe14f110c58e68412b01508d6a485501c3"}`},
		{"user text", model.Deref(sl.Steps[0].MessageValue), "Create a file called hello.txt with \"Hello, world!\" as the content.\n"},
		{"agent source", sl.Steps[1].Source, model.SourceAgent},
		{"reasoning tokens", testutil.OrMinus1(sl.Steps[1].ReasoningTokens), int64(0)},
		{"step extra", model.Deref(sl.Steps[1].Extra), `{"tokens":{"tool":0,"total":5939}}`},
		{"warnings", len(sl.Warnings), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestReplayFigures: the fixture's 13 lines replay to 7 messages — m2 is
// written twice (the second record, with its tool calls' results and
// tokens, replaces the first in place), m4 is rewound, line 9 is not JSON
// — with 4 tool calls: success, error, cancelled (error) and one still
// awaiting approval (no result). Tokens: input 1200+1300, output 40+8,
// cached 800+1200.
func TestReplayFigures(t *testing.T) {
	layout, sls := testutil.MustNormalize(t, New(), fixtureName, testutil.Fixture(t, fixtureName))
	if layout != LayoutJSONL || len(sls) != 1 {
		t.Fatalf("layout %q, %d Storylines", layout, len(sls))
	}
	sl := sls[0]
	var ids, sources []string
	for _, st := range sl.Steps {
		ids = append(ids, st.StepID)
		sources = append(sources, st.Source+"/"+st.MessageKind)
	}
	if got := strings.Join(ids, ","); got != "m1,m2,m3,m5,m6,m7,m8" {
		t.Errorf("steps %s", got)
	}
	if got := strings.Join(sources, ","); got != "user/text,agent/tool_calls_only,agent/text,system/info,user/text,agent/tool_calls_only,system/error" {
		t.Errorf("sources %s", got)
	}
	type row struct{ id, step, status, result, link string }
	want := []row{
		{"run_shell_command-1", "m2", model.ResultOK, "a.go\nb.go", model.LinkInline},
		{"read_file-2", "m2", model.ResultError, "File not found: c.go", model.LinkInline},
		{"run_shell_command-3", "m7", model.ResultError, "", model.LinkInline},
		{"write_file-4", "m7", model.ResultMissing, "", model.LinkNone},
	}
	for i, w := range want {
		tc := sl.ToolCalls[i]
		if got := (row{tc.ToolCallID, tc.StepID, tc.ResultStatus, model.Deref(tc.Result), tc.ResultLink}); got != w {
			t.Errorf("call %d = %+v, want %+v", i, got, w)
		}
	}
	if len(sl.ToolCalls) != len(want) || model.Deref(sl.ToolCalls[0].Arguments) != `{"command":"ls *.go"}` ||
		!strings.Contains(model.Deref(sl.ToolCalls[2].Extra), `"status":"cancelled"`) || strings.Contains(model.Deref(sl.ToolCalls[0].Extra), `"status"`) {
		t.Errorf("calls: %+v", sl.ToolCalls)
	}
	r := sl.Run
	if testutil.OrMinus1(r.PromptTokens) != 2500 || testutil.OrMinus1(r.CompletionTokens) != 48 || testutil.OrMinus1(r.CachedTokens) != 2000 {
		t.Errorf("tokens %d %d %d", testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens), testutil.OrMinus1(r.CachedTokens))
	}
	if model.Deref(r.AgentModelName) != "gemini-2.5-pro" || model.Deref(sl.Steps[5].ModelName) != "gemini-2.5-flash" ||
		model.Deref(sl.Steps[1].Reasoning) != "Planning: List first, then count." || testutil.OrMinus1(sl.Steps[1].ReasoningTokens) != 25 {
		t.Errorf("models/reasoning: %+v", sl.Steps[1])
	}
	if r.EndedAt.Format("15:04:05") != "10:00:10" || model.Deref(r.Extra) != `{"kind":"main","projectHash":"9f2c","summary":"Listed and counted Go files."}` {
		t.Errorf("run: ended %v extra %s", r.EndedAt, model.Deref(r.Extra))
	}
	var warnings []string
	for _, w := range sl.Warnings {
		warnings = append(warnings, w.String())
	}
	if got := strings.Join(warnings, "\n"); got != fixtureName+":9: line is not valid JSON; skipped\n"+fixtureName+": 1 tool call(s) have no result" {
		t.Errorf("warnings:\n%s", got)
	}
}

// TestMetadataMessagesWin: a non-empty messages list in $set (written when
// the CLI syncs its history) is the message list, as the CLI loads it; an
// empty one is not.
func TestMetadataMessagesWin(t *testing.T) {
	lines := `{"sessionId":"s","projectHash":"h"}` + "\n" +
		`{"id":"a","type":"user","content":"first"}` + "\n" +
		`{"$set":{"messages":[]}}` + "\n" +
		`{"$set":{"messages":[{"id":"x","type":"user","content":"synced"},{"id":"y","type":"gemini","content":[{"text":"reply"},{"functionCall":{"name":"ls"}}]}]}}` + "\n" +
		`{"id":"b","type":"user","content":"after"}` + "\n"
	_, sls := testutil.MustNormalize(t, New(), "s.jsonl", []byte(lines))
	steps := sls[0].Steps
	if len(steps) != 2 || steps[0].StepID != "x" || steps[1].MessageKind != format.KindMultimodal ||
		model.Deref(steps[1].MessageValue) != `[{"text":"reply"},{"functionCall":{"name":"ls"}}]` {
		t.Errorf("steps: %+v", steps)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"session.json", `{"sessionId":"s","projectHash":"h","messages":[]}`, LayoutJSON},
		{"session.jsonl", `{"sessionId":"s","projectHash":"h","startTime":"x"}` + "\n" + `{"id":"m","type":"user","content":"hi"}` + "\n", LayoutJSONL},
		{"claude.jsonl", `{"type":"user","sessionId":"s","uuid":"u","message":{}}` + "\n", ""},
		{"chat.json", `{"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"x.json", `[{"sessionId":"s","projectHash":"h"}]`, ""},
	}
	for _, tt := range tests {
		got, ok := New().Detect(format.NewProbe(tt.name, []byte(tt.data), false))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", tt.name, got, ok, tt.want)
		}
	}
}

// TestBrokenDocument: a document that is not JSON fails with an error
// naming the file and the line of the fault.
func TestBrokenDocument(t *testing.T) {
	data := []byte("{\n  \"sessionId\": \"s\",\n  \"projectHash\": \"h\",\n  \"messages\": [ oops ]\n}")
	err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "chats/session-x.json", File: "x"}, LayoutJSON,
		func(*model.Storyline) error { return nil })
	var pe *format.ParseError
	if !errors.As(err, &pe) || pe.Line != 4 || !strings.HasPrefix(err.Error(), "chats/session-x.json:4: gemini-cli: invalid JSON at column") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzNormalize: any input, under both layouts, normalizes into Storylines
// that keep testutil.CheckStoryline's invariants or fails with a
// ParseError, and never panics.
func FuzzNormalize(f *testing.F) {
	f.Add(sample(f))
	f.Add(testutil.Fixture(f, fixtureName))
	f.Add([]byte(`{"sessionId":1,"projectHash":"h","messages":{"a":1}}`))
	f.Add([]byte(`{"$rewindTo":"zz"}` + "\n" + `{"id":"a","type":"gemini","toolCalls":[1,{"result":"x"}],"tokens":[]}` + "\n" + `{"$set":{"messages":[1]}}`))
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
