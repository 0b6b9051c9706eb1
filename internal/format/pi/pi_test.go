package pi

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
	largeSample  = "pi-mono_large-session.jsonl"
	joinedSample = "pi-mono_2025-12-17_session_two-records-on-one-line.jsonl"
	fixtureName  = "2026-01-10T09-00-00-000Z_0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
)

// TestGolden: the hand-made session covers the format-3 entries the
// samples (format 1) lack. The samples, near 1 MB each, are checked by
// their figures instead of a golden file of several megabytes.
func TestGolden(t *testing.T) {
	testutil.GoldenFixtures(t, New(), fixtureName)
}

type figures struct {
	session, status, model           string
	steps, calls, missing, errored   int64
	prompt, completion, cached, cost string
	warnings                         int
}

func figuresOf(sl *model.Storyline) figures {
	r := sl.Run
	f := figures{session: r.SessionID, status: r.Status, model: model.Deref(r.AgentModelName), steps: r.StepCount, calls: r.ToolCallCount,
		prompt: fmt.Sprint(testutil.OrMinus1(r.PromptTokens)), completion: fmt.Sprint(testutil.OrMinus1(r.CompletionTokens)),
		cached: fmt.Sprint(testutil.OrMinus1(r.CachedTokens)), warnings: len(sl.Warnings)}
	if r.CostUSD != nil {
		f.cost = fmt.Sprintf("%.6f", *r.CostUSD)
	}
	for _, tc := range sl.ToolCalls {
		switch tc.ResultStatus {
		case model.ResultMissing:
			f.missing++
		case model.ResultError:
			f.errored++
		}
	}
	return f
}

// TestSampleFigures, counted by an independent script over the samples'
// records: messages (one step each), toolCall parts, toolResult messages
// with isError, the calls no toolResult answers, and the assistant
// messages' usage (prompt = input + cacheRead + cacheWrite).
//   - large-session: 914 messages; 391 calls, 18 unanswered, 19 errors;
//     the first reply (gpt-5.1-codex) was aborted empty, so the model is
//     that of the first reply that was not: claude-sonnet-4-5 (the
//     header's too); the last reply ended with stop.
//   - two-records-on-one-line: 464 records (line 440 holds two), 454
//     messages + 1 compaction = 455 steps; 189 calls + 1 bashExecution,
//     12 errors; 1 warning for the joined line.
func TestSampleFigures(t *testing.T) {
	for _, tt := range []struct {
		name string
		want figures
	}{
		{largeSample, figures{"d703a1a9-1b7b-4fb1-b512-c9738b1fe617", model.StatusUnknown, "claude-sonnet-4-5", 914, 391, 18, 19,
			"47526750", "83156", "43229469", "30.330198", 1}},
		{joinedSample, figures{"5fd1e58c-9635-410e-a644-133a96057c90", model.StatusUnknown, "claude-opus-4-5", 455, 190, 0, 12,
			"26267579", "46995", "25283499", "19.965165", 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			layout, sls := testutil.MustNormalize(t, New(), tt.name, testutil.Sample(t, "pi/"+tt.name))
			if layout != LayoutJSONL || len(sls) != 1 {
				t.Fatalf("layout %s, %d Storylines", layout, len(sls))
			}
			if got := figuresOf(sls[0]); got != tt.want {
				t.Errorf("got  %+v\nwant %+v\nwarnings %v", got, tt.want, sls[0].Warnings)
			}
		})
	}
}

// TestFixtureFigures: 10 steps (3 user turns — one a "!" shell command —,
// 3 replies, 2 tool results, the compaction, the extension's message);
// calls toolu_1 (isError), toolu_2, toolu_3 (no result), and the shell
// command (inline); the last reply was aborted: cancelled. Line 13 is not
// JSON, line 15 holds two records.
func TestFixtureFigures(t *testing.T) {
	_, sls := testutil.MustNormalize(t, New(), fixtureName, testutil.Fixture(t, fixtureName))
	sl := sls[0]
	want := figures{"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", model.StatusCancelled, "claude-sonnet-4-5", 10, 4, 1, 1, "2415", "100", "2200", "0.022400", 3}
	if got := figuresOf(sl); got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	var kinds []string
	for _, st := range sl.Steps {
		kinds = append(kinds, st.StepID+"/"+st.Source+"/"+st.MessageKind)
	}
	if got := strings.Join(kinds, " "); got != "m1/user/text m2/agent/tool_calls_only m3/tool/text m4/agent/text m5/tool/text c1/system/compaction "+
		"m6/user/bash_execution x1/system/custom_message m7/user/text m8/agent/error" {
		t.Errorf("steps %s", got)
	}
	var warnings []string
	for _, w := range sl.Warnings {
		warnings = append(warnings, w.String())
	}
	if got := strings.Join(warnings, "\n"); got != fixtureName+":13: line is not valid JSON; skipped\n"+
		fixtureName+":15: 2 records written back to back on one line; each is read\n"+fixtureName+": 1 tool call(s) have no result" {
		t.Errorf("warnings:\n%s", got)
	}
	if model.Deref(sl.Steps[1].Reasoning) != "Start with the test suite." || !strings.Contains(model.Deref(sl.Run.Extra), `"name":"fix parse tests"`) ||
		!strings.Contains(model.Deref(sl.Run.Extra), `"entry_counts":{"label":1,"model_change":1,"session_info":1,"thinking_level_change":1}`) {
		t.Errorf("reasoning %v, run extra %s", model.Deref(sl.Steps[1].Reasoning), model.Deref(sl.Run.Extra))
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{"type":"session","id":"s","timestamp":"t","cwd":"/x"}` + "\n", LayoutJSONL},
		{`{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/x"}` + "\n" + `{"type":"message","id":"a","parentId":null}` + "\n", LayoutJSONL},
		// Codex's rollout header, and a session header without its cwd.
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"s","cwd":"/x"}}` + "\n", ""},
		{`{"type":"session","id":"s","timestamp":"t"}` + "\n", ""},
		{`{"type":"session","id":"s","timestamp":"t","cwd":"/x"}`, ""},
	}
	for _, tt := range tests {
		name := "s.jsonl"
		if !strings.HasSuffix(tt.data, "\n") {
			name = "s.json"
		}
		got, ok := New().Detect(format.NewProbe(name, []byte(tt.data), false))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", tt.data, got, ok, tt.want)
		}
	}
}

// FuzzNormalize: any input gives a Storyline that keeps
// testutil.CheckStoryline's invariants or a ParseError, and never panics.
func FuzzNormalize(f *testing.F) {
	f.Add(testutil.Fixture(f, fixtureName))
	f.Add([]byte(`{"type":"session","id":1}{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"x"},7],"usage":{"input":"a","cost":[]}}}` + "\n" +
		`{"type":"message","id":"x","message":{"role":"toolResult","toolCallId":"x","content":{}}}` + "\n" + `[1,2]{}` + "\n" +
		`{"type":"message","id":"x","message":{"role":"bashExecution","exitCode":"no"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, LayoutJSONL,
			func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
		var pe *format.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a ParseError: %v", err)
		}
	})
}
