package actf

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// findSamples returns <repo root>/../shared/samples, the repo root being
// the first ancestor of the package directory that holds go.mod.
func findSamples() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repo root not found")
		}
		dir = parent
	}
	samples := filepath.Join(filepath.Dir(dir), "shared", "samples")
	_, err = os.Stat(samples)
	return samples, err
}

const sampleDraft = "actf_candidates/nemo-agent-toolkit_exmp02_atof-nat-draft.atof.jsonl"

func normalize(t testing.TB, name string, data []byte) ([]*model.Storyline, string) {
	t.Helper()
	layout, sls := testutil.MustNormalize(t, New(), name, data)
	return sls, layout
}

// loadInputs reads the golden cases: the real sample plus hand-made streams
// in the two dialects no licensed sample exists for.
func loadInputs() (map[string][]byte, error) {
	samples, err := findSamples()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for name, path := range map[string]string{
		filepath.Base(sampleDraft): filepath.Join(samples, sampleDraft),
		"atof01_relay.jsonl":       filepath.Join("testdata", "atof01_relay.jsonl"),
		"nat02_exmp01.jsonl":       filepath.Join("testdata", "nat02_exmp01.jsonl"),
		"nat02_idless_calls.jsonl": filepath.Join("testdata", "nat02_idless_calls.jsonl"),
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out[name] = data
	}
	return out, nil
}

func inputs(t *testing.T) map[string][]byte {
	t.Helper()
	in, err := loadInputs()
	if err != nil {
		t.Skipf("samples unavailable: %v", err)
	}
	return in
}

// TestGolden compares the Storylines of the real sample and of every
// hand-made stream in testdata/ with testdata/golden/<name>.golden.json.
func TestGolden(t *testing.T) {
	testutil.GoldenSamples(t, New(), path.Dir(sampleDraft), path.Base(sampleDraft))
	fixtures, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for i, f := range fixtures {
		fixtures[i] = filepath.Base(f)
	}
	testutil.GoldenFixtures(t, New(), fixtures...)
}

