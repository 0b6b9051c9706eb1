package inspect

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

const (
	hashSystem = "0123456789abcdef0123456789abcdef"
	hashCmd    = "fedcba9876543210fedcba9876543210"
	testHeader = `{"version":2,"status":"success","eval":{"run_id":"run-1","eval_id":"ev-1","task":"t","model":"openai/m",` +
		`"dataset":{"name":"d","sample_ids":[1,2,10]}},"plan":{"steps":[{"solver":"system_message"},{"solver":"react"}]},` +
		`"results":{"scores":[]},"stats":{}}`
	testStart = `{"version":2,"eval":{"run_id":"run-1","task":"t","model":"openai/m"},"plan":{"steps":[{"solver":"react"}]}}`
)

// sample10 is a monolith sample with hashed attachments, an events_data
// pool, a tool error, a grader call and a message limit.
const sample10 = `{"id":10,"epoch":1,"input":"hi","target":"x","uuid":"u-10",
"messages":[
 {"id":"m0","role":"system","content":"attachment://` + hashSystem + `"},
 {"id":"m1","role":"user","content":"hi","source":"input"},
 {"id":"m2","role":"assistant","content":[{"type":"reasoning","reasoning":"think"},{"type":"text","text":"ok"}],
  "tool_calls":[{"id":"c1","function":"bash","arguments":{"cmd":"attachment://` + hashCmd + `"},"view":{"format":"markdown","content":"ls"},"type":"function"}]},
 {"id":"m3","role":"tool","tool_call_id":"c1","function":"bash","content":"","error":{"type":"timeout","message":"timed out"}},
 {"id":"m4","role":"assistant","content":"done"}],
"events":[
 {"event":"sample_init","timestamp":"2026-01-01T00:00:00Z"},
 {"event":"model","timestamp":"2026-01-01T00:00:01Z","model":"openai/m","input":[],"input_refs":[[0,2]],
  "output":{"choices":[{"message":{"id":"other","role":"assistant","content":"ok","tool_calls":[{"id":"zz","function":"bash","arguments":{}}]},"stop_reason":"tool_calls"}],
  "usage":{"input_tokens":100,"output_tokens":10,"input_tokens_cache_read":50,"input_tokens_cache_write":5,"total_tokens":165,"reasoning_tokens":3,"total_cost":0.5}}},
 {"event":"tool","timestamp":"2026-01-01T00:00:02Z","id":"c1","function":"bash"},
 {"event":"model","timestamp":"2026-01-01T00:00:03Z","model":"openai/m","input":[],
  "output":{"choices":[{"message":{"role":"assistant","content":"done"}}],"usage":{"input_tokens":7,"output_tokens":1,"total_tokens":8}}},
 {"event":"model","timestamp":"2026-01-01T00:00:04Z","model":"openai/grader","input":[{"role":"user","content":"grade"}],
  "output":{"choices":[{"message":{"role":"assistant","content":"GRADE: C"}}],"usage":{"input_tokens":20,"output_tokens":2,"total_tokens":22}}},
 {"event":"score","timestamp":"2026-01-01T00:00:05Z"}],
"events_data":{"messages":[{"id":"m0","role":"system","content":"s"},{"id":"m1","role":"user","content":"hi"}],"calls":[]},
"attachments":{"` + hashSystem + `":"You are a helpful agent.","` + hashCmd + `":"ls -la"},
"scores":{"grader":{"value":"P","answer":"a","explanation":"e","metadata":{"k":1},"history":[]},"second":{"value":1}},
"model_usage":{"openai/m":{"input_tokens":107,"output_tokens":11,"input_tokens_cache_read":50,"input_tokens_cache_write":5,"total_tokens":173},
 "openai/grader":{"input_tokens":20,"output_tokens":2,"total_tokens":22}},
"limit":{"type":"message","limit":5},"store":{"k":"v"}}`

var pngURI = "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 40)

