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

func TestCodexFixtureImage(t *testing.T) {
	name := "codex-fixture_rollout_copy_paste_local_image.response_item.json"
	layout, sls := mustNormalize(t, name, sample(t, name))
	if layout != layoutResponses || len(sls) != 1 || len(sls[0].Steps) != 1 {
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
