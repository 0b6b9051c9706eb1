package inspect

import (
	"archive/zip"
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// jsonLog is a JSON-form log with its members in the given order.
func jsonLog(members ...string) string {
	return "{\n" + strings.Join(members, ",\n") + "\n}\n"
}

const (
	mVersion = `"version": 2`
	mStatus  = `"status": "cancelled"`
	mEval    = `"eval": {"run_id": "r", "task": "t", "model": "m/x", "solver": "my_agent"}`
	mPlan    = `"plan": {"steps": [{"solver": "generate"}]}`
	mResults = `"results": {"scores": [{"name": "s", "metrics": {"a": {"value": NaN}}}]}`
	mSamples = `"samples": [
  {"id": "a", "epoch": 1, "messages": [{"role": "user", "content": "q \"quoted\" \\ [not an array}"}], "scores": {"s": {"value": "C"}}},
  {"id": "b", "epoch": 1, "messages": [], "error": {"message": "boom", "traceback": "tb", "traceback_ansi": "\u001b[31mtb"}},
  {"id": "c", "epoch": 1, "messages": [{"role": "assistant", "content": "x"}]}
 ]`
	mReductions = `"reductions": [{"scorer": "s", "samples": [{"value": 1.0, "sample_id": "a"}]}]`
)

// TestJSONMemberOrder: header members after samples (which Inspect never
// writes, but a rewritten file may have) give the same Storylines as the
// usual order.
func TestJSONMemberOrder(t *testing.T) {
	usual := mustRun(t, "l.json", []byte(jsonLog(mVersion, mStatus, mEval, mPlan, mResults, mSamples, mReductions)), LayoutJSON)
	if len(usual) != 3 {
		t.Fatalf("%d Storylines", len(usual))
	}
	for _, order := range [][]string{
		{mSamples, mVersion, mStatus, mEval, mPlan, mResults, mReductions},
		{mEval, mSamples, mPlan, mVersion, mReductions, mStatus, mResults},
		{mReductions, mResults, mStatus, mPlan, mVersion, mEval, mSamples},
	} {
		got := mustRun(t, "l.json", []byte(jsonLog(order...)), LayoutJSON)
		if mustMarshal(t, got) != mustMarshal(t, usual) {
			t.Errorf("order %.20q…: Storylines differ from the usual order", order[0])
		}
	}
	// The eval's solver names the agent; a cancelled log leaves unscored
	// samples cancelled, a sample's own error wins.
	var got []string
	for _, sl := range usual {
		got = append(got, sl.Run.SessionID+" "+sl.Run.Status+" "+model.Deref(sl.Run.AgentName))
	}
	if strings.Join(got, ", ") != "a/epoch-1 completed my_agent, b/epoch-1 error my_agent, c/epoch-1 cancelled my_agent" {
		t.Errorf("runs: %v", got)
	}
	if model.Deref(usual[0].Steps[0].MessageValue) != `q "quoted" \ [not an array}` {
		t.Errorf("escapes: %q", model.Deref(usual[0].Steps[0].MessageValue))
	}
	if e := model.Deref(usual[1].Run.Extra); !strings.Contains(e, `"error":{"message":"boom","traceback":"tb"}`) || strings.Contains(e, "ansi") {
		t.Errorf("sample error in extra: %s", e)
	}
}

func TestJSONErrors(t *testing.T) {
	head := jsonLog(mVersion, mStatus, mEval, mPlan)
	head = head[:len(head)-3] + ",\n"
	tests := []struct {
		name, data, want string
		line             int64
		emitted          int
	}{
		{"bad JSON in one sample", head + `"samples": [{"id": 1, "epoch": 1},
 {"id": 2,
  "epoch": 1, "messages": [}]}]}`, "l.json:8#/samples/1: inspect sample: invalid JSON at column 28", 8, 1},
		{"truncated inside a sample", head + `"samples": [{"id": 1, "epoch": 1}, {"id": 2, "messages": [`, "l.json:6#/samples/1: inspect log: the document ends early", 6, 1},
		{"sample not an object", head + `"samples": [1]}`, "l.json:6#/samples/0: inspect sample is not a JSON object", 6, 0},
		{"samples not an array", head + `"samples": {}}`, "l.json:6#/samples: inspect samples is not an array", 6, 0},
		{"bad header member", `{"eval": {"task": "t" "x": 1}}`, "l.json:1#/eval: inspect log member: invalid JSON at column 23", 1, 0},
		{"not an object", `["eval"]`, `l.json:1: inspect log: invalid JSON: expected '{', found '['`, 1, 0},
		{"missing comma", `{"eval": {} "plan": {}}`, `l.json:1: inspect log: invalid JSON: expected ',', found '"'`, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sls, err := run(t, "l.json", []byte(tt.data), LayoutJSON)
			var pe *format.ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tt.want) || pe.Line != tt.line {
				t.Fatalf("err = %v\nwant a ParseError at line %d starting %q", err, tt.line, tt.want)
			}
			if len(sls) != tt.emitted {
				t.Errorf("%d Storylines before the error, want %d", len(sls), tt.emitted)
			}
		})
	}
}