// testLog is an .eval log mixing both sample shapes, entries out of order,
// a re-logged sample and header.json written last.
func testLog(t testing.TB) []byte {
	return buildZip(t,
		entry{startJSON, testStart, zip.Deflate},
		entry{"samples/10_epoch_1.json", sample10, zstdMethod},
		entry{"samples/2_epoch_1.json", `{"id":2,"epoch":1,"messages":[{"role":"user","content":"old"}]}`, zip.Deflate},
		entry{"samples/1_epoch_2/sample.json", `{"id":1,"epoch":2,"scores":{"match":{"value":"yes"}},"message_refs":[[0,2],[3,4]],"uuid":"u-1-2"}`, zstdMethod},
		entry{"samples/1_epoch_2/metadata.json", `{"label":"x"}`, zstdMethod},
		entry{"samples/1_epoch_2/messages/2.json", `[{"id":"p","role":"user","content":"grade this"},` +
			`{"id":"c","role":"user","content":[{"type":"text","text":"look"},{"type":"image","image":"attachment://1"}]}]`, zstdMethod},
		entry{"samples/1_epoch_2/messages/0.json", `[{"id":"a","role":"user","content":"attachment://0"},{"id":"b","role":"assistant","content":"hello"}]`, zstdMethod},
		entry{"samples/1_epoch_2/events/0.json", `[{"event":"model","timestamp":"2026-01-02T00:00:00Z","model":"openai/m","input":[],"input_refs":[[0,1]],` +
			`"output":{"choices":[{"message":{"role":"assistant","content":"hello!"}}],"usage":{"input_tokens":10,"output_tokens":2,"input_tokens_cache_read":5,"total_tokens":12}}}]`, zstdMethod},
		entry{"samples/1_epoch_2/events/1.json", `[{"event":"span_begin","timestamp":"2026-01-02T00:00:09Z","id":"s","name":"x"}]`, zstdMethod},
		entry{"samples/1_epoch_2/events/stats.json", `{"version":1,"chunks":[]}`, zstdMethod},
		entry{"samples/1_epoch_2/events/uuids.json", `[null,null]`, zstdMethod},
		entry{"samples/1_epoch_2/skeleton.json", `{"version":1}`, zstdMethod},
		entry{"samples/1_epoch_2/calls/0.json", `[{"role":"user"}]`, zstdMethod},
		entry{"samples/1_epoch_2/attachments/0.json", `["What is 2+2?","` + pngURI + `"]`, zstdMethod},
		entry{"samples/2_epoch_1.json", `{"id":2,"epoch":1,"messages":[{"role":"user","content":"q"}],"scores":{"s":{"value":NaN}}}`, zip.Deflate},
		entry{"summaries.json", `[]`, zip.Deflate},
		entry{"reductions.json", `[]`, zip.Deflate},
		entry{headerJSON, testHeader, zstdMethod},
	)
}

