package openai

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// The figures below were counted by hand (jq/python) from the sample files;
// see docs/formats.md (openai section).

func TestCookbookToyChat(t *testing.T) {
	layout, sls := mustNormalize(t, "openai-cookbook_toy_chat_fine_tuning.jsonl", sample(t, "openai-cookbook_toy_chat_fine_tuning.jsonl"))
	if layout != layoutChatJSONL {
		t.Fatalf("layout = %q", layout)
	}
	tests := []struct {
		session string
		sources string // one letter per step: s=system u=user a=agent
	}{
		{"line-1", "sua"},
		{"line-2", "suauauaua"},
		{"line-3", "ua"}, // no system turn
		{"line-4", "sa"}, // no user turn
		{"line-5", "sua"},
	}
	if len(sls) != len(tests) {
		t.Fatalf("got %d conversations, want %d", len(sls), len(tests))
	}
	for i, tt := range tests {
		sl := sls[i]
		if sl.Run.SessionID != tt.session || sl.Run.RunID != tt.session {
			t.Errorf("%d: ids %q/%q, want %q", i, sl.Run.RunID, sl.Run.SessionID, tt.session)
		}
		if got := sourceLetters(sl); got != tt.sources {
			t.Errorf("%s: sources %q, want %q", tt.session, got, tt.sources)
		}
		if sl.Run.StepCount != int64(len(tt.sources)) || sl.Run.SourceFormat != "openai/chat-jsonl" || sl.Run.Status != model.StatusUnknown {
			t.Errorf("%s: run %+v", tt.session, sl.Run)
		}
		if len(sl.Warnings) != 0 {
			t.Errorf("%s: warnings %v", tt.session, sl.Warnings)
		}
	}
	long := model.Deref(sls[4].Steps[2].MessageValue)
	if len(long) != 26000 || strings.Count(long, "Eat a banana!") != 2000 {
		t.Errorf("long assistant message: %d bytes, %d repeats", len(long), strings.Count(long, "Eat a banana!"))
	}
}

func TestHarborTraces(t *testing.T) {
	name := "harbor-golden_terminus2_context-summarization.traces.json"
	layout, sls := mustNormalize(t, name, sample(t, name))
	if layout != layoutHarbor {
		t.Fatalf("layout = %q", layout)
	}
	// Rows: messages per episode, and how many lead messages repeat the
	// previous episode (episode-3 restarts after context summarization and
	// only shares the first prompt).
	tests := []struct{ messages, copied int }{{2, 0}, {4, 2}, {6, 4}, {5, 1}, {7, 5}, {9, 7}, {11, 9}}
	if len(sls) != len(tests) {
		t.Fatalf("got %d rows, want %d", len(sls), len(tests))
	}
	var total, unique int64
	seen := map[string]bool{}
	for i, tt := range tests {
		sl := sls[i]
		run := sl.Run
		wantSession := "NORMALIZED_TRIAL_NAME/episode-" + string(rune('0'+i))
		if run.RunID != "hello-world__NORMALIZED" || run.SessionID != wantSession || model.Deref(run.OriginalSessionID) != "NORMALIZED_TRIAL_NAME" {
			t.Errorf("row %d: ids %q %q %v", i, run.RunID, run.SessionID, run.OriginalSessionID)
		}
		if seen[run.SessionID] {
			t.Errorf("row %d: session id %q repeats", i, run.SessionID)
		}
		seen[run.SessionID] = true
		if model.Deref(run.AgentName) != "terminus-2" || model.Deref(run.AgentModelName) != "openai/gpt-4o" {
			t.Errorf("row %d: agent %v model %v", i, run.AgentName, run.AgentModelName)
		}
		copied := 0
		for _, st := range sl.Steps {
			if st.IsCopiedContext {
				copied++
			}
		}
		if len(sl.Steps) != tt.messages || copied != tt.copied || run.StepCount != int64(tt.messages-tt.copied) {
			t.Errorf("row %d: %d steps, %d copied, step_count %d; want %d, %d", i, len(sl.Steps), copied, run.StepCount, tt.messages, tt.copied)
		}
		total += int64(len(sl.Steps))
		unique += run.StepCount
	}
	if total != 44 || unique != 16 {
		t.Errorf("steps: %d rows, %d not copied; want 44, 16", total, unique)
	}
}