// TestJSONLegacySamples: logs older than the scores dict carried one
// "score", and before events had their own member, a "transcript".
func TestJSONLegacySamples(t *testing.T) {
	doc := jsonLog(mVersion, mEval, mPlan, `"status": "success"`, `"samples": [{"id": 1, "epoch": 1,
 "messages": [{"role": "user", "content": "tc://h1"}, {"role": "assistant", "content": "4"}],
 "score": {"value": 4, "answer": "4"},
 "transcript": {"events": [{"event": "model", "timestamp": "2024-05-01T10:00:00Z", "model": "m/x", "input": [],
   "output": {"choices": [{"message": {"role": "assistant", "content": "4"}}], "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}}],
  "content": {"h1": "2+2?"}}}]`)
	sl := mustRun(t, "old.json", []byte(doc), LayoutJSON)[0]
	if model.Deref(sl.Steps[0].MessageValue) != "2+2?" || testutil.OrMinus1(sl.Steps[1].PromptTokens) != 3 ||
		model.Deref(sl.Run.Scores) != `{"score":{"answer":"4","value":4}}` || sl.Run.Reward == nil || *sl.Run.Reward != 4 ||
		strings.Contains(model.Deref(sl.Run.Extra), "transcript") {
		t.Errorf("legacy sample: %+v %+v", sl.Run, sl.Steps)
	}
}