func TestEvalZipLayouts(t *testing.T) {
	data := testLog(t)
	if layout, ok := New().Detect(format.NewProbe("log.zip", data, false)); !ok || layout != LayoutEval {
		t.Fatalf("not detected from its entries: %q %v", layout, ok)
	}
	sls := mustRun(t, "log.eval", data, LayoutEval)
	var order []string
	for _, sl := range sls {
		order = append(order, sl.Run.SessionID+" "+sl.Run.SourceFormat)
	}
	// Inspect's order: epoch, then id (2 before 10).
	if got := strings.Join(order, ", "); got != "2/epoch-1 inspect/eval, 10/epoch-1 inspect/eval, 1/epoch-2 inspect/eval-chunked" {
		t.Fatalf("Storylines: %s", got)
	}

	// The re-logged sample: the later entry wins; a NaN score is unscored.
	relogged := sls[0]
	if model.Deref(relogged.Steps[0].MessageValue) != "q" || relogged.Run.Reward != nil ||
		model.Deref(relogged.Run.Scores) != `{"s":{"value":null}}` || relogged.Run.Status != model.StatusCompleted {
		t.Errorf("re-logged sample: %+v %q", relogged.Run, model.Deref(relogged.Steps[0].MessageValue))
	}

	sl := sls[1]
	r := sl.Run
	if r.RunID != "run-1" || model.Deref(r.AgentName) != "react" || model.Deref(r.AgentModelName) != "openai/m" ||
		model.Deref(r.TrajectoryID) != "u-10" || r.Status != model.StatusTruncated {
		t.Errorf("run: %+v", r)
	}
	// value_to_float("P") = 0.5, from the first scorer; scores keep value,
	// answer and explanation; the rest goes to score_details.
	if r.Reward == nil || *r.Reward != 0.5 || model.Deref(r.Scores) != `{"grader":{"answer":"a","explanation":"e","value":"P"},"second":{"value":1}}` {
		t.Errorf("reward %v scores %s", r.Reward, model.Deref(r.Scores))
	}
	// model_usage: (107+50+5) + (20) prompt, 11 + 2 completion, 50 cached.
	if testutil.OrMinus1(r.ReportedPromptTokens) != 182 || testutil.OrMinus1(r.ReportedCompletionTokens) != 13 ||
		testutil.OrMinus1(r.ReportedCachedTokens) != 50 {
		t.Errorf("reported tokens %v %v %v", r.ReportedPromptTokens, r.ReportedCompletionTokens, r.ReportedCachedTokens)
	}
	// Steps: the two agent calls (155+7 prompt, 10+1 completion); the
	// grader's call is unattributed.
	if testutil.OrMinus1(r.PromptTokens) != 162 || testutil.OrMinus1(r.CompletionTokens) != 11 || testutil.OrMinus1(r.CachedTokens) != 50 ||
		r.CostUSD == nil || *r.CostUSD != 0.5 {
		t.Errorf("step tokens %v %v %v cost %v", r.PromptTokens, r.CompletionTokens, r.CachedTokens, r.CostUSD)
	}
	if r.StartedAt.Format("15:04:05") != "00:00:00" || r.EndedAt.Format("15:04:05") != "00:00:05" {
		t.Errorf("times %v %v", r.StartedAt, r.EndedAt)
	}
	for _, want := range []string{`"unattributed_model_calls":1`, `"score_details":{"grader":{"metadata":{"k":1}}}`,
		`"event_counts":{"model":3,"sample_init":1,"score":1,"tool":1}`, `"limit":{"type":"message","limit":5}`,
		`"log":{"plan":["system_message","react"],"status":"success","version":2}`, `"dataset":{"name":"d"}`, `"eval_id":"ev-1"`, `"store":{"k":"v"}`} {
		if !strings.Contains(model.Deref(r.Extra), want) {
			t.Errorf("run extra lacks %s: %s", want, model.Deref(r.Extra))
		}
	}
	for _, unwanted := range []string{`"sample_ids"`, `"run_id"`, `"messages"`, `"attachments"`, `"events"`, `"input"`} {
		if strings.Contains(model.Deref(r.Extra), unwanted) {
			t.Errorf("run extra has %s: %s", unwanted, model.Deref(r.Extra))
		}
	}

	st := sl.Steps
	if model.Deref(st[0].MessageValue) != "You are a helpful agent." || st[0].Source != model.SourceSystem {
		t.Errorf("attachment not resolved: %+v", st[0])
	}
	if a := st[2]; a.Source != model.SourceAgent || model.Deref(a.MessageValue) != "ok" || model.Deref(a.Reasoning) != "think" ||
		testutil.OrMinus1(a.PromptTokens) != 155 || testutil.OrMinus1(a.CachedTokens) != 50 || testutil.OrMinus1(a.ReasoningTokens) != 3 ||
		model.Deref(a.ModelName) != "openai/m" || a.Timestamp.Format("15:04:05") != "00:00:01" ||
		!strings.Contains(model.Deref(a.Extra), `"model_call":{"match":"input","stop_reason":"tool_calls"}`) {
		t.Errorf("first agent step: %+v extra %s", a, model.Deref(a.Extra))
	}
	if a := st[4]; !strings.Contains(model.Deref(a.Extra), `"match":"text"`) || testutil.OrMinus1(a.PromptTokens) != 7 {
		t.Errorf("second agent step: %+v extra %s", a, model.Deref(a.Extra))
	}
	tool := st[3]
	if tool.Source != model.SourceTool || model.Deref(tool.MessageValue) != "timed out" || tool.Timestamp.Format("15:04:05") != "00:00:02" {
		t.Errorf("tool step: %+v", tool)
	}
	tc := sl.ToolCalls[0]
	if tc.ToolCallID != "c1" || tc.FunctionName != "bash" || model.Deref(tc.Arguments) != `{"cmd":"ls -la"}` || !tc.ArgumentsValid ||
		tc.ResultStatus != model.ResultError || model.Deref(tc.Result) != "timed out" || model.Deref(tc.ResultStepID) != "3" ||
		tc.ResultLink != model.LinkByID || model.Deref(tc.Extra) != `{"error":{"type":"timeout","message":"timed out"}}` {
		t.Errorf("tool call: %+v extra %s", tc, model.Deref(tc.Extra))
	}
	if len(sl.Warnings) != 0 {
		t.Errorf("warnings:\n%s", warnings(sl))
	}

	// The chunked sample: messages from the pool by message_refs,
	// attachments by index, metadata from its own entry; the model event
	// matches by its input (the pool's "a" precedes "b").
	ch := sls[2]
	if len(ch.Steps) != 3 || model.Deref(ch.Steps[0].MessageValue) != "What is 2+2?" || model.Deref(ch.Steps[1].MessageValue) != "hello" ||
		ch.Steps[2].MessageKind != format.KindMultimodal || strings.Contains(model.Deref(ch.Steps[2].MessageValue), "iVBOR") ||
		!strings.Contains(model.Deref(ch.Steps[2].MessageValue), "sha256:") {
		t.Fatalf("chunked steps: %+v", ch.Steps)
	}
	// Cache reads counted inside input_tokens (total = input + output):
	// prompt stays 10.
	if a := ch.Steps[1]; testutil.OrMinus1(a.PromptTokens) != 10 || testutil.OrMinus1(a.CachedTokens) != 5 ||
		!strings.Contains(model.Deref(a.Extra), `"match":"input"`) {
		t.Errorf("chunked agent step: %+v extra %s", a, model.Deref(a.Extra))
	}
	if ch.Run.Reward == nil || *ch.Run.Reward != 1 || !strings.Contains(model.Deref(ch.Run.Extra), `"metadata":{"label":"x"}`) ||
		ch.Run.EndedAt.Format("15:04:05") != "00:00:09" || len(ch.Warnings) != 0 {
		t.Errorf("chunked run: %+v warnings %s", ch.Run, warnings(ch))
	}
}