func TestCodexRollout(t *testing.T) {
	name := "codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
	layout, sls := mustNormalize(t, name, sample(t, name))
	if layout != layoutCodex || len(sls) != 1 {
		t.Fatalf("layout %q, %d storylines", layout, len(sls))
	}
	sl := sls[0]
	run := sl.Run
	checks := []struct {
		what      string
		got, want any
	}{
		{"session_id", run.SessionID, "019c8a4d-8f45-7010-8b5d-7fad920aa6f9"},
		{"agent_name", model.Deref(run.AgentName), "Codex Desktop"},
		{"agent_version", model.Deref(run.AgentVersion), "0.104.0-alpha.1"},
		{"model", model.Deref(run.AgentModelName), "gpt-5.3-codex"},
		{"started_at", run.StartedAt.Format("2006-01-02T15:04:05.000Z"), "2026-02-23T11:41:04.709Z"},
		{"ended_at", run.EndedAt.Format("2006-01-02T15:04:05.000Z"), "2026-02-23T11:46:43.618Z"},
		{"status", run.Status, model.StatusCompleted},
		// 286 response items: 118 calls + 118 outputs + 26 reasoning + 17
		// assistant + 4 developer + 3 user; event_msg lines are not steps.
		{"step_count", run.StepCount, int64(286)},
		{"tool_call_count", run.ToolCallCount, int64(118)},
		// 28 token_count events advance the cumulative total (27 repeat it,
		// 1 has info null); their last_token_usage sums to the last total.
		{"prompt", *run.PromptTokens, int64(1751428)},
		{"reported prompt", *run.ReportedPromptTokens, int64(1751428)},
		{"completion", *run.CompletionTokens, int64(14600)},
		{"reported completion", *run.ReportedCompletionTokens, int64(14600)},
		{"cached", *run.CachedTokens, int64(1651968)},
		{"reported cached", *run.ReportedCachedTokens, int64(1651968)},
		{"warnings", len(sl.Warnings), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	kinds := map[string]int{}
	var withUsage []string
	stepLine := map[string]model.Step{}
	for _, st := range sl.Steps {
		kinds[st.Source+"/"+st.MessageKind]++
		stepLine[st.StepID] = st
		if st.PromptTokens != nil {
			withUsage = append(withUsage, st.StepID)
		}
	}
	wantKinds := map[string]int{"agent/tool_calls_only": 118, "tool/text": 118, "agent/reasoning": 26, "agent/text": 17, "system/text": 4, "user/text": 3}
	for k, n := range wantKinds {
		if kinds[k] != n {
			t.Errorf("%s steps = %d, want %d", k, kinds[k], n)
		}
	}
	if len(withUsage) != 28 || withUsage[0] != "18" || withUsage[27] != "415" {
		t.Errorf("steps with usage: %d, first %v", len(withUsage), withUsage)
	}
	linked := 0
	for _, tc := range sl.ToolCalls {
		out, ok := stepLine[model.Deref(tc.ResultStepID)]
		if tc.ResultStatus == model.ResultOK && tc.ResultLink == model.LinkByID && ok && out.Source == model.SourceTool &&
			strings.Contains(model.Deref(out.Extra), tc.ToolCallID) && tc.Arguments != nil && !tc.ArgumentsValid {
			linked++
		}
	}
	if linked != 118 {
		t.Errorf("%d calls linked to their output (redacted arguments invalid), want 118", linked)
	}
	// The first parallel pair: calls on lines 17 and 18, outputs on 20 and 21.
	if tc := sl.ToolCalls[0]; tc.StepID != "17" || model.Deref(tc.ResultStepID) != "20" || tc.FunctionName != "exec_command" {
		t.Errorf("first call: %+v", tc)
	}
	if st := stepLine["14"]; model.Deref(st.Reasoning) != "[REDACTED_TEXT len=37 sha=d3d77c11]" || model.Deref(st.Extra) != `{"encrypted_content":true}` {
		t.Errorf("reasoning step 14: %+v", st)
	}
}

// TestCodexFixtureImage: Codex's fixture is one Responses message in a file
// of its own, which is not a trajectory (one message, as OpenCode writes
// them); the same item inside a list of items is read with its image part.
func TestCodexFixtureImage(t *testing.T) {
	name := "codex-fixture_rollout_copy_paste_local_image.response_item.json"
	item := sample(t, name)
	if layout, ok := detect(name, item); ok {
		t.Fatalf("a single message was claimed as %q", layout)
	}
	list := append(append([]byte("["), item...), `,{"role":"assistant","content":"ok"}]`...)
	layout, sls := mustNormalize(t, "items.json", list)
	if layout != layoutResponses || len(sls) != 1 || len(sls[0].Steps) != 2 {
		t.Fatalf("layout %q, %d storylines", layout, len(sls))
	}
	st := sls[0].Steps[0]
	v := model.Deref(st.MessageValue)
	if st.Source != model.SourceUser || st.MessageKind != "multimodal" || !strings.Contains(v, `"image_url":"__IMAGE_URL__"`) ||
		!strings.Contains(v, `"text":"pasted image"`) || strings.Contains(v, "\n") {
		t.Errorf("step: %+v %s", st, v)
	}
}

func sourceLetters(sl *model.Storyline) string {
	var b strings.Builder
	for _, st := range sl.Steps {
		b.WriteByte(st.Source[0])
	}
	return b.String()
}

// TestDetectSkipsOtherFormats: the ATIF and ACTF samples must not be
// claimed by this adapter.
func TestDetectSkipsOtherFormats(t *testing.T) {
	root := samplesDir(t)
	for _, dir := range []string{"atif", "actf_candidates"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if layout, ok := detect(d.Name(), data); ok {
				t.Errorf("%s detected as %q", p, layout)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestHarborHermesTraces: the harbor export of an OpenHands run writes its
// calls as <tool_call> blocks. Counted with python: row 0 has 5 messages
// and 1 block (str_replace_editor); row 1 repeats those 5 and adds the
// observation turn and 1 block (finish). The observation answers the first
// call; the episode ends on finish, whose result is in no row.
func TestHarborHermesTraces(t *testing.T) {
	name := "harbor-golden_openhands_hello-world.hermes-tool_call.traces.json"
	layout, sls := mustNormalize(t, name, sample(t, name))
	if layout != layoutHarbor || len(sls) != 2 {
		t.Fatalf("layout %q, %d rows", layout, len(sls))
	}
	wantCalls(t, sls[0], []call{{"4", "str_replace_editor",
		`{"command":"create","path":"/app/hello.txt","file_text":"Hello, world!","security_risk":"LOW"}`, "missing", "", "", model.LinkNone}})
	wantCalls(t, sls[1], []call{
		{"4", "str_replace_editor", `{"command":"create","path":"/app/hello.txt","file_text":"Hello, world!","security_risk":"LOW"}`,
			"ok", "5", "File created successfully at: /app/hello.txt", model.LinkByOrder},
		{"6", "finish", `{"message":"Task complete. Created /app/hello.txt with 'Hello, world!'"}`, "missing", "", "", model.LinkNone},
	})
	for i, want := range []struct {
		sources         string
		steps, toolCall int64
	}{{"uuuua", 5, 1}, {"uuuuata", 2, 1}} { // row 1: its first 5 steps are copied context
		sl := sls[i]
		if got := sourceLetters(sl); got != want.sources || sl.Run.StepCount != want.steps || sl.Run.ToolCallCount != want.toolCall {
			t.Errorf("row %d: sources %q, step_count %d, tool_call_count %d", i, got, sl.Run.StepCount, sl.Run.ToolCallCount)
		}
		if model.Deref(sl.Steps[4].MessageValue) != "I edited the file /app/hello.txt." {
			t.Errorf("row %d: calling step text %q", i, model.Deref(sl.Steps[4].MessageValue))
		}
		if sl.Run.Reward == nil || *sl.Run.Reward != 1 || model.Deref(sl.Run.Scores) != `{"reward":1}` {
			t.Errorf("row %d: reward %v scores %v", i, sl.Run.Reward, model.Deref(sl.Run.Scores))
		}
		// The row's own tool_definitions (6 tools) win over the <tools> block.
		if e := model.Deref(sl.Run.Extra); strings.Count(e, `"type":"function"`) != 6 || !strings.HasPrefix(strings.SplitN(e, `"tool_definitions":`, 2)[1], `[{"function":{"description":"Execute a bash command`) {
			t.Errorf("row %d: tool_definitions %.200s", i, e)
		}
	}
	if model.Deref(sls[1].Steps[6].MessageValue) != "All done! What's next on the agenda?" {
		t.Errorf("last step %q", model.Deref(sls[1].Steps[6].MessageValue))
	}
}

// TestGlaiveToolCallShareGPT: counted with python over the 300 records:
// 1880 turns (722 human, 724 gpt, 216 function_call, 218 observation). Each
// function_call value is one {name, arguments} object; observations answer
// the earliest unanswered call. Records 197 and 293 write their call as
// prose in a gpt turn ("AI 计算折扣: {...}"), so their observation answers
// nothing: 216 calls all answered, 2 warnings.
func TestGlaiveToolCallShareGPT(t *testing.T) {
	name := "sharegpt_llama-factory_glaive_toolcall_zh_demo.json"
	layout, sls := mustNormalize(t, name, sample(t, name))
	if layout != layoutShareGPT || len(sls) != 300 {
		t.Fatalf("layout %q, %d records", layout, len(sls))
	}
	sources := map[string]int{}
	var steps, answered int
	var warned []string
	for _, sl := range sls {
		steps += len(sl.Steps)
		for _, st := range sl.Steps {
			sources[st.Source+"/"+st.MessageKind]++
		}
		for _, tc := range sl.ToolCalls {
			if tc.ResultStatus == model.ResultOK && tc.ResultLink == model.LinkByOrder && tc.ResultStepID != nil && tc.Arguments != nil && tc.ArgumentsValid {
				answered++
			}
		}
		for _, w := range sl.Warnings {
			warned = append(warned, w.Pointer+": "+w.Message)
		}
	}
	want := map[string]int{"user/text": 722, "agent/text": 724, "agent/tool_calls_only": 216, "tool/text": 218}
	for k, n := range want {
		if sources[k] != n {
			t.Errorf("%s steps = %d, want %d", k, sources[k], n)
		}
	}
	if steps != 1880 || answered != 216 {
		t.Errorf("%d steps, %d answered calls", steps, answered)
	}
	if strings.Join(warned, "\n") != "/197/conversations/2: tool result matches no unanswered call\n/293/conversations/2: tool result matches no unanswered call" {
		t.Errorf("warnings:\n%s", strings.Join(warned, "\n"))
	}
	if tc := sls[0].ToolCalls[0]; tc.FunctionName != "generate_invoice" || !strings.Contains(model.Deref(tc.Arguments), `"customer_name":"约翰·多伊"`) ||
		!strings.HasPrefix(model.Deref(tc.Result), `{"invoice_id": "INV12345"`) {
		t.Errorf("first call: %+v", tc)
	}
}

// TestFastAgentHistory: counted with python: 26 messages; 8 assistant
// messages hold one tools/call request each in their tool_calls map, the
// next user message answers it in tool_results under the same id (t10 and
// t12 with isError true); reasoning sits in channels.reasoning.
func TestFastAgentHistory(t *testing.T) {
	name := "fast-agent_ripgrep-tuning.history.json"
	layout, sls := mustNormalize(t, name, sample(t, name))
	if layout != layoutWrapped || len(sls) != 1 {
		t.Fatalf("layout %q, %d storylines", layout, len(sls))
	}
	sl := sls[0]
	if got := sourceLetters(sl); got != "uatauatauatauatatauatatata" {
		t.Errorf("sources %q", got)
	}
	var ids, errs []string
	for _, tc := range sl.ToolCalls {
		ids = append(ids, tc.ToolCallID)
		exit := "0" // the result's exit_code, kept in the call's extra
		if tc.ResultStatus == model.ResultError {
			exit = "1"
		}
		if tc.FunctionName != "execute" || tc.ResultLink != model.LinkByID || model.Deref(tc.Extra) != `{"result":{"exit_code":`+exit+`}}` {
			t.Errorf("call %s: %+v extra %s", tc.ToolCallID, tc, model.Deref(tc.Extra))
		}
		if tc.ResultStatus == model.ResultError {
			errs = append(errs, tc.ToolCallID)
		}
	}
	if strings.Join(ids, ",") != "t1,t2,t4,t5,t6,t10,t11,t12" || strings.Join(errs, ",") != "t10,t12" {
		t.Errorf("calls %v, errors %v", ids, errs)
	}
	st := sl.Steps[1]
	if st.MessageKind != kindToolCallsOnly || model.Deref(st.Reasoning) != "The query includes a filename (schema.py). First locate that file to avoid broad scans." ||
		model.Deref(st.Extra) != `{"stop_reason":"toolUse"}` {
		t.Errorf("calling step: %+v reasoning %q extra %s", st, model.Deref(st.Reasoning), model.Deref(st.Extra))
	}
	if len(sl.Warnings) != 0 {
		t.Errorf("warnings %v", sl.Warnings)
	}
}

// TestFastAgentConversation: counted with python: 6 messages, user and
// assistant in turn; each assistant message has channels.reasoning and a
// fast-agent-timing channel (JSON text), stop_reason endTurn; every message
// has is_template false. No tools.
func TestFastAgentConversation(t *testing.T) {
	name := "fast-agent_25_11_29_00_46-conversation.history.json"
	_, sls := mustNormalize(t, name, sample(t, name))
	sl := sls[0]
	if got := sourceLetters(sl); got != "uauaua" || len(sl.ToolCalls) != 0 || len(sl.Warnings) != 0 {
		t.Fatalf("sources %q, %d calls, warnings %v", got, len(sl.ToolCalls), sl.Warnings)
	}
	for i, st := range sl.Steps {
		extra := model.Deref(st.Extra)
		if i%2 == 0 {
			if st.Reasoning != nil || extra != `{"is_template":false}` {
				t.Errorf("user step %d: reasoning %v extra %s", i, st.Reasoning, extra)
			}
			continue
		}
		if !strings.HasPrefix(model.Deref(st.Reasoning), " The user") || !strings.HasPrefix(extra, `{"channels":{"fast-agent-timing":[{"type":"text","text":"{\"start_time\": `) ||
			!strings.HasSuffix(extra, `"is_template":false,"stop_reason":"endTurn"}`) {
			t.Errorf("assistant step %d: reasoning %.40q extra %s", i, model.Deref(st.Reasoning), extra)
		}
	}
	if v := model.Deref(sl.Steps[3].MessageValue); v != " Why don't programmers like nature? Because it has too many bugs." {
		t.Errorf("step 3: %q", v)
	}
}
