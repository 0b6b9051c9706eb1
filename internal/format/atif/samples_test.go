package atif

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// figures are the key numbers of one Storyline, counted by hand (jq/python)
// from the sample documents.
type figures struct {
	session, parent, sourceFormat, status string
	steps, copied, stepCount              int   // rows, is_copied_context rows, runs.step_count
	calls, callCount                      int   // rows, runs.tool_call_count
	byID, ambiguous, missing, crossStep   int   // tool-call links
	errors                                int   // result_status "error"
	prompt, reportedPrompt                int64 // computed vs final_metrics (-1 = NULL)
	completion, reportedCompletion        int64
	reportedSteps                         int64
	refs, embeddedRefs                    int
	continued                             string
}

func TestSampleFigures(t *testing.T) {
	dir := samplesDir(t)
	tests := []struct {
		file  string
		want  []figures
		warns int
	}{
		{
			// Root totals include the embedded child: 250 = 230 + 20.
			file: "fast-agent_harbor_multiagent_v1_7.json",
			want: []figures{
				{session: "harbor-golden-run", sourceFormat: "atif/1.7", status: "unknown",
					steps: 3, stepCount: 3, calls: 2, callCount: 2, byID: 2,
					prompt: 230, reportedPrompt: 250, completion: 40, reportedCompletion: 50, reportedSteps: 3,
					refs: 1, embeddedRefs: 1},
				{session: "harbor-golden-run/traj_child_golden", parent: "harbor-golden-run", sourceFormat: "atif/1.7", status: "unknown",
					steps: 2, stepCount: 2, prompt: 20, reportedPrompt: 20, completion: 10, reportedCompletion: 10, reportedSteps: 2},
			},
		},
		{
			// The last agent step calls finish but has no observation.
			file: "harbor-golden/misc/openhands_hello-world.trajectory.json",
			want: []figures{{session: "NORMALIZED_SESSION_ID", sourceFormat: "atif/1.5", status: "completed",
				steps: 6, stepCount: 6, calls: 2, callCount: 2, byID: 1, missing: 1,
				prompt: 220, reportedPrompt: 220, completion: 80, reportedCompletion: 80, reportedSteps: -1}},
		},
		{
			// final_metrics (7802) includes the summarization subagents; the
			// steps sum to 6502. Results carry no source_call_id.
			file: "harbor-golden/terminus_2_context-summarization/trajectory.json",
			want: []figures{{session: "NORMALIZED_SESSION_ID", sourceFormat: "atif/1.5", status: "completed",
				steps: 10, stepCount: 10, calls: 7, callCount: 7, ambiguous: 7,
				prompt: 6502, reportedPrompt: 7802, completion: 690, reportedCompletion: 1030, reportedSteps: -1,
				refs: 3}},
		},
		{
			file: "harbor-golden/terminus_2_context-summarization/trajectory.summarization-1-summary.json",
			want: []figures{{session: "test-session-context-summarization-summarization-1-summary", parent: "NORMALIZED_SESSION_ID",
				sourceFormat: "atif/1.5", status: "unknown",
				steps: 5, copied: 3, stepCount: 2, calls: 2, callCount: 0, ambiguous: 2,
				prompt: 500, reportedPrompt: 500, completion: 200, reportedCompletion: 200, reportedSteps: -1}},
		},
		{
			// A continuation reports run-cumulative totals (7802), its own
			// steps sum to 4250.
			file: "harbor-golden/terminus_2_linear-history/trajectory.cont-1.json",
			want: []figures{{session: "NORMALIZED_SESSION_ID", sourceFormat: "atif/1.5", status: "unknown",
				steps: 8, copied: 4, stepCount: 4,
				prompt: 4250, reportedPrompt: 7802, completion: 530, reportedCompletion: 1030, reportedSteps: -1}},
		},
		{
			file: "harbor-golden/terminus_2_linear-history/trajectory.json",
			want: []figures{{session: "NORMALIZED_SESSION_ID", sourceFormat: "atif/1.5", status: "unknown",
				steps: 5, stepCount: 5, prompt: 2252, reportedPrompt: 2252, completion: 160, reportedCompletion: 160, reportedSteps: -1,
				refs: 3, continued: "trajectory.cont-1.json"}},
		},
		{
			file: "nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json",
			want: []figures{{session: "agent-004", sourceFormat: "atif/1.7", status: "unknown",
				steps: 3, stepCount: 3, calls: 1, callCount: 1, byID: 1,
				prompt: -1, reportedPrompt: -1, completion: -1, reportedCompletion: -1, reportedSteps: -1}},
		},
		{
			// session_id-only subagent refs; results naming no call.
			file: "openagents_orchestrator_streaming.atif.jsonl",
			want: []figures{{session: "session-2025-12-05T08-07-41-875Z-ebphxk", sourceFormat: "atif-jsonl/1.4", status: "unknown",
				steps: 11, stepCount: 11,
				prompt: -1, reportedPrompt: -1, completion: -1, reportedCompletion: -1, reportedSteps: -1, refs: 2}},
			warns: 2,
		},
		{
			// 9 steps vs total_steps 6; results recorded before their calls.
			file: "openagents_tbench-regex-log_nonconformant-1.4.trajectory.json",
			want: []figures{{session: "tbench-1765491470070-3679a2f1", sourceFormat: "atif/1.4", status: "completed",
				steps: 9, stepCount: 9, calls: 5, callCount: 5, byID: 5, crossStep: 5, errors: 2,
				prompt: -1, reportedPrompt: 70, completion: -1, reportedCompletion: 15013, reportedSteps: 6}},
			warns: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, sls := normalizeFile(t, filepath.Join(dir, tt.file), tt.file)
			if len(sls) != len(tt.want) {
				t.Fatalf("got %d Storylines, want %d", len(sls), len(tt.want))
			}
			warns := 0
			for i, sl := range sls {
				if got := figuresOf(t, sl); got != tt.want[i] {
					t.Errorf("Storyline %d:\n got %+v\nwant %+v", i, got, tt.want[i])
				}
				if sl.Run.RunID != sls[0].Run.SessionID {
					t.Errorf("Storyline %d: run_id %q, want the root session %q", i, sl.Run.RunID, sls[0].Run.SessionID)
				}
				warns += len(sl.Warnings)
			}
			if warns != tt.warns {
				t.Errorf("got %d warnings, want %d", warns, tt.warns)
			}
		})
	}
}