// TestEvalZipWithoutHeader: a log still being written has no header.json;
// _journal/start.json gives the eval. With neither, the Storylines say so.
func TestEvalZipWithoutHeader(t *testing.T) {
	sample := entry{"samples/1_epoch_1.json", `{"id":1,"epoch":1,"messages":[{"role":"user","content":"q"}]}`, zip.Deflate}
	sl := mustRun(t, "a.eval", buildZip(t, entry{startJSON, testStart, zip.Deflate}, sample), LayoutEval)[0]
	if sl.Run.RunID != "run-1" || model.Deref(sl.Run.AgentName) != "react" || len(sl.Warnings) != 0 ||
		!strings.Contains(model.Deref(sl.Run.Extra), `"log":{"plan":["react"],"version":2}`) {
		t.Errorf("from start.json: %+v %s", sl.Run, warnings(sl))
	}
	sl = mustRun(t, "dir/b.eval", buildZip(t, sample), LayoutEval)[0]
	if sl.Run.RunID != "b" || sl.Run.AgentName != nil || !strings.Contains(warnings(sl), "the log has no eval spec") {
		t.Errorf("no header: %+v %s", sl.Run, warnings(sl))
	}
	// A damaged header.json falls back to start.json, with a warning.
	sl = mustRun(t, "c.eval", buildZip(t, entry{startJSON, testStart, zip.Deflate}, sample, entry{headerJSON, `{"version":`, zip.Deflate}), LayoutEval)[0]
	if sl.Run.RunID != "run-1" || !strings.Contains(warnings(sl), "c.eval#/header.json: line 1: inspect log entry: invalid JSON") ||
		!strings.Contains(warnings(sl), "the header is read from _journal/start.json") {
		t.Errorf("damaged header: %+v\n%s", sl.Run, warnings(sl))
	}
}

