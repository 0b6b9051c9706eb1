package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// fixtures are synthetic transcripts written after the format description
// (no licensed real sample exists): a main session with split API
// responses, a session with two inline sidechains, and a subagent file.
var fixtures = []string{"session-basic.jsonl", "session-subagents.jsonl", "agent-a1b2c3d.jsonl"}

func normalize(t testing.TB, name string, data []byte) []*model.Storyline {
	t.Helper()
	_, sls := testutil.MustNormalize(t, New(), name, data)
	return sls
}

func TestGolden(t *testing.T) { testutil.GoldenFixtures(t, New(), fixtures...) }

// TestFigures asserts figures computed by hand from the fixtures. Usage is
// counted once per message.id (the last line's usage of a split response);
// prompt = input + cache_read + cache_creation, cached = cache_read.
//
// session-basic: msg_01 (3 lines) 3+11000+5120=16123 / 11000 / 142;
// msg_02 (2 lines around a tool result) 6+16123+812=16941 / 16123 / 97;
// msg_03 4+16935+1430=18369 / 16935 / 61 → 51433 / 44058 / 300.
// session-subagents main: msg_A1 10+9000+2000=11010 / 9000 / 210, msg_A2
// 20+11010+600=11630 / 11010 / 95 → 22640 / 20010 / 305; sidechain-1:
// 5+0+3000=3005 / 0 / 40 and 8+3005+150=3163 / 3005 / 120 → 6168 / 3005 /
// 160; sidechain-2: 7+0+2950=2957 / 0 / 300.
// agent-a1b2c3d: msg_X1 (output 5 then 77: the last counts) 4+0+1800=1804 /
// 0 / 77, msg_X2 9+1804+200=2013 / 1804 / 33 → 3817 / 1804 / 110.
func TestFigures(t *testing.T) {
	const (
		sidBasic = "7f3c2a1e-5b6d-4c8e-9a0f-1e2d3c4b5a69"
		sidSub   = "3b1d9e70-42aa-4f5c-8d2e-6c7a8b9c0d1e"
		sidAgent = "c4d5e6f7-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
	)
	tests := []struct {
		file, session, run, parent, agentID, sources string
		steps, calls, linked, errorCalls             int64
		prompt, cached, completion                   int64
		warnings                                     int
	}{
		{file: "session-basic.jsonl", session: sidBasic, run: sidBasic,
			sources: "user,agent,tool,agent,tool,tool,system,agent",
			steps:   8, calls: 3, linked: 3, errorCalls: 1, prompt: 51433, cached: 44058, completion: 300, warnings: 2},
		{file: "session-subagents.jsonl", session: sidSub, run: sidSub, sources: "user,agent,tool,tool,agent",
			steps: 5, calls: 2, linked: 2, prompt: 22640, cached: 20010, completion: 305},
		{file: "session-subagents.jsonl", session: sidSub + "/sidechain-1", run: sidSub, parent: sidSub,
			sources: "user,agent,tool,agent", steps: 4, calls: 1, linked: 1, prompt: 6168, cached: 3005, completion: 160},
		{file: "session-subagents.jsonl", session: sidSub + "/sidechain-2", run: sidSub, parent: sidSub,
			sources: "user,agent", steps: 2, prompt: 2957, cached: 0, completion: 300},
		{file: "agent-a1b2c3d.jsonl", session: sidAgent + "/a1b2c3d", run: sidAgent, parent: sidAgent, agentID: "a1b2c3d",
			sources: "user,agent,tool,agent", steps: 4, calls: 1, linked: 1, errorCalls: 1, prompt: 3817, cached: 1804, completion: 110},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.session, func(t *testing.T) {
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
			var linked, errorCalls int64
			for _, tc := range sl.ToolCalls {
				if tc.ResultLink == model.LinkByID && tc.ResultStepID != nil {
					linked++
				}
				if tc.ResultStatus == model.ResultError {
					errorCalls++
				}
			}
			r := sl.Run
			got := []any{r.RunID, model.Deref(r.ParentSessionID), model.Deref(r.AgentID), strings.Join(sources, ","),
				r.StepCount, r.ToolCallCount, linked, errorCalls,
				testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CachedTokens), testutil.OrMinus1(r.CompletionTokens), len(sl.Warnings),
				r.SourceFormat, model.Deref(r.AgentName), model.Deref(r.AgentModelName), r.Status}
			want := []any{tt.run, tt.parent, tt.agentID, tt.sources, tt.steps, tt.calls, tt.linked, tt.errorCalls,
				tt.prompt, tt.cached, tt.completion, tt.warnings,
				"claude-code/jsonl", "claude-code", "claude-sonnet-4-20250514", model.StatusUnknown}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestDetails pins single mappings of session-basic and session-subagents.
func TestDetails(t *testing.T) {
	sls := normalize(t, "b.jsonl", testutil.Fixture(t, "session-basic.jsonl"))
	if len(sls) != 1 {
		t.Fatalf("%d Storylines", len(sls))
	}
	sl := sls[0]
	agent := sl.Steps[1]
	if agent.StepID != "a0000002-0000-4000-8000-000000000002" ||
		model.Deref(agent.MessageValue) != "I'll run the failing test to see the error." ||
		!strings.HasPrefix(model.Deref(agent.Reasoning), "The offset parser probably") ||
		model.Deref(agent.ModelName) != "claude-sonnet-4-20250514" ||
		!strings.Contains(model.Deref(agent.Extra), `"merged_uuids":["a0000003-0000-4000-8000-000000000003","a0000004-0000-4000-8000-000000000004"]`) ||
		!strings.Contains(model.Deref(agent.Extra), `"stop_reason":"tool_use"`) {
		t.Errorf("merged agent step: %+v extra %s", agent, model.Deref(agent.Extra))
	}
	if sl.Steps[3].MessageKind != "tool_calls_only" || sl.Steps[3].MessageValue != nil {
		t.Errorf("tool_use-only step: %+v", sl.Steps[3])
	}
	bash := sl.ToolCalls[0]
	if bash.ToolCallID != "toolu_01Bash" || bash.FunctionName != "Bash" || !bash.ArgumentsValid ||
		model.Deref(bash.Arguments) != `{"command":"go test ./... -run TestParseOffset","description":"Run the failing test"}` ||
		model.Deref(bash.ResultStepID) != "a0000005-0000-4000-8000-000000000005" ||
		!strings.HasPrefix(model.Deref(bash.Result), "--- FAIL: TestParseOffset") || bash.ResultStatus != model.ResultOK {
		t.Errorf("bash call: %+v", bash)
	}
	// Grep's tool_use line came after Read's result: still the same step.
	grep := sl.ToolCalls[2]
	if grep.StepID != "a0000006-0000-4000-8000-000000000006" || grep.ResultStatus != model.ResultError ||
		!strings.HasPrefix(model.Deref(grep.Result), "<tool_use_error>") {
		t.Errorf("grep call: %+v", grep)
	}
	if tool := sl.Steps[5]; tool.Source != model.SourceTool ||
		!strings.Contains(model.Deref(tool.Extra), `"is_error":true`) ||
		!strings.Contains(model.Deref(tool.Extra), `"toolUseResult":"Error: Path does not exist`) {
		t.Errorf("error tool step: %+v extra %s", tool, model.Deref(tool.Extra))
	}
	if sys := sl.Steps[6]; sys.Source != model.SourceSystem || !strings.Contains(model.Deref(sys.MessageValue), "PostToolUse:Grep") ||
		!strings.Contains(model.Deref(sys.Extra), `"level":"info"`) {
		t.Errorf("system step: %+v", sys)
	}
	r := sl.Run
	if model.Deref(r.AgentVersion) != "1.0.83" || r.StartedAt.Format("15:04:05.000") != "09:15:00.120" ||
		r.EndedAt.Format("15:04:05.000") != "09:15:14.660" {
		t.Errorf("run: %+v", r)
	}
	for _, want := range []string{`"cwd":"/home/dev/projects/dateparse"`, `"gitBranch":"fix/tz-offset"`,
		`"summaries":[{"leafUuid":"0c9e8d7f-0000-4000-8000-00000000aa01","summary":"Fix timezone offset parsing in dateparse"}]`,
		`"skipped_lines":{"file-history-snapshot":1,"queue-operation":1}`} {
		if !strings.Contains(model.Deref(r.Extra), want) {
			t.Errorf("run extra lacks %s: %s", want, model.Deref(r.Extra))
		}
	}
	if w := sl.Warnings; len(w) != 2 || w[0].Line != 2 || w[1].Line != 14 {
		t.Errorf("warnings: %v", w)
	}

	sls = normalize(t, "s.jsonl", testutil.Fixture(t, "session-subagents.jsonl"))
	if len(sls) != 3 {
		t.Fatalf("%d Storylines, want main + 2 sidechains", len(sls))
	}
	main := sls[0]
	want := `[{"step_id":"m-002","session_id":"3b1d9e70-42aa-4f5c-8d2e-6c7a8b9c0d1e","embedded":true,"child_session_id":"3b1d9e70-42aa-4f5c-8d2e-6c7a8b9c0d1e/sidechain-1"},` +
		`{"step_id":"m-002","session_id":"3b1d9e70-42aa-4f5c-8d2e-6c7a8b9c0d1e","embedded":true,"child_session_id":"3b1d9e70-42aa-4f5c-8d2e-6c7a8b9c0d1e/sidechain-2"}]`
	if got := model.Deref(main.Run.SubagentRefs); got != want {
		t.Errorf("subagent_refs %s", got)
	}
	if child := sls[1].Run; model.Deref(child.OriginalSessionID) != "3b1d9e70-42aa-4f5c-8d2e-6c7a8b9c0d1e" {
		t.Errorf("child original_session_id %v", child.OriginalSessionID)
	}
	if u := main.Steps[0]; u.MessageKind != format.KindMultimodal || !strings.Contains(model.Deref(u.MessageValue), "sha256:") ||
		strings.Contains(model.Deref(u.MessageValue), "AAAAAAAA") {
		t.Errorf("image prompt not reduced to a digest: %s", model.Deref(u.MessageValue))
	}
	if tc := main.ToolCalls[1]; tc.ToolCallID != "toolu_B" || model.Deref(tc.ResultStepID) != "m-005" {
		t.Errorf("out-of-order Task result: %+v", tc)
	}
}

func TestEdgeCases(t *testing.T) {
	const env = `"sessionId":"s","isSidechain":false,"timestamp":"2026-01-01T00:00:00Z"`
	tests := []struct {
		name, input string
		errLine     int64
		check       func(t *testing.T, sls []*model.Storyline)
	}{
		{name: "malformed line", errLine: 2,
			input: `{"type":"user","uuid":"u1",` + env + `,"message":{"role":"user","content":"hi"}}` + "\n{\"type\":\"assistant\",\"uuid\":\n"},
		{name: "line not an object", errLine: 3,
			input: `{"type":"user","uuid":"u1",` + env + `,"message":{"role":"user","content":"hi"}}` + "\n\n[1,2]\n"},
		{name: "no type, no message, unknown block, unmatched result, repeated message id",
			input: `{"type":"user","uuid":"u1",` + env + `,"message":{"role":"user","content":"hi"}}` + "\n" +
				`{"uuid":"x"}` + "\n" +
				`{"type":"assistant","uuid":"a0",` + env + `}` + "\n" +
				`{"type":"assistant","uuid":"a1",` + env + `,"message":{"id":"m1","content":[{"type":"server_tool_use","id":"s"},{"type":"tool_use","id":"t1","name":"X","input":"not-json"}],"usage":{"input_tokens":1,"output_tokens":2}}}` + "\n" +
				`{"type":"user","uuid":"u2",` + env + `,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope","content":"?"}]}}` + "\n" +
				`{"type":"user","uuid":"u3",` + env + `,"message":{"role":"user","content":"again"}}` + "\n" +
				`{"type":"assistant","uuid":"a2",` + env + `,"message":{"id":"m1","content":"late","usage":{"input_tokens":1,"output_tokens":2}}}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				sl := sls[0]
				if len(sl.Steps) != 5 || *sl.Run.PromptTokens != 1 || *sl.Run.CompletionTokens != 2 {
					t.Fatalf("steps %d, tokens %v/%v", len(sl.Steps), sl.Run.PromptTokens, sl.Run.CompletionTokens)
				}
				if !strings.Contains(model.Deref(sl.Steps[1].Extra), `"content_blocks":[{"type":"server_tool_use","id":"s"}]`) {
					t.Errorf("unknown block: %s", model.Deref(sl.Steps[1].Extra))
				}
				if tc := sl.ToolCalls[0]; tc.ArgumentsValid || tc.ResultStatus != model.ResultMissing || tc.ResultLink != model.LinkNone {
					t.Errorf("call: %+v", tc)
				}
				var msgs []string
				for _, w := range sl.Warnings {
					msgs = append(msgs, w.String())
				}
				all := strings.Join(msgs, "\n")
				for _, want := range []string{"in.jsonl:2#/type: line has no type", "in.jsonl:3#/message: assistant line has no message",
					"in.jsonl:5#/message/content/0/tool_use_id: tool_result", "in.jsonl:7#/message/usage: message id \"m1\" repeats",
					"1 tool call(s) have no result"} {
					if !strings.Contains(all, want) {
						t.Errorf("warnings lack %q:\n%s", want, all)
					}
				}
			}},
		{name: "no session id, duplicate uuid",
			input: `{"type":"system","uuid":"u","content":"a"}` + "\n" + `{"type":"system","uuid":"u","content":"b"}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				sl := sls[0]
				if sl.Run.SessionID != "in" || sl.Steps[1].StepID != "u#2" || len(sl.Warnings) != 2 {
					t.Errorf("%+v %+v %v", sl.Run, sl.Steps, sl.Warnings)
				}
			}},
		{name: "only summaries",
			input: `{"type":"summary","summary":"A","leafUuid":"l1"}` + "\n" + `{"type":"summary","summary":"B","leafUuid":"l2"}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				if len(sls) != 1 || len(sls[0].Steps) != 0 || !strings.Contains(model.Deref(sls[0].Run.Extra), `"summary":"B"`) {
					t.Errorf("%+v", sls)
				}
			}},
		{name: "line of another session",
			input: `{"type":"user","uuid":"u1",` + env + `,"message":{"role":"user","content":"hi"}}` + "\n" +
				`{"type":"user","uuid":"u2","sessionId":"other","message":{"role":"user","content":"yo"}}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				sl := sls[0]
				if sl.Run.SessionID != "s" || !strings.Contains(model.Deref(sl.Steps[1].Extra), `"otherSessionId":"other"`) ||
					len(sl.Warnings) != 1 || !strings.Contains(model.Deref(sl.Run.Extra), `"other_session_ids":["other"]`) {
					t.Errorf("%+v %v", sl.Steps[1], sl.Warnings)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sls []*model.Storyline
			err := New().Normalize(context.Background(), strings.NewReader(tt.input), format.Source{Path: "in.jsonl", File: "in.jsonl"},
				Layout, func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
			if tt.errLine > 0 {
				var pe *format.ParseError
				if !errors.As(err, &pe) || pe.Line != tt.errLine || !strings.HasPrefix(err.Error(), "in.jsonl:") {
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

// TestSessionCountsAgainstBudget: a session is held until its file ends,
// so it counts against the query's document memory budget. One that fits
// normalizes, and gives its memory back (a second one then fits too); one
// that alone would exceed the budget fails before a line is read, naming
// the file and the option.
func TestSessionCountsAgainstBudget(t *testing.T) {
	data, err := os.ReadFile("testdata/session-basic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	src := format.Source{Path: "p/s.jsonl", File: "s.jsonl", Size: size}
	budget := format.NewDocumentBudget(3 * size) // one session at a time
	ctx, cancel := context.WithTimeout(format.WithDocumentBudget(context.Background(), budget), 10*time.Second)
	defer cancel()
	for i := range 2 { // the second waits forever unless the first gave its memory back
		var n int
		if err := New().Normalize(ctx, bytes.NewReader(data), src, Layout, func(*model.Storyline) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("session %d within the budget: %d Storylines, %v", i+1, n, err)
		}
	}
	big := src
	big.Size = 2 * size
	r := &readCounter{r: bytes.NewReader(data)}
	err = New().Normalize(ctx, r, big, Layout, func(*model.Storyline) error { return nil })
	var be *format.BudgetError
	if !errors.As(err, &be) || !be.Session || be.Path != "p/s.jsonl" {
		t.Fatalf("a session larger than the budget: %v", err)
	}
	for _, want := range []string{"p/s.jsonl", "session is held in memory until its file ends", "--max-document-memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if r.n != 0 {
		t.Errorf("%d bytes of the refused session were read", r.n)
	}
}

type readCounter struct {
	r *bytes.Reader
	n int
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestDetect(t *testing.T) {
	user := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u","timestamp":"2026-01-01T00:00:00Z","sessionId":"s"}`
	tests := []struct {
		name, data string
		want       bool
	}{
		{"user first", user + "\n", true},
		{"summary then user", `{"type":"summary","summary":"x","leafUuid":"l"}` + "\n" + user + "\n", true},
		{"snapshot then user", `{"type":"file-history-snapshot","messageId":"m","snapshot":{},"isSnapshotUpdate":false}` + "\n" + user, true},
		{"other typed line with sessionId then user", `{"type":"queue-operation","operation":"enqueue","sessionId":"s"}` + "\n" + user, true},
		{"system first", `{"type":"system","uuid":"u","sessionId":"s","content":"c","level":"info"}`, true},
		{"only summaries", `{"type":"summary","summary":"x","leafUuid":"l"}` + "\n", true},
		{"user without sessionId", `{"type":"user","uuid":"u","message":{"role":"user","content":"x"}}`, false},
		{"summary then foreign line", `{"type":"summary","summary":"x","leafUuid":"l"}` + "\n" + `{"role":"user","content":"x"}`, false},
		{"summary then broken line", `{"type":"summary","summary":"x","leafUuid":"l"}` + "\n{oops\n", false},
		{"codex rollout", `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}`, false},
		{"canonical", `{"v":1,"event_id":"e","kind":"message","seq":0,"session_id":"s","run_id":"r","ts":"2026-01-01T00:00:00Z","payload":{}}`, false},
		{"atof", `{"kind":"scope","scope_category":"start","atof_version":"0.1","uuid":"u"}`, false},
		{"openai message line", `{"role":"user","content":"hi","session_id":"s"}`, false},
		{"responses message item", `{"type":"message","role":"user","content":[]}`, false},
		{"chat", `{"messages":[{"role":"user","content":"hi"}]}`, false},
	}
	for _, tt := range tests {
		_, ok := New().Detect(format.NewProbe("x.jsonl", []byte(tt.data), false))
		if ok != tt.want {
			t.Errorf("%s: detected %v, want %v", tt.name, ok, tt.want)
		}
	}
	// A prefix cut inside a line after metadata lines is still decided by
	// the lines it holds.
	cut := `{"type":"summary","summary":"x","leafUuid":"l"}` + "\n" + user[:40]
	if _, ok := New().Detect(format.NewProbe("x.jsonl", []byte(cut), true)); !ok {
		t.Error("cut prefix after a summary line: not detected")
	}
}

func FuzzNormalize(f *testing.F) {
	for _, name := range fixtures {
		f.Add(testutil.Fixture(f, name))
	}
	f.Add([]byte(`{"type":"assistant","uuid":"a","sessionId":"s","isSidechain":true,"message":{"id":"m","content":[{"type":"tool_use"}],"usage":null}}`))
	f.Add([]byte(`{"type":"user","sessionId":"s","message":{"content":[{"type":"tool_result","content":[{"type":"image","source":{"data":1}}]},"x",null]}}`))
	f.Add([]byte("null\n[]\n{}\n"))
	f.Add([]byte(`{"type":"assistant","uuid":"a","sessionId":"s","message":{"id":"m","content":[],"usage":{"input_tokens":1,"x":2}}}
{"type":"assistant","uuid":"b","sessionId":"s","message":{"id":"m","content":[],"usage":{"input_tokens":1,"x":2}}}
{"type":"assistant","uuid":"c","sessionId":"s","message":{"id":"m","content":[],"usage":{"input_tokens":1}}}
{"type":"assistant","sessionId":"s","` + "\xff" + `":1,"message":{"id":"m","usage":{"input_tokens":1}}}
{"type":"user","sessionId":"s","message":{"content":"x"}}
{"type":"assistant","uuid":"d","sessionId":"s","message":{"id":"m","content":[],"usage":{"input_tokens":1}}}
{"type":"assistant","uuid":"e","sessionId":"s","message":{"id":"m","content":[],"usage":{"input_tokens":1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.jsonl", data, false))
		var whole, parts []*model.Storyline
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, Layout,
			func(sl *model.Storyline) error {
				if sl.Run.SessionID == "" || sl.Run.RunID == "" {
					t.Fatalf("empty identity: %+v", sl.Run)
				}
				whole = append(whole, sl)
				return nil
			})
		var pe *format.ParseError
		if err != nil && (!errors.As(err, &pe) || pe.Line == 0) {
			t.Fatalf("error is not a located ParseError: %v", err)
		}
		// In parts after every line, the same Storylines once joined.
		old := flushBytes
		flushBytes = 1
		defer func() { flushBytes = old }()
		perr := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f", Parts: true}, Layout,
			func(sl *model.Storyline) error { parts = append(parts, sl); return nil })
		if (err == nil) != (perr == nil) {
			t.Fatalf("whole: %v; in parts: %v", err, perr)
		}
		if err != nil {
			return
		}
		joined, jerr := testutil.AssembleParts(parts)
		if jerr != nil {
			t.Fatal(jerr)
		}
		// Every line's usage read, the same Storylines as repeated ones skipped.
		flushBytes, rereadUsage = old, true
		defer func() { rereadUsage = false }()
		var reread []*model.Storyline
		if err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, Layout,
			func(sl *model.Storyline) error { reread = append(reread, sl); return nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(whole, reread) {
			w, _ := json.MarshalIndent(whole, "", " ")
			r, _ := json.MarshalIndent(reread, "", " ")
			t.Fatalf("repeated usage skipped differs from read again:\n%s", testutil.UnifiedDiff(string(r), string(w)))
		}
		if !reflect.DeepEqual(whole, joined) {
			w, _ := json.MarshalIndent(whole, "", " ")
			j, _ := json.MarshalIndent(joined, "", " ")
			t.Fatalf("joined parts differ from the whole Storylines:\n%s", testutil.UnifiedDiff(string(w), string(j)))
		}
	})
}

// FuzzFreshExtra checks freshExtra's one-pass write against stripping the
// line's extra, then adding s.set to it.
func FuzzFreshExtra(f *testing.F) {
	f.Add([]byte(`{"cwd":"/x","requestId":"r","type":"assistant"}`), []byte(`{"stop_reason":null}`), "usage", []byte(`{"service_tier":"standard"}`))
	f.Add([]byte(`{"img":"data:image/png;base64,`+strings.Repeat("A", 300)+`"}`), []byte(`{}`), "usage", []byte(`{"x":1}`))
	f.Add([]byte(`{"usage":{"data":"`+strings.Repeat("A", 300)+`"}}`), []byte(`{"a":"\u00e9"}`), "usage_counted_on", []byte(`"s1"`))
	f.Fuzz(func(t *testing.T, line, msg []byte, key string, val []byte) {
		if !jsonx.Valid(line) || !jsonx.Valid(msg) || !jsonx.Valid(val) {
			return
		}
		obj, isObject := format.AppendMembers(nil, line)
		mobj, msgObject := format.AppendMembers(nil, msg)
		if !isObject || !msgObject {
			return
		}
		m := mobj.Extra(nil)
		again, _ := format.AppendMembers(nil, line)
		s := newSession(format.Source{})
		want := s.addExtra(format.StripExtra(s.lineExtra(&again, m)), map[string][]byte{key: val}, nil)
		s.set[key] = val
		got := s.addExtra(s.freshExtra(&obj, m), s.set, nil)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Fatalf("freshExtra: %v, want %v", deref(got), deref(want))
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// FuzzArgumentsText checks argumentsText against format.ArgumentsText on
// valid JSON, which is what it gets.
func FuzzArgumentsText(f *testing.F) {
	f.Add([]byte(` {"command": "ls -la", "n": [1, 2.5e3, null]} `))
	f.Add([]byte(`"{\"a\":1}"`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !jsonx.Valid(raw) {
			return
		}
		got, gotOK := argumentsText(raw)
		want, wantOK := format.ArgumentsText(raw)
		if gotOK != wantOK || deref(got) != deref(want) {
			t.Fatalf("argumentsText(%q) = %q, %v; want %q, %v", raw, deref(got), gotOK, deref(want), wantOK)
		}
	})
}

// FuzzScanLine checks the one-pass scan of a line against split, the
// general path: the scanner takes exactly the valid objects, with the
// members, message members and content blocks (as SplitArray and
// AppendMembers find them) split gives.
func FuzzScanLine(f *testing.F) {
	for _, name := range fixtures {
		for _, line := range bytes.Split(testutil.Fixture(f, name), []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(`{"message":{"a":1},"message":[]}`))
	f.Add([]byte(` {"type" : "user", "message" : {"role":"user"} , "m\u0065ssage":{"content":"x"}} `))
	f.Add([]byte(`{"message":{"content":[{"type":"text","text":"a"}, 1 ,{"c\u006fntent":[]}],"content":[{}]}}`))
	f.Add([]byte(`{"message":{"content":[{"a":1}]},"message":{"content":"x"}}`))
	f.Add([]byte(`{"message":{"content":[{"a":1}]},"message":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		s := newSession(format.Source{})
		scanned := s.scan(line)
		top, msg, msgObject, blocks := slices.Clone(s.top), slices.Clone(s.msg), s.msgObject, contentBlocks(s)
		err := s.split(1, line)
		if scanned != (err == nil) {
			t.Fatalf("scanned %v, split error %v", scanned, err)
		}
		if !scanned {
			return
		}
		if !reflect.DeepEqual(top, s.top) || msgObject != s.msgObject || msgObject && !reflect.DeepEqual(msg, s.msg) {
			t.Fatalf("scanned %q %q %v, split %q %q %v", top, msg, msgObject, s.top, s.msg, s.msgObject)
		}
		// What the content blocks were before the one-pass list.
		var want []blockMembers
		if elems, isArray := format.SplitArray(s.msg.Get("content")); s.msgObject && isArray {
			want = []blockMembers{}
			for _, e := range elems {
				ms, isObject := format.AppendMembers(nil, e)
				want = append(want, blockMembers{e, ms, isObject})
			}
		}
		if !reflect.DeepEqual(blocks, want) || !reflect.DeepEqual(contentBlocks(s), want) {
			t.Fatalf("scanned blocks %s, split %s, want %s", blocks, contentBlocks(s), want)
		}
	})
}

type blockMembers struct {
	elem     []byte
	members  format.Members
	isObject bool
}

func (b blockMembers) String() string { return fmt.Sprintf("%s %q %v", b.elem, b.members, b.isObject) }

// contentBlocks is a copy of s's content blocks; nil when the content is
// not an array.
func contentBlocks(s *session) []blockMembers {
	if !s.listed {
		return nil
	}
	out := []blockMembers{}
	for i, e := range s.content.Elems {
		ms, isObject := s.content.Object(i)
		var clone format.Members // nil when empty, as AppendMembers leaves it
		if len(ms) > 0 {
			clone = slices.Clone(ms)
		}
		out = append(out, blockMembers{e, clone, isObject})
	}
	return out
}

// FuzzWrittenAs: an id writtenAs accepts is what format.String decodes.
func FuzzWrittenAs(f *testing.F) {
	for _, s := range [][2]string{{`"abc"`, "abc"}, {`"a\\b"`, `a\\b`}, {`"a\\b"`, `a\b`}, {"\"\xff\"", "\xff"}, {`""`, ""}, {`"é"`, "é"}, {`1`, "1"}} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, raw []byte, s string) {
		if writtenAs(raw, s) && format.String(raw) != s {
			t.Fatalf("writtenAs(%q, %q), String %q", raw, s, format.String(raw))
		}
	})
}