// TestFigures asserts the figures checked by hand against the sources (see
// the report and docs/formats.md (actf section)).
func TestFigures(t *testing.T) {
	all := inputs(t)
	tests := []struct {
		file, layout, session, parent, status, agent, model string
		steps, calls                                        int64
		errorCalls                                          int
		prompt, completion, cached                          int64 // -1 = NULL
		warnings                                            int
		sources                                             string // step sources, in order
	}{
		{file: filepath.Base(sampleDraft), layout: LayoutNATDraft, session: "agent-002", status: model.StatusCompleted,
			agent: "search_agent", model: "gpt-4.1", steps: 3, calls: 1, errorCalls: 1,
			prompt: -1, completion: -1, cached: -1, sources: "user,agent,agent"},
		{file: "atof01_relay.jsonl", layout: LayoutATOF01, session: "sess-child", parent: "sess-main",
			status: model.StatusError, agent: "child_agent", model: "gpt-4.1", steps: 2, calls: 0,
			prompt: -1, completion: -1, cached: -1, warnings: 2, sources: "user,agent"},
		{file: "atof01_relay.jsonl", layout: LayoutATOF01, session: "sess-main", status: model.StatusCompleted,
			agent: "relay_agent", model: "gpt-4.1", steps: 5, calls: 1,
			prompt: 60, completion: 8, cached: 14, sources: "user,system,user,agent,agent"},
		{file: "nat02_exmp01.jsonl", layout: LayoutNAT02, session: "scope-agent-001", status: model.StatusCompleted,
			agent: "simple_calculator_agent", model: "nvidia/nemotron-3-super-v3", steps: 3, calls: 1,
			prompt: -1, completion: -1, cached: -1, sources: "user,agent,agent"},
		// 3 calls announced without ids + 4 tool scopes (one unannounced):
		// 4 rows, not 7.
		{file: "nat02_idless_calls.jsonl", layout: LayoutNAT02, session: "idless", status: model.StatusCompleted,
			agent: "research_agent", model: "gpt-4.1", steps: 3, calls: 4,
			prompt: -1, completion: -1, cached: -1, sources: "user,agent,agent"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.session, func(t *testing.T) {
			sls, layout := normalize(t, tt.file, all[tt.file])
			if layout != tt.layout {
				t.Fatalf("layout %q, want %q", layout, tt.layout)
			}
			var sl *model.Storyline
			for _, s := range sls {
				if s.Run.SessionID == tt.session {
					sl = s
				}
			}
			if sl == nil {
				t.Fatalf("no Storyline for session %q", tt.session)
			}
			r := sl.Run
			var sources []string
			for _, st := range sl.Steps {
				sources = append(sources, st.Source)
			}
			var errorCalls int
			for _, tc := range sl.ToolCalls {
				if tc.ResultStatus == model.ResultError {
					errorCalls++
				}
			}
			got := []any{r.Status, model.Deref(r.AgentName), model.Deref(r.AgentModelName), model.Deref(r.ParentSessionID),
				r.StepCount, r.ToolCallCount, errorCalls, testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens), testutil.OrMinus1(r.CachedTokens),
				len(sl.Warnings), strings.Join(sources, ","), r.SourceFormat}
			want := []any{tt.status, tt.agent, tt.model, tt.parent, tt.steps, tt.calls, tt.errorCalls,
				tt.prompt, tt.completion, tt.cached, tt.warnings, tt.sources, "actf/" + tt.layout}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSampleDetails pins the sample's edge cases: the failing tool scope
// keeps its error, the agent's final answer becomes a step, and the agent
// input already in the llm input is not repeated.
func TestSampleDetails(t *testing.T) {
	sls, _ := normalize(t, "s.jsonl", inputs(t)[filepath.Base(sampleDraft)])
	if len(sls) != 1 {
		t.Fatalf("%d Storylines, want 1", len(sls))
	}
	sl := sls[0]
	tc := sl.ToolCalls[0]
	if tc.ToolCallID != "call_xyz" || tc.FunctionName != "web_search" || tc.StepID != "llm-003" ||
		model.Deref(tc.Arguments) != `{"q":"quantum computing news"}` || !tc.ArgumentsValid ||
		model.Deref(tc.Result) != "request timed out after 5s" || tc.ResultLink != model.LinkByID ||
		!strings.Contains(model.Deref(tc.Extra), `"type":"TimeoutError"`) {
		t.Errorf("tool call: %+v", tc)
	}
	last := sl.Steps[2]
	if !strings.HasPrefix(model.Deref(last.MessageValue), "Sorry \u2014 the search service") {
		t.Errorf("final answer: %q", model.Deref(last.MessageValue))
	}
	if sl.Steps[1].MessageKind != "tool_calls_only" || sl.Steps[1].MessageValue != nil {
		t.Errorf("llm step: %+v", sl.Steps[1])
	}
	if r := sl.Run; r.StartedAt.Format("15:04:05") != "00:00:00" || r.EndedAt.Format("15:04:05") != "00:00:10" {
		t.Errorf("run times %v..%v", r.StartedAt, r.EndedAt)
	}
	if !strings.Contains(model.Deref(sl.Run.Extra), `"stream_header"`) {
		t.Errorf("run extra lacks the stream header: %s", model.Deref(sl.Run.Extra))
	}
}

// TestIdlessCallsPairWithToolScopes: an llm output's function calls
// without ids are the calls its tool scopes ran, paired by name and order
// within the parent scope: one row per run, never one from the payload and
// another from the scope. The fixture's llm output announces search(a),
// search(b) and calc(x) without ids; the scopes run search (no id), calc
// (runtime id rt-calc-9), search (no id), and a fourth search nobody
// announced.
func TestIdlessCallsPairWithToolScopes(t *testing.T) {
	sls, _ := normalize(t, "idless.jsonl", inputs(t)["nat02_idless_calls.jsonl"])
	type row struct{ id, name, args, result, link string }
	want := []row{
		{"llm-1:call:0", "search", `{"q": "a"}`, "A results", model.LinkByName},
		{"llm-1:call:1", "search", `{"q": "b"}`, "B results", model.LinkByName},
		{"rt-calc-9", "calc", `{"x": 1}`, "2", model.LinkByName},
		{"tool-4", "search", `{"q":"c"}`, "C results", model.LinkByID},
	}
	calls := sls[0].ToolCalls
	if len(calls) != len(want) {
		t.Fatalf("%d tool call rows, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		tc := calls[i]
		got := row{tc.ToolCallID, tc.FunctionName, model.Deref(tc.Arguments), model.Deref(tc.Result), tc.ResultLink}
		if got != w || tc.StepID != "llm-1" || tc.ResultStatus != model.ResultOK {
			t.Errorf("row %d = %+v (step %s, %s), want %+v", i, got, tc.StepID, tc.ResultStatus, w)
		}
	}
}

func TestSubagentLink(t *testing.T) {
	sls, _ := normalize(t, "r.jsonl", inputs(t)["atof01_relay.jsonl"])
	if len(sls) != 2 || sls[0].Run.SessionID != "sess-child" || sls[1].Run.SessionID != "sess-main" {
		t.Fatalf("sessions: %d", len(sls))
	}
	child, main := sls[0].Run, sls[1].Run
	if child.RunID != "sess-main" || main.RunID != "sess-main" {
		t.Errorf("run ids %q %q", child.RunID, main.RunID)
	}
	if want := `[{"step_id":"l-1","session_id":"sess-child","embedded":false,"child_session_id":"sess-child"}]`; model.Deref(main.SubagentRefs) != want {
		t.Errorf("subagent_refs %s", model.Deref(main.SubagentRefs))
	}
	if !strings.Contains(model.Deref(child.Extra), `"redacted_payloads":3`) {
		t.Errorf("child extra %s", model.Deref(child.Extra))
	}
}

// lateEnd ends a scope after its session was emitted, and after another
// session (see TestEdgeCases).
const lateEnd = `{"kind":"ScopeStart","schema_version":"0.1","uuid":"a1","scope_type":"agent","name":"x","input":"q1"}` + "\n" +
	`{"kind":"ScopeStart","schema_version":"0.1","uuid":"t","parent_uuid":"a1","scope_type":"tool","name":"ls","input":{"cmd":"ls"}}` + "\n" +
	`{"kind":"ScopeEnd","schema_version":"0.1","uuid":"a1","scope_type":"agent","name":"x","output":"r1"}` + "\n" +
	`{"kind":"ScopeStart","schema_version":"0.1","uuid":"a2","scope_type":"agent","name":"y","input":"q2"}` + "\n" +
	`{"kind":"ScopeStart","schema_version":"0.1","uuid":"u","parent_uuid":"a2","scope_type":"llm","name":"m","input":"q"}` + "\n" +
	`{"kind":"ScopeEnd","schema_version":"0.1","uuid":"u","parent_uuid":"a2","scope_type":"llm","name":"m","output":"a"}` + "\n" +
	`{"kind":"ScopeEnd","schema_version":"0.1","uuid":"a2","scope_type":"agent","name":"y","output":"r2"}` + "\n" +
	`{"kind":"ScopeEnd","schema_version":"0.1","uuid":"t","name":"ls","output":"a.txt"}`

func TestEdgeCases(t *testing.T) {
	tests := []struct {
		name, input string
		wantErr     bool
		check       func(t *testing.T, sls []*model.Storyline)
	}{
		{name: "bad JSON line", wantErr: true,
			input: `{"kind":"ScopeStart","schema_version":"0.1","uuid":"a","scope_type":"agent","name":"x"}` + "\n{oops\n"},
		{name: "no agent scope: file session, tool without llm",
			input: `{"kind":"scope","category":"tool","name":"terminal","scope_category":"start","data":{"cmd":"ls"}}` + "\n" +
				`{"kind":"scope","category":"tool","name":"terminal","scope_category":"end","metadata":{"status":"error"},"data":"boom"}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				sl := sls[0]
				if sl.Run.SessionID != "in" || len(sl.ToolCalls) != 1 || len(sl.Steps) != 1 ||
					sl.ToolCalls[0].ResultStatus != model.ResultError || model.Deref(sl.ToolCalls[0].Result) != "boom" ||
					model.Deref(sl.ToolCalls[0].Arguments) != `{"cmd":"ls"}` || len(sl.Warnings) != 1 {
					t.Errorf("%+v %+v %v", sl.Run, sl.ToolCalls, sl.Warnings)
				}
			}},
		{name: "id-less call run by a tool scope nested in the llm scope",
			input: `{"kind":"ScopeStart","schema_version":"0.1","uuid":"l","scope_type":"llm","name":"m","input":"q"}` + "\n" +
				`{"kind":"ScopeEnd","schema_version":"0.1","uuid":"l","scope_type":"llm","name":"m","output":{"content":"","tool_calls":[{"name":"ls","arguments":{}}]}}` + "\n" +
				`{"kind":"ScopeStart","schema_version":"0.1","uuid":"t","parent_uuid":"l","scope_type":"tool","name":"ls"}` + "\n" +
				`{"kind":"ScopeEnd","schema_version":"0.1","uuid":"t","parent_uuid":"l","scope_type":"tool","name":"ls","output":"a.txt"}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				calls := sls[0].ToolCalls
				if len(calls) != 1 || calls[0].ToolCallID != "l:call:0" || model.Deref(calls[0].Result) != "a.txt" || calls[0].ResultLink != model.LinkByName {
					t.Errorf("%+v", calls)
				}
			}},
		{name: "dangling agent and reopened session",
			input: `{"kind":"ScopeStart","schema_version":"0.1","uuid":"a","scope_type":"agent","name":"x","metadata":{"session_id":"s"}}` + "\n" +
				`{"kind":"ScopeEnd","schema_version":"0.1","uuid":"a","scope_type":"agent","name":"x","status":"ok","metadata":{"session_id":"s"}}` + "\n" +
				`{"kind":"ScopeStart","schema_version":"0.1","uuid":"b","scope_type":"agent","name":"x","metadata":{"session_id":"s"}}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				if len(sls) != 2 || sls[0].Run.SessionID != "s" || sls[1].Run.SessionID != "s#2" ||
					model.Deref(sls[1].Run.OriginalSessionID) != "s" || sls[1].Run.Status != model.StatusUnknown {
					t.Errorf("%+v", sls)
				}
			}},
		// The end names neither its type nor its parent: what it is and where
		// it belongs come from its start, which must outlive its session
		// (whose blocks are reused only when none of its scopes is open).
		{name: "scope ended after its session was emitted",
			input: lateEnd,
			check: func(t *testing.T, sls []*model.Storyline) {
				if len(sls) != 3 {
					t.Fatalf("%d Storylines", len(sls))
				}
				sl := sls[2]
				if sl.Run.SessionID != "a1#2" || len(sl.ToolCalls) != 1 || sl.ToolCalls[0].ToolCallID != "t" ||
					model.Deref(sl.ToolCalls[0].Result) != "a.txt" {
					t.Errorf("%+v %+v", sl.Run, sl.ToolCalls)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sls []*model.Storyline
			err := New().Normalize(context.Background(), strings.NewReader(tt.input), format.Source{Path: "in.jsonl", File: "in.jsonl"},
				LayoutNATDraft, func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
			if tt.wantErr {
				var pe *format.ParseError
				if !errors.As(err, &pe) || pe.Line != 2 {
					t.Fatalf("err = %v, want a ParseError at line 2", err)
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

// TestRowsOutliveLines checks that events and Storylines share no memory
// with the reader's buffer or with other sessions: lines are read in place
// and events, lines and timestamps are allocated in blocks. A Storyline
// written out after the stream is read must be what it was when emitted,
// and reading the stream in small parts (which moves lines around in the
// buffer) must not change it.
func TestRowsOutliveLines(t *testing.T) {
	for name, data := range inputs(t) {
		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(bytes.Clone(data), '\n')
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		var stream []byte
		for i := range 300 { // well past the reader's buffer, sessions of several sizes in turn
			stream = append(stream, data...)
			stream = append(stream, bytes.Join(lines[:len(lines)*(i%3)/4], nil)...)
		}
		layout, ok := New().Detect(format.NewProbe(name, data, false))
		if !ok {
			t.Fatalf("%s: not detected", name)
		}
		read := func(r io.Reader) (sls []*model.Storyline, atEmit []string) {
			err := New().Normalize(context.Background(), r, format.Source{Path: name, File: name}, layout,
				func(sl *model.Storyline) error {
					text, err := jsonx.Marshal(sl)
					sls, atEmit = append(sls, sl), append(atEmit, string(text))
					return err
				})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return sls, atEmit
		}
		sls, atEmit := read(bytes.NewReader(stream))
		// Rows share blocks across sessions: appending to one Storyline's
		// must not write into another's.
		for _, sl := range sls {
			_ = append(sl.Steps, model.Step{StepID: "appended"})
			_ = append(sl.ToolCalls, model.ToolCall{ToolCallID: "appended"})
		}
		for i, sl := range sls {
			if text, _ := jsonx.Marshal(sl); string(text) != atEmit[i] {
				t.Fatalf("%s: Storyline %d changed after it was emitted", name, i)
			}
		}
		if _, inParts := read(iotest.HalfReader(bytes.NewReader(stream))); !slices.Equal(inParts, atEmit) {
			t.Fatalf("%s: the stream read in parts gives other Storylines", name)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"kind":"scope","scope_category":"start","atof_version":"0.1","uuid":"u"}`, LayoutATOF01},
		{`{"kind":"scope","category":"tool","name":"t","scope_category":"start"}`, LayoutATOF01},
		{`{"schema_version":"0.1","uuid":"h","kind":"StreamHeader","codecs":{}}`, LayoutNATDraft},
		{`{"kind":"StreamHeaderEvent","schema_version":"0.2","uuid":"h"}`, LayoutNAT02},
		{`{"kind":"ScopeStart","schema_version":"0.2","uuid":"a","scope_type":"agent","flags":[]}`, LayoutNAT02},
		{`{"kind":"ScopeStart","schema_version":"0.1","uuid":"a","scope_type":"agent"}`, LayoutNATDraft},
		{`{"v":1,"event_id":"e","kind":"mark","seq":0}`, ""},
		{`{"messages":[]}`, ""},
	}
	for _, tt := range tests {
		got, ok := New().Detect(format.NewProbe("x.jsonl", []byte(tt.line+"\n"+tt.line+"\n"), false))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: got %q %v, want %q", tt.line, got, ok, tt.want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	in, _ := loadInputs()
	for _, data := range in {
		f.Add(data)
	}
	f.Add([]byte(`{"kind":"ScopeEnd","uuid":"x","scope_type":"llm","output":{"choices":[{"message":{"content":[{"type":"tool_use"}]}}]}}`))
	f.Add([]byte(`{"kind":"scope","scope_category":"end","data":"{\"reason\":\"error\"}","category":"agent"}`))
	f.Add([]byte("null\n[]\n{}\n"))
	f.Add([]byte(lateEnd))
	// Streams are read twice, reusing the blocks of flushed sessions and
	// not: the Storylines must be the same.
	read := func(data []byte, layout string, reuse bool) (out []string, err error) {
		reuseBlocks = reuse
		defer func() { reuseBlocks = true }()
		err = New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
			func(sl *model.Storyline) error {
				text, err := jsonx.Marshal(sl)
				out = append(out, string(text))
				return err
			})
		return out, err
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, layout := range []string{LayoutATOF01, LayoutNAT02, LayoutNATDraft} {
			got, err := read(data, layout, true)
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("error is not a ParseError: %v", err)
			}
			want, wantErr := read(data, layout, false)
			if !slices.Equal(got, want) || (err == nil) != (wantErr == nil) {
				t.Fatalf("%s: reusing blocks gives other Storylines (%v, %v)", layout, err, wantErr)
			}
		}
	})
}

func FuzzDetect(f *testing.F) {
	in, _ := loadInputs()
	for _, data := range in {
		f.Add(data)
	}
	f.Add([]byte(`{"kind":"scope"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.jsonl", data, false))
	})
}

// TestStreamsCarryNothingBetweenFiles normalizes every input, then all of
// them again in reverse order after one that fails midway, each time with
// a stream kept from earlier files (streams): each file's Storylines must
// be what they were the first time. Session ids that a stream had seen or
// emitted, scopes left open or a header of another file would change them.
func TestStreamsCarryNothingBetweenFiles(t *testing.T) {
	in := inputs(t)
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	slices.Sort(names)
	read := func(name string, data []byte) ([]string, error) {
		layout, ok := New().Detect(format.NewProbe(name, data, false))
		if !ok {
			t.Fatalf("%s: not detected", name)
		}
		var out []string
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, layout,
			func(sl *model.Storyline) error {
				text, err := jsonx.Marshal(sl)
				out = append(out, string(text))
				return err
			})
		return out, err
	}
	first := map[string][]string{}
	for _, name := range names {
		out, err := read(name, in[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		first[name] = out
	}
	for _, name := range slices.Backward(names) {
		// The file cut short of a line's end fails after some of its
		// sessions, leaving the stream with scopes open.
		data := in[name]
		broken := append(slices.Clone(data[:len(data)/2]), []byte("\n{\"kind\":\n")...)
		if _, err := read(name, broken); err == nil {
			t.Fatalf("%s cut short: no error", name)
		}
		out, err := read(name, data)
		if err != nil {
			t.Fatalf("%s again: %v", name, err)
		}
		if !slices.Equal(out, first[name]) {
			t.Errorf("%s: other Storylines after other files were read with the same streams", name)
		}
	}
}