func figuresOf(t *testing.T, sl *model.Storyline) figures {
	r := sl.Run
	f := figures{
		session: r.SessionID, parent: model.Deref(r.ParentSessionID), sourceFormat: r.SourceFormat, status: r.Status,
		steps: len(sl.Steps), stepCount: int(r.StepCount), calls: len(sl.ToolCalls), callCount: int(r.ToolCallCount),
		prompt: testutil.OrMinus1(r.PromptTokens), reportedPrompt: testutil.OrMinus1(r.ReportedPromptTokens),
		completion: testutil.OrMinus1(r.CompletionTokens), reportedCompletion: testutil.OrMinus1(r.ReportedCompletionTokens),
		reportedSteps: testutil.OrMinus1(r.ReportedStepCount), continued: model.Deref(r.ContinuedTrajectoryRef),
	}
	for _, st := range sl.Steps {
		if st.IsCopiedContext {
			f.copied++
		}
	}
	for _, tc := range sl.ToolCalls {
		switch tc.ResultLink {
		case model.LinkByID:
			f.byID++
		case model.LinkAmbiguous:
			f.ambiguous++
		}
		if tc.ResultStatus == model.ResultMissing {
			f.missing++
		}
		if tc.ResultStatus == model.ResultError {
			f.errors++
		}
		if tc.ResultStepID != nil {
			f.crossStep++
		}
	}
	if r.SubagentRefs != nil {
		var refs []model.SubagentRef
		if err := json.Unmarshal([]byte(*r.SubagentRefs), &refs); err != nil {
			t.Fatalf("subagent_refs: %v", err)
		}
		f.refs = len(refs)
		for _, ref := range refs {
			if ref.Embedded {
				f.embeddedRefs++
			}
		}
	}
	return f
}