// TestMessages pins single message mappings.
func TestMessages(t *testing.T) {
	long := strings.Repeat("QUFB", 100)
	doc := jsonLog(mEval, mPlan, `"status": "success"`, `"samples": [{"id": 1, "epoch": 1, "messages": [
 {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "enc", "redacted": true}, {"type": "reasoning", "reasoning": "enc2", "redacted": true, "summary": "sum"}]},
 {"role": "assistant", "content": [{"type": "text", "text": "no", "refusal": true}]},
 {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "function": "f", "arguments": {}, "parse_error": "bad"}, {"id": "t1", "function": "g", "arguments": {"a": 1}}]},
 {"role": "tool", "tool_call_id": "t1", "content": [{"type": "text", "text": "r1"}]},
 {"role": "tool", "tool_call_id": "t1", "content": "r2"},
 {"role": "tool", "tool_call_id": "t1", "content": "r3"},
 {"role": "user", "content": [{"type": "image", "image": "data:image/png;base64,`+long+`"}]},
 {"role": "critic", "content": "hm"},
 7
]}]`)
	sl := mustRun(t, "m.json", []byte(doc), LayoutJSON)[0]
	st := sl.Steps
	if len(st) != 8 {
		t.Fatalf("%d steps", len(st))
	}
	// Only reasoning: the redacted part without summary is counted.
	if st[0].MessageKind != kindReasoning || st[0].MessageValue != nil || model.Deref(st[0].Reasoning) != "sum" ||
		!strings.Contains(model.Deref(st[0].Extra), `"reasoning_redacted":1`) {
		t.Errorf("reasoning step: %+v extra %s", st[0], model.Deref(st[0].Extra))
	}
	if st[1].MessageKind != kindRefusal || model.Deref(st[1].MessageValue) != "no" {
		t.Errorf("refusal: %+v", st[1])
	}
	if st[2].MessageKind != kindToolCallsOnly || st[2].MessageValue != nil {
		t.Errorf("tool calls only: %+v", st[2])
	}
	// A repeated call id: results answer the earliest unanswered call.
	c := sl.ToolCalls
	if model.Deref(c[0].Result) != "r1" || model.Deref(c[1].Result) != "r2" || model.Deref(c[0].Extra) != `{"parse_error":"bad"}` ||
		model.Deref(c[1].Arguments) != `{"a":1}` {
		t.Errorf("calls: %+v / %+v", c[0], c[1])
	}
	if st[6].MessageKind != format.KindMultimodal || strings.Contains(model.Deref(st[6].MessageValue), long) {
		t.Errorf("image: %+v", st[6])
	}
	if st[7].Source != model.SourceSystem || !strings.Contains(model.Deref(st[7].Extra), `"role":"critic"`) {
		t.Errorf("unknown role: %+v", st[7])
	}
	w := warnings(sl)
	for _, want := range []string{"m.json#/samples/0/messages/5/tool_call_id: tool result matches no unanswered call",
		`m.json#/samples/0/messages/7/role: unknown role "critic"`, "m.json#/samples/0/messages/8: message is not a JSON object"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

func TestScoreValue(t *testing.T) {
	tests := []struct {
		raw       string
		want      float64 // -1: no number
		converted bool
	}{
		{`"C"`, 1, true}, {`"P"`, 0.5, true}, {`"I"`, 0, true}, {`"N"`, 0, true},
		{`"Yes"`, 1, true}, {`"TRUE"`, 1, true}, {`"no"`, 0, true}, {`"false"`, 0, true},
		{`" 2.5 "`, 2.5, true}, {`"1e3"`, 1000, true}, {`0.25`, 0.25, true}, {`3`, 3, true}, {`true`, 1, true}, {`false`, 0, true},
		{`"c"`, 0, false}, {`"nan"`, 0, false}, {`"inf"`, 0, false}, {`"maybe"`, 0, false},
		{`null`, -1, true}, {`{"a": 1}`, -1, true}, {`[1]`, -1, true},
	}
	for _, tt := range tests {
		v, ok := scoreValue([]byte(tt.raw))
		got := -1.0
		if v != nil {
			got = *v
		}
		if got != tt.want || ok != tt.converted {
			t.Errorf("scoreValue(%s) = %v, %v; want %v, %v", tt.raw, got, ok, tt.want, tt.converted)
		}
	}
	sl := mustRun(t, "s.json", []byte(jsonLog(mEval, mPlan, `"status": "success"`, `"samples": [{"id": 1, "epoch": 1, "scores": {"s": {"value": "maybe"}}}]`)), LayoutJSON)[0]
	if sl.Run.Reward == nil || *sl.Run.Reward != 0 || !strings.Contains(warnings(sl), `s.json#/samples/0/scores/s/value: score value of "s" is not a number`) {
		t.Errorf("unconvertible score: %v %s", sl.Run.Reward, warnings(sl))
	}
}

// TestDocScanner reads values across buffer boundaries: with a 16-byte
// buffer, strings with escaped quotes and backslash runs straddle chunks.
func TestDocScanner(t *testing.T) {
	values := []string{`"` + strings.Repeat(`\\`, 9) + `\"` + strings.Repeat("x", 20) + `"`, `{"a":"}]\"[{","b":[1,{"c":"\\"}]}`, `-12.5e3`, `null`, `[]`}
	doc := strings.Join(values, " ,\n ")
	sc := &docScanner{br: bufio.NewReaderSize(strings.NewReader(doc), 16), line: 1}
	for i, want := range values {
		if i > 0 {
			if err := sc.next(','); err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
		}
		got, err := sc.value(nil, true)
		if err != nil || string(got) != want {
			t.Fatalf("value %d = %q, %v; want %q", i, got, err, want)
		}
	}
	if sc.line != 5 || sc.off != int64(len(doc)) {
		t.Errorf("line %d off %d", sc.line, sc.off)
	}
	if _, err := sc.peek(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("after the last value: %v", err)
	}
}

func TestNonFinite(t *testing.T) {
	got, ok := nonFinite([]byte(`{"a":NaN,"b":[Infinity,-Infinity,-1],"c":"NaN Infinity"}`))
	if !ok || string(got) != `{"a":null,"b":[null,null,-1],"c":"NaN Infinity"}` {
		t.Errorf("nonFinite = %s, %v", got, ok)
	}
	if _, ok := nonFinite([]byte(`{"a":1}`)); ok {
		t.Error("nothing to replace, yet ok")
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, file string
		data       []byte
		layout     string
	}{
		{"json log", "x.json", []byte(jsonLog(mVersion, mStatus, mEval, mPlan)), LayoutJSON},
		{"samples first", "x.json", []byte(`{"samples":[{"id":1,"epoch":1,"input":"q","target":"a","messa`), LayoutJSON},
		{"eval cut off", "x.json", []byte(`{"version":2,"status":"success","eval":{"eval_id":"e","task":"t","dataset":{"na`), LayoutJSON},
		{"zip by entries", "x.zip", buildZip(t, entry{startJSON, "{}", zip.Store}), LayoutEval},
		{"zip of samples", "x.bin", buildZip(t, entry{"samples/a_epoch_2.json", "{}", zip.Store}), LayoutEval},
		{"zip named .eval", "x.EVAL", buildZip(t, entry{"other.txt", "", zip.Store}), LayoutEval},
		{"other zip", "x.zip", buildZip(t, entry{"samples/readme.json", "{}", zip.Store}), ""},
		{"eval without log members", "x.json", []byte(`{"eval":{"task":"t"},"name":"n"}`), ""},
		{"eval spec alone", "x.json", []byte(`{"version":2,"eval":{"name":"n"}}`), ""},
		{"samples of something else", "x.json", []byte(`{"samples":[{"id":1,"text":"a"}]}`), ""},
		{"chat", "c.json", []byte(`{"messages":[{"role":"user","content":"hi"}]}`), ""},
		{"atif", "a.json", []byte(`{"schema_version":"ATIF-v1.5","agent":{},"steps":[]}`), ""},
	}
	for _, tt := range tests {
		layout, ok := New().Detect(format.NewProbe(tt.file, tt.data, false))
		if ok != (tt.layout != "") || layout != tt.layout {
			t.Errorf("%s: detected %q %v, want %q", tt.name, layout, ok, tt.layout)
		}
	}
}