func TestEvalZipErrors(t *testing.T) {
	good := testLog(t)
	sample := func(body string) entry { return entry{"samples/1_epoch_1.json", body, zip.Deflate} }
	// Flip bytes inside the zstd data of sample 10, keeping its size.
	damaged := bytes.Clone(good)
	at := bytes.Index(damaged, []byte("samples/10_epoch_1.json")) + len("samples/10_epoch_1.json") + 40
	for i := at; i < at+30; i++ {
		damaged[i] ^= 0x5a
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated zip", good[:len(good)/2], "t.eval: not a readable zip archive (truncated or damaged .eval file?)"},
		{"damaged entry", damaged, "t.eval#/samples/10_epoch_1.json: damaged entry"},
		{"bad JSON in one sample", buildZip(t, entry{headerJSON, testHeader, zip.Store},
			sample("{\"id\":1,\n\"epoch\":1,\n\"messages\":[}]}")), "t.eval#/samples/1_epoch_1.json: line 3: inspect log entry: invalid JSON at column 13"},
		{"sample not an object", buildZip(t, sample(`[1]`)), "t.eval#/samples/1_epoch_1.json: an inspect sample must be a JSON object"},
		{"chunk not an array", buildZip(t, entry{"samples/1_epoch_1/sample.json", `{"id":1,"epoch":1}`, zip.Store},
			entry{"samples/1_epoch_1/messages/0.json", `{}`, zip.Store}), "t.eval#/samples/1_epoch_1/messages/0.json: a messages chunk must be a JSON array"},
		{"unsupported method", buildZip(t, entry{headerJSON, testHeader, 14}), "t.eval#/header.json: compression method 14 is not supported"},
		{"no inspect entries", buildZip(t, entry{"readme.txt", "hello", zip.Store}), "t.eval: the zip has no header.json, _journal/start.json or samples/… entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, "t.eval", tt.data, LayoutEval)
			var pe *format.ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant a ParseError starting %q", err, tt.want)
			}
		})
	}
}

// TestEvalZipChunkGaps: chunks that do not follow each other and
// message_refs outside the pool are read leniently, with warnings naming
// the entries.
func TestEvalZipChunkGaps(t *testing.T) {
	data := buildZip(t,
		entry{"samples/s_epoch_1/sample.json", `{"id":"s","epoch":1,"message_refs":[[0,1],[5,9]]}`, zip.Store},
		entry{"samples/s_epoch_1/messages/0.json", `[{"role":"user","content":"attachment://7"}]`, zip.Store},
		entry{"samples/s_epoch_1/messages/3.json", `[{"role":"weird","content":"x"}]`, zip.Store},
	)
	sl := mustRun(t, "g.eval", data, LayoutEval)[0]
	w := warnings(sl)
	for _, want := range []string{"g.eval#/samples/s_epoch_1/messages/3.json: messages chunk 3 follows 1 items",
		"g.eval#/samples/s_epoch_1/sample.json/message_refs: message range [5,9] is outside the 2 pooled messages",
		"g.eval#/samples/s_epoch_1/sample.json: 1 attachment reference(s) name no attachment"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if sl.Run.SessionID != "s/epoch-1" || len(sl.Steps) != 1 || model.Deref(sl.Steps[0].MessageValue) != "attachment://7" {
		t.Errorf("%+v %+v", sl.Run, sl.Steps)
	}
}

// TestEvalZipMultiFrameZstd: Inspect splits a large entry into several
// zstd frames; they are read as one stream.
func TestEvalZipMultiFrameZstd(t *testing.T) {
	body := `{"id":1,"epoch":1,"messages":[{"role":"user","content":"` + strings.Repeat("a", 5000) + `"}]}`
	var frames []byte
	for _, part := range []string{body[:1000], body[1000:]} {
		frames = append(frames, compress(t, zstdMethod, []byte(part))...)
	}
	data := testutil.Zip(t, testutil.ZipEntry{Name: "samples/1_epoch_1.json", Method: zstdMethod, Body: []byte(body), Raw: frames})
	sl := mustRun(t, "m.eval", data, LayoutEval)[0]
	if len(model.Deref(sl.Steps[0].MessageValue)) != 5000 {
		t.Errorf("step text has %d bytes", len(model.Deref(sl.Steps[0].MessageValue)))
	}
}

// oneByteReader hides every interface but io.Reader, so the adapter must
// spool the stream to read it at random.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestEvalZipFromAStream(t *testing.T) {
	data := testLog(t)
	want := mustRun(t, "log.eval", data, LayoutEval)
	var got []*model.Storyline
	err := New().Normalize(t.Context(), oneByteReader{bytes.NewReader(data)}, format.Source{Path: "log.eval", File: "log.eval"}, LayoutEval,
		func(sl *model.Storyline) error { got = append(got, sl); return nil })
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d Storylines, %v", len(got), err)
	}
	for i := range got {
		if g, w := testutil.NewGoldenStoryline(got[i]), testutil.NewGoldenStoryline(want[i]); mustMarshal(t, g) != mustMarshal(t, w) {
			t.Errorf("Storyline %d differs when read from a stream", i)
		}
	}
}

