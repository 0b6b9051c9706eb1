package atif

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

func normalize(layout, data string) ([]*model.Storyline, error) {
	var out []*model.Storyline
	src := format.Source{Path: "/data/t.json", File: "t.json"}
	err := New().Normalize(context.Background(), strings.NewReader(data), src, layout, func(sl *model.Storyline) error {
		out = append(out, sl)
		return nil
	})
	return out, err
}

func hasWarning(sl *model.Storyline, substr string) bool {
	for _, w := range sl.Warnings {
		if strings.Contains(w.Message, substr) {
			return true
		}
	}
	return false
}

func TestNormalizeEdgeCases(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		data   string
		check  func(t *testing.T, sls []*model.Storyline)
	}{
		{
			name: "version absent", layout: LayoutJSON,
			data: `{"session_id":"s","agent":{"name":"a"},"steps":[{"step_id":1,"source":"user","message":"hi"}]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				want(t, sls[0].Run.SourceFormat, "atif/unknown")
				wantWarning(t, sls[0], "schema_version is missing")
			},
		},
		{
			name: "unknown version 1.9 read with a warning", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.9","session_id":"s","agent":{},"steps":[]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				want(t, sls[0].Run.SourceFormat, "atif/1.9")
				wantWarning(t, sls[0], "newer than ATIF-v1.8")
			},
		},
		{
			name: "unparseable version", layout: LayoutJSON,
			data: `{"schema_version":"latest","session_id":"s","agent":{},"steps":[]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				want(t, sls[0].Run.SourceFormat, "atif/unknown")
				wantWarning(t, sls[0], "is not an ATIF version")
			},
		},
		{
			name: "identity falls back to trajectory_id, then the file", layout: LayoutJSONL,
			data: "{\"schema_version\":\"v1.7\",\"trajectory_id\":\"T\",\"agent\":{},\"steps\":[]}\n" +
				"{\"schema_version\":\"1.7\",\"agent\":{},\"steps\":[]}\n" +
				"{\"schema_version\":\"1.7\",\"agent\":{},\"steps\":[]}\n",
			check: func(t *testing.T, sls []*model.Storyline) {
				want(t, len(sls), 3)
				want(t, sls[0].Run.SessionID, "T")
				want(t, sls[0].Run.SourceFormat, "atif-jsonl/1.7")
				want(t, sls[1].Run.SessionID, "t.json")
				want(t, sls[2].Run.SessionID, "t.json#2")
				want(t, model.Deref(sls[2].Run.OriginalSessionID), "t.json")
				want(t, sls[2].Run.RunID, "t.json#2")
			},
		},
		{
			name: "nested embedded subagents", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.7","session_id":"S","agent":{"name":"root"},
				"steps":[{"step_id":1,"source":"agent","message":"","tool_calls":[{"tool_call_id":"c1","function_name":"spawn","arguments":{}}],
					"observation":{"results":[{"source_call_id":"c1","subagent_trajectory_ref":[{"trajectory_id":"A"},{"trajectory_id":"missing"},{"trajectory_path":"x.json"}]}]}}],
				"subagent_trajectories":[
					{"trajectory_id":"A","session_id":"S","agent":{"name":"a"},"steps":[],
					 "subagent_trajectories":[{"trajectory_id":"B","agent":{"name":"b"},"steps":[]}]},
					{"trajectory_id":"C","session_id":"own","schema_version":"ATIF-v1.8","agent":{"name":"c"},"steps":[]}]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				want(t, len(sls), 4)
				ids := []string{sls[0].Run.SessionID, sls[1].Run.SessionID, sls[2].Run.SessionID, sls[3].Run.SessionID}
				want(t, strings.Join(ids, ","), "S,S/A,S/A/B,own")
				want(t, model.Deref(sls[1].Run.OriginalSessionID), "S")
				want(t, model.Deref(sls[2].Run.ParentSessionID), "S/A")
				want(t, model.Deref(sls[3].Run.ParentSessionID), "S")
				want(t, sls[3].Run.OriginalSessionID == nil, true)
				want(t, sls[2].Run.SourceFormat, "atif/1.7") // inherited
				want(t, sls[3].Run.SourceFormat, "atif/1.8")
				for _, sl := range sls {
					want(t, sl.Run.RunID, "S")
				}
				want(t, model.Deref(sls[0].Run.SubagentRefs),
					`[{"step_id":"1","trajectory_id":"A","embedded":true,"child_session_id":"S/A"},{"step_id":"1","trajectory_id":"missing","embedded":false},{"step_id":"1","trajectory_path":"x.json","embedded":false}]`)
				wantWarning(t, sls[0], `trajectory_id "missing" matches no embedded trajectory`)
				want(t, sls[0].Steps[0].MessageKind, kindToolCallsOnly)
				want(t, sls[0].ToolCalls[0].ResultStatus, model.ResultOK)
			},
		},
		{
			name: "mixed id and id-less results", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.7","session_id":"s","agent":{},"steps":[{"step_id":1,"source":"agent","message":"m",
				"tool_calls":[{"tool_call_id":"a","function_name":"f","arguments":{"x":1}},{"tool_call_id":"b","function_name":"g","arguments":"{bad"}],
				"observation":{"results":[{"source_call_id":"a","content":[{"type":"text","text":"A1"},{"type":"text","text":"A2"}],"extra":{"is_error":true}},{"content":"shared"}]}}]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				a, b := sls[0].ToolCalls[0], sls[0].ToolCalls[1]
				want(t, model.Deref(a.Result), "A1\nA2")
				want(t, a.ResultStatus, model.ResultError)
				want(t, a.ResultLink, model.LinkByID)
				want(t, model.Deref(a.Arguments), `{"x":1}`)
				want(t, model.Deref(b.Result), "shared")
				want(t, b.ResultLink, model.LinkAmbiguous)
				want(t, b.ArgumentsValid, false)
			},
		},
		{
			name: "one id reused by every call links within each step", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.7","session_id":"s","agent":{},"steps":[
				{"step_id":1,"source":"agent","tool_calls":[{"tool_call_id":"call_id","function_name":"f","arguments":{}},{"tool_call_id":"call_id","function_name":"g","arguments":{}}],
				 "observation":{"results":[{"source_call_id":"call_id","content":"r1"},{"source_call_id":"call_id","content":"r2"}]}},
				{"step_id":2,"source":"agent","tool_calls":[{"tool_call_id":"call_id","function_name":"h","arguments":{}}],
				 "observation":{"results":[{"source_call_id":"call_id","content":"r3"}]}}]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				tcs := sls[0].ToolCalls
				want(t, model.Deref(tcs[0].Result)+","+model.Deref(tcs[1].Result)+","+model.Deref(tcs[2].Result), "r1,r2,r3")
				want(t, tcs[2].ResultStepID == nil, true)
			},
		},
		{
			name: "results in a step without calls are the step's observation", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.2","session_id":"s","agent":{},"steps":[{"step_id":1,"source":"system","message":"op",
				"observation":{"results":[{"content":"one"},{"content":{"k":1}}]}}]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				st := sls[0].Steps[0]
				want(t, model.Deref(st.Observation), "one\n{\"k\":1}")
				want(t, st.MessageKind, kindSystemOp)
			},
		},
		{
			name: "metrics, multimodal message, timestamps", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.8","session_id":"s","agent":{"model_name":"m0"},"steps":[
				{"step_id":1,"source":"user","message":[{"type":"text","text":"look"},{"type":"image","source":{"media_type":"image/png","path":"images/a.png"}}],
				 "extra":{"invocation":{"start_timestamp":1767484801.5}}},
				{"step_id":2,"source":"agent","message":"ok","model_name":"m1","timestamp":"2026-01-04T00:00:05Z",
				 "metrics":{"prompt_tokens":10,"completion_tokens":5,"cached_tokens":2,"cost_usd":0.5,"prompt_token_ids":[1,2,3],"logprobs":[],"extra":{"reasoning_tokens":4,"other":1}}},
				{"step_id":3,"source":"agent","message":"copy","is_copied_context":true,"metrics":{"prompt_tokens":100}}],
				"final_metrics":{"total_prompt_tokens":"110","total_steps":2}}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				sl := sls[0]
				s1, s2 := sl.Steps[0], sl.Steps[1]
				want(t, s1.MessageKind, format.KindMultimodal)
				want(t, s1.Timestamp.Format("15:04:05.0"), "00:00:01.5")
				want(t, *s2.ReasoningTokens, int64(4))
				want(t, model.Deref(s2.Extra), `{"metrics":{"extra":{"other":1},"logprobs_len":0,"prompt_token_ids_len":3}}`)
				want(t, *sl.Run.PromptTokens, int64(10)) // the copied step is excluded
				want(t, *sl.Run.CostUSD, 0.5)
				want(t, *sl.Run.ReportedPromptTokens, int64(110))
				want(t, sl.Run.StepCount, int64(2))
				want(t, model.Deref(sl.Run.AgentModelName), "m0")
				want(t, sl.Run.StartedAt.Format("15:04:05.0"), "00:00:01.5")
				want(t, sl.Run.EndedAt.Format("15:04:05"), "00:00:05")
			},
		},
		{
			name: "model falls back to the first step; success false", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.6","session_id":"s","agent":{"name":"a"},"extra":{"success":false,"start_time":"2025-01-01T00:00:00Z"},
				"steps":[{"step_id":1,"source":"agent","message":"x","model_name":"m9","tool_calls":[{"tool_call_id":"c","function_name":"mark_task_complete","arguments":{}}]}]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				r := sls[0].Run
				want(t, model.Deref(r.AgentModelName), "m9")
				want(t, r.Status, model.StatusError)
				want(t, r.StartedAt.Year(), 2025)
				want(t, sls[0].ToolCalls[0].ResultStatus, model.ResultMissing)
				want(t, sls[0].ToolCalls[0].ResultLink, model.LinkNone)
			},
		},
		{
			name: "duplicate and missing step ids, odd sources", layout: LayoutJSON,
			data: `{"schema_version":"ATIF-v1.5","session_id":"s","agent":{},"steps":[{"step_id":1,"source":"assistant"},{"step_id":1,"source":"robot"},{"message":"m"},null]}`,
			check: func(t *testing.T, sls []*model.Storyline) {
				sl := sls[0]
				want(t, len(sl.Steps), 3)
				want(t, sl.Steps[0].Source, model.SourceAgent)
				want(t, sl.Steps[1].StepID, "1#2")
				want(t, sl.Steps[1].Source, "robot")
				want(t, sl.Steps[2].StepID, "3")
				want(t, sl.Steps[2].Source, "unknown")
				wantWarning(t, sl, "null step skipped")
			},
		},
		{
			name: "jsonl: two headers, truncated last line", layout: LayoutJSONL,
			data: "{\"__header__\":true,\"schema_version\":\"ATIF-v1.4\",\"session_id\":\"s\",\"agent\":{\"name\":\"a\"}}\n" +
				"{\"step_id\":1,\"source\":\"user\",\"message\":\"a\"}\n" +
				"{\"__header__\":true,\"schema_version\":\"ATIF-v1.4\",\"session_id\":\"s\",\"agent\":{\"name\":\"a\"}}\n" +
				"{\"step_id\":1,\"source\":\"user\",\"message\":\"b\"}\n" +
				"[1,2]\n" +
				"{\"step_id\":2,\"sour",
			check: func(t *testing.T, sls []*model.Storyline) {
				want(t, len(sls), 2)
				want(t, sls[1].Run.SessionID, "s#2")
				want(t, len(sls[1].Steps), 1)
				wantWarning(t, sls[1], "truncated stream")
				wantWarning(t, sls[1], "not a JSON object")
				want(t, sls[1].Warnings[len(sls[1].Warnings)-1].Line, int64(6))
			},
		},
		{
			name: "jsonl: steps without header", layout: LayoutJSONL,
			data: "{\"step_id\":1,\"source\":\"user\",\"message\":\"a\"}\n",
			check: func(t *testing.T, sls []*model.Storyline) {
				want(t, sls[0].Run.SessionID, "t.json")
				wantWarning(t, sls[0], "without a preceding __header__")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sls, err := normalize(tt.layout, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if len(sls) == 0 {
				t.Fatal("no Storyline")
			}
			tt.check(t, sls)
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []struct {
		name, layout, data string
		line               int64
	}{
		{"invalid json document", LayoutJSON, `{"steps":[`, 1},
		{"document is null", LayoutJSON, `null`, 0},
		{"document is an array", LayoutJSON, `[]`, 0},
		{"bad line in the middle", LayoutJSONL, "{\"__header__\":true}\n{oops\n{\"step_id\":1}\n", 2},
		{"only a bad line", LayoutJSONL, "{oops", 1},
		{"unknown layout", "xml", `{}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := normalize(tt.layout, tt.data)
			var pe *format.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *format.ParseError", err)
			}
			if pe.Line != tt.line || pe.Path != "/data/t.json" {
				t.Errorf("error at %s line %d, want line %d", pe.Path, pe.Line, tt.line)
			}
		})
	}
}

func TestNormalizeStopsOnEmitError(t *testing.T) {
	stop := errors.New("stop")
	data := "{\"schema_version\":\"1.7\",\"agent\":{},\"steps\":[]}\n{\"schema_version\":\"1.7\",\"agent\":{},\"steps\":[]}\n"
	calls := 0
	err := New().Normalize(context.Background(), strings.NewReader(data), format.Source{File: "f"}, LayoutJSONL,
		func(*model.Storyline) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("got %v after %d emits, want the emit error after 1", err, calls)
	}
}

func want[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func wantWarning(t *testing.T, sl *model.Storyline, substr string) {
	t.Helper()
	if !hasWarning(sl, substr) {
		t.Errorf("no warning containing %q in %v", substr, sl.Warnings)
	}
}

func TestArrayLen(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		isOK bool
	}{
		{`[]`, 0, true},
		{` [ ] `, 0, true},
		{`[1]`, 1, true},
		{`[1, 2, 3]`, 3, true},
		{`[-0.5,1e3]`, 2, true},
		{`["a,b","c"]`, 2, true},
		{`[1,[2,"]"],{"a":"\",","b":[3,4]}]`, 3, true},
		{`{"a":1}`, 0, false},
		{`7`, 0, false},
	}
	for _, tt := range tests {
		n, ok := arrayLen([]byte(tt.in))
		if n != tt.n || ok != tt.isOK {
			t.Errorf("arrayLen(%s) = %d, %v; want %d, %v", tt.in, n, ok, tt.n, tt.isOK)
		}
	}
}
