package canonical

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

const sampleFile = "two_sessions.jsonl"

func readSample(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", sampleFile))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func normalize(t testing.TB, data []byte) []*model.Storyline {
	t.Helper()
	var out []*model.Storyline
	err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: sampleFile, File: sampleFile},
		LayoutJSONL, func(sl *model.Storyline) error { out = append(out, sl); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGolden(t *testing.T) { testutil.GoldenFixtures(t, New(), sampleFile) }

// TestFigures asserts the figures counted by hand in testdata/two_sessions.jsonl.
func TestFigures(t *testing.T) {
	sls := normalize(t, readSample(t))
	var order []string
	for _, sl := range sls {
		order = append(order, sl.Run.SessionID)
	}
	// sub ends first, main second, open is flushed at EOF.
	if strings.Join(order, ",") != "sub,main,open" {
		t.Fatalf("emission order %v", order)
	}
	tests := []struct {
		idx                                    int
		runID, status, parent, agentID         string
		steps, calls                           int64
		prompt, completion, cached, reportedIn int64
		warnings                               int
	}{
		{idx: 0, runID: "run-1", status: model.StatusCompleted, parent: "main", agentID: "flights",
			steps: 1, calls: 0, prompt: 7, completion: 3, cached: -1, reportedIn: -1},
		{idx: 1, runID: "run-1", status: model.StatusCompleted, agentID: "planner",
			steps: 4, calls: 2, prompt: 250, completion: 25, cached: 40, reportedIn: 257, warnings: 1},
		{idx: 2, runID: "run-2", status: model.StatusUnknown, prompt: -1, completion: -1, cached: -1, reportedIn: -1},
	}
	for _, tt := range tests {
		r := sls[tt.idx].Run
		got := []any{r.RunID, r.Status, model.Deref(r.ParentSessionID), model.Deref(r.AgentID), r.StepCount, r.ToolCallCount,
			testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens), testutil.OrMinus1(r.CachedTokens), testutil.OrMinus1(r.ReportedPromptTokens), len(sls[tt.idx].Warnings),
			r.SourceFormat}
		want := []any{tt.runID, tt.status, tt.parent, tt.agentID, tt.steps, tt.calls, tt.prompt, tt.completion, tt.cached,
			tt.reportedIn, tt.warnings, "canonical/jsonl"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", r.SessionID, got, want)
		}
	}
	main := sls[1]
	r := main.Run
	if r.StartedAt.Format(time.RFC3339) != "2026-03-01T09:00:00Z" || r.EndedAt.Format(time.RFC3339) != "2026-03-01T09:00:14Z" {
		t.Errorf("times %v %v", r.StartedAt, r.EndedAt)
	}
	if model.Deref(r.ContinuedTrajectoryRef) != "next.jsonl" || model.Deref(r.TrajectoryID) != "traj-main" ||
		model.Deref(r.AgentModelName) != "gpt-4.1" || testutil.OrMinus1(r.ReportedStepCount) != 5 {
		t.Errorf("run %+v", r)
	}
	if want := `[{"step_id":"s3","session_id":"sub","embedded":true,"child_session_id":"sub"}]`; model.Deref(r.SubagentRefs) != want {
		t.Errorf("subagent_refs %s", model.Deref(r.SubagentRefs))
	}
	if want := `{"event_counts":{"context.compaction":1,"mark":1},"run_end":{"reason":"done"},"run_start":{"env":"ci"}}`; model.Deref(r.Extra) != want {
		t.Errorf("run extra %s", model.Deref(r.Extra))
	}
	c1, c2 := main.ToolCalls[0], main.ToolCalls[1]
	if c1.StepID != "s3" || model.Deref(c1.Result) != "3 flights found" || c1.ResultStatus != model.ResultOK ||
		model.Deref(c1.ResultStepID) != "s4" || model.Deref(c1.Arguments) != `{"task":"flights"}` || !c1.ArgumentsValid {
		t.Errorf("c1 %+v", c1)
	}
	if c2.StepID != "s3" || c2.ResultStatus != model.ResultError || model.Deref(c2.Result) != `{"message":"bad arguments"}` ||
		c2.ArgumentsValid || c2.ResultLink != model.LinkByID {
		t.Errorf("c2 %+v", c2)
	}
	s3, s5 := main.Steps[2], main.Steps[3]
	if s3.MessageKind != messageKindToolCallsOnly || s3.Timestamp.Nanosecond() != 123456000 || model.Deref(s3.Extra) != `{"latency_ms":812}` {
		t.Errorf("s3 %+v", s3)
	}
	if model.Deref(s5.ModelName) != "gpt-4.1-mini" || testutil.OrMinus1(s5.PromptTokens) != 150 {
		t.Errorf("s5 %+v", s5)
	}
	if sub := sls[0].Steps[0]; sub.StepID != "s-2" || sub.CostUSD == nil || *sub.CostUSD != 0.001 {
		t.Errorf("sub step %+v", sub)
	}
}