// TestEvalZipDecompressionIsBounded: an entry that inflates beyond its
// ratio bound, or a sample whose entries together inflate beyond the
// document-memory budget, fails naming the entry, before its bytes are
// held; the same log within bounds reads.
func TestEvalZipDecompressionIsBounded(t *testing.T) {
	sampleOf := func(n int) string {
		return `{"id":1,"epoch":1,"input":"` + strings.Repeat("a", n) + `","messages":[]}`
	}
	bomb := sampleOf(80 << 20) // 80 MiB of one letter: a thousandfold
	shell := entry{"samples/1_epoch_1/sample.json", `{"id":1,"epoch":1,"input":"x"}`, zip.Store}
	chunk := func(start int, n int) entry {
		return entry{fmt.Sprintf("samples/1_epoch_1/messages/%d.json", start),
			`[{"role":"user","content":"` + strings.Repeat("b", n) + `"}]`, zip.Deflate}
	}
	const mib = 1 << 20
	tests := []struct {
		name   string
		data   []byte
		budget int64
		want   string // "" reads
	}{
		{"deflate bomb", buildZip(t, entry{"samples/1_epoch_1.json", bomb, zip.Deflate}), 0,
			"t.eval#/samples/1_epoch_1.json: inflates to "},
		{"zstd bomb", buildZip(t, entry{"samples/1_epoch_1.json", bomb, zstdMethod}), 0,
			"t.eval#/samples/1_epoch_1.json: inflates to "},
		{"sample over the budget", buildZip(t, entry{"samples/1_epoch_1.json", sampleOf(2 * mib), zstdMethod}), 6 * mib,
			"t.eval, entry samples/1_epoch_1.json: this 2 MB JSON document is read whole"},
		{"chunks over the budget together", buildZip(t, shell, chunk(0, mib), chunk(1, mib)), 9 * mib,
			"t.eval, entry samples/1_epoch_1/messages/1.json: this 2 MB JSON document"},
		{"chunks within the budget", buildZip(t, shell, chunk(0, mib), chunk(1, mib)), 18 * mib, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := format.WithDocumentBudget(context.Background(), format.NewDocumentBudget(tt.budget))
			err := New().Normalize(ctx, bytes.NewReader(tt.data), format.Source{Path: "t.eval", File: "t.eval"}, LayoutEval,
				func(*model.Storyline) error { return nil })
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("within bounds: %v", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Fatalf("err = %v\nwant one starting %q", err, tt.want)
			}
			var be *format.BudgetError
			if tt.budget > 0 && tt.want != "" && !errors.As(err, &be) {
				t.Errorf("%v is not a *format.BudgetError: a query would not report it as over its limits", err)
			}
		})
	}
}