// TestStorylinesOrderIndependent: same events in any order → identical rows.
func TestStorylinesOrderIndependent(t *testing.T) {
	var events []model.Event
	if err := ReadEvents(context.Background(), bytes.NewReader(readSample(t)), format.Source{File: "f"},
		func(_ int64, e model.Event) error { events = append(events, e); return nil }); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(Storylines(events, "f"))
	rev := make([]model.Event, len(events))
	for i, e := range events {
		rev[len(events)-1-i] = e
	}
	got, _ := json.Marshal(Storylines(rev, "f"))
	if !bytes.Equal(got, want) {
		t.Error("reversed input gives different rows")
	}
	sls := Storylines(events, "f")
	if len(sls) != 3 || sls[0].Run.SessionID != "main" || sls[1].Run.SessionID != "open" || sls[2].Run.SessionID != "sub" {
		t.Errorf("Storylines not sorted by session_id")
	}
}

func TestRoundTrip(t *testing.T) {
	err := format.EachLine(context.Background(), bytes.NewReader(readSample(t)), func(n int64, line []byte) error {
		e, err := DecodeEvent(line)
		if err != nil {
			return err
		}
		out, err := EncodeEvent(&e)
		if err != nil {
			return err
		}
		back, err := DecodeEvent(out)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(e, back) {
			t.Errorf("line %d: %+v != %+v", n, e, back)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := DecodeEvent([]byte(`{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01T01:00:00.1234567+01:00","kind":"raw","payload":{ "a" : 1 }}`))
	if out, _ := EncodeEvent(&e); string(out) != `{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01T00:00:00.123456Z","kind":"raw","payload":{"a":1}}` {
		t.Errorf("encoded %s", out)
	}
}

func TestDecodeErrors(t *testing.T) {
	const ok = `"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01T00:00:00Z"`
	tests := []struct{ line, field string }{
		{`{` + ok + `,"kind":"raw","payload":{},"extra":1}`, "extra"},
		{`{` + ok + `,"kind":"raw","payload":{},"kind":"raw"}`, "kind"},
		{`{"v":2,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01T00:00:00Z","kind":"raw","payload":{}}`, "v"},
		{`{"v":1,"event_id":"","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01T00:00:00Z","kind":"raw","payload":{}}`, "event_id"},
		{`{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":1.5,"ts":"2026-01-01T00:00:00Z","kind":"raw","payload":{}}`, "seq"},
		{`{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":-1,"ts":"2026-01-01T00:00:00Z","kind":"raw","payload":{}}`, "seq"},
		{`{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01","kind":"raw","payload":{}}`, "ts"},
		{`{"v":1,"event_id":"e","run_id":"r","seq":0,"ts":"2026-01-01T00:00:00Z","kind":"raw","payload":{}}`, "session_id"},
		{`{` + ok + `,"kind":"nope","payload":{}}`, "kind"},
		{`{` + ok + `,"kind":"raw","payload":[]}`, "payload"},
		{`{` + ok + `,"kind":"raw","payload":{},"trace_id":7}`, "trace_id"},
		{`{` + ok + `,"kind":"raw","payload":{},"step_id":""}`, "step_id"},
		{`{` + ok + `,"kind":"message","payload":{"source":"robot"}}`, "payload.source"},
		{`{` + ok + `,"kind":"message","payload":{}}`, "payload.source"},
		{`{` + ok + `,"kind":"message","payload":{"source":"agent","prompt_tokens":-3}}`, "payload.prompt_tokens"},
		{`{` + ok + `,"kind":"tool.call","payload":{"name":"x"}}`, "tool_call_id"},
		{`{` + ok + `,"kind":"tool.call","tool_call_id":"c","payload":{}}`, "payload.name"},
		{`{` + ok + `,"kind":"tool.result","tool_call_id":"c","payload":{"status":"missing"}}`, "payload.status"},
		{`{` + ok + `,"kind":"run.end","payload":{"status":"done"}}`, "payload.status"},
		{`{` + ok + `,"kind":"usage","payload":{"model_name":"m"}}`, "payload"},
		{`{` + ok + `,"kind":"continuation.link","payload":{}}`, "payload.ref"},
		{`{` + ok + `,"kind":"subagent.link","payload":{"embedded":"yes","session_id":"x"}}`, "payload.embedded"},
	}
	for _, tt := range tests {
		_, err := DecodeEvent([]byte(tt.line))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: err = %v, want field %q", tt.line, err, tt.field)
		}
	}
	for _, bad := range []string{``, `[]`, `{"v":1`, `{"v":1} {}`, `null`} {
		if _, err := DecodeEvent([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestValidator(t *testing.T) {
	ev := func(id, session string, seq int64) *model.Event {
		return &model.Event{EventID: id, SessionID: session, Seq: seq}
	}
	v := NewValidator()
	v.Seed(map[string]int64{"a": 5}, func(id string) bool { return id == "stored" })
	tests := []struct {
		e    *model.Event
		want error
	}{
		{ev("x1", "a", 5), ErrSeqOrder},
		{ev("x1", "a", 6), nil},
		{ev("x1", "b", 0), ErrDuplicateEvent},
		{ev("stored", "b", 0), ErrDuplicateEvent},
		{ev("x2", "b", 0), nil},
		{ev("x3", "b", 0), ErrSeqOrder},
		{ev("x3", "b", 1), nil},
	}
	for i, tt := range tests {
		if err := v.Check(tt.e); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%d: err = %v, want %v", i, err, tt.want)
		}
	}
	if seq, ok := v.LastSeq("a"); !ok || seq != 6 {
		t.Errorf("LastSeq(a) = %d %v", seq, ok)
	}
}

func TestNormalizeErrors(t *testing.T) {
	const ev = `{"v":1,"event_id":"%s","run_id":"r","session_id":"s","seq":%d,"ts":"2026-01-01T00:00:00Z","kind":"%s","payload":%s}`
	line := func(id string, seq int, kind, payload string) string {
		return fmt.Sprintf(ev, id, seq, kind, payload)
	}
	tests := []struct {
		name, input string
		line        int64
	}{
		{"duplicate id", line("a", 0, "raw", "{}") + "\n" + line("a", 1, "raw", "{}"), 2},
		{"seq order", line("a", 1, "raw", "{}") + "\n\n" + line("b", 1, "raw", "{}"), 3},
		{"after run.end", line("a", 0, "run.end", `{"status":"completed"}`) + "\n" + line("b", 1, "raw", "{}"), 2},
		{"bad line", line("a", 0, "raw", "{}") + "\nnot json", 2},
	}
	for _, tt := range tests {
		err := New().Normalize(context.Background(), strings.NewReader(tt.input), format.Source{Path: "p"}, LayoutJSONL,
			func(*model.Storyline) error { return nil })
		var pe *format.ParseError
		if !errors.As(err, &pe) || pe.Line != tt.line || pe.Path != "p" {
			t.Errorf("%s: err = %v, want a ParseError at line %d", tt.name, err, tt.line)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, data string
		ok         bool
	}{
		{"x.jsonl", `{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"t","kind":"raw","payload":{}}` + "\n", true},
		{"x.json", `{"v":1,"event_id":"e","kind":"raw","seq":0,"payload":{}}`, true},
		{"x.jsonl", `{"v":1,"event_id":"e","kind":"raw"}` + "\n", false},
		{"x.jsonl", `{"kind":"ScopeStart","uuid":"u"}` + "\n", false},
		{"x.json", `[{"v":1,"event_id":"e","kind":"raw","seq":0}]`, false},
	}
	for _, tt := range tests {
		layout, ok := New().Detect(format.NewProbe(tt.name, []byte(tt.data), false))
		if ok != tt.ok || (ok && layout != LayoutJSONL) {
			t.Errorf("%s: got %q %v", tt.data, layout, ok)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", sampleFile)); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01T00:00:00Z","kind":"tool.result","tool_call_id":"c","payload":{"output":null}}`))
	f.Add([]byte(`{"v":1,"event_id":"e","run_id":"r","session_id":"s","seq":0,"ts":"2026-01-01T00:00:00Z","kind":"usage","step_id":"x","payload":{"cost_usd":1e308}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f"}, LayoutJSONL,
			func(*model.Storyline) error { return nil })
		var pe *format.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a ParseError: %v", err)
		}
		// Every decodable line must survive an encode/decode round trip.
		_ = format.EachLine(context.Background(), bytes.NewReader(data), func(_ int64, line []byte) error {
			e, err := DecodeEvent(line)
			if err != nil {
				return nil
			}
			out, err := EncodeEvent(&e)
			if err != nil {
				t.Fatalf("decoded event does not encode: %v", err)
			}
			back, err := DecodeEvent(out)
			if err != nil || !reflect.DeepEqual(e, back) {
				t.Fatalf("round trip: %v\n%s\n%s", err, line, out)
			}
			return nil
		})
	})
}

func FuzzDetect(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", sampleFile)); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"v":1,"event_id":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.jsonl", data, false))
	})
}
