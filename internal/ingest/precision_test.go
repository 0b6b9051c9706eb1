package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// sampleFormats is the exact detection of every public sample outside
// negatives/ (where every file must be "not a trajectory"): format/layout,
// or "" for a file no reader claims. A sample missing from the table fails
// the test, so a new sample gets its row.
var sampleFormats = []struct{ file, format string }{
	// Producers with a reader of their own (claimed, format/layout).
	{"actf_candidates/nemo-agent-toolkit_exmp02_atof-nat-draft.atof.jsonl", "actf/nat-draft"},
	{"atif/fast-agent_harbor_multiagent_v1_7.json", "atif/json"},
	{"atif/harbor-golden/misc/openhands_hello-world.trajectory.json", "atif/json"},
	{"atif/harbor-golden/terminus_2_context-summarization/trajectory.json", "atif/json"},
	{"atif/harbor-golden/terminus_2_context-summarization/trajectory.summarization-1-summary.json", "atif/json"},
	{"atif/harbor-golden/terminus_2_linear-history/trajectory.cont-1.json", "atif/json"},
	{"atif/harbor-golden/terminus_2_linear-history/trajectory.json", "atif/json"},
	{"atif/nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json", "atif/json"},
	{"atif/openagents_orchestrator_streaming.atif.jsonl", "atif/jsonl"},
	{"atif/openagents_tbench-regex-log_nonconformant-1.4.trajectory.json", "atif/json"},
	{"inspect/docent_intercode-ctf_claude-3-5-sonnet_2-epochs.json", "inspect/json"},
	{"inspect/docent_intercode-ctf_gpt-4o_subset.eval", "inspect/eval"},
	{"inspect/inspect_ai_2024-11-05T13-31-45-05-00_input-task.json", "inspect/json"},
	{"inspect/inspect_ai_log_tool_call_error.json", "inspect/json"},
	{"inspect/metr_inspect-action_small_oxdna_claude-opus-4-1.eval", "inspect/eval"},
	{"inspect/ts-mono_ais-decoder_gpt-5.4_zstd.eval", "inspect/eval"},
	{"inspect/ts-mono_log_streaming_chunked-layout.eval", "inspect/eval"},
	{"openai/codex-fixture_rollout_copy_paste_local_image.response_item.json", ""},
	{"openai/codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl", "openai/codex-rollout"},
	{"openai/fast-agent_25_11_29_00_46-conversation.history.json", "openai/wrapped"},
	{"openai/fast-agent_ripgrep-tuning.history.json", "openai/wrapped"},
	{"openai/harbor-golden_openhands_hello-world.hermes-tool_call.traces.json", "openai/harbor-traces"},
	{"openai/harbor-golden_terminus2_context-summarization.traces.json", "openai/harbor-traces"},
	{"openai/openai-cookbook_toy_chat_fine_tuning.jsonl", "openai/chat-jsonl"},
	{"openai/sharegpt_llama-factory_glaive_toolcall_zh_demo.json", "openai/sharegpt"},
	{"openhands/harbor-rfc_openhands_events_recall_finish.json", "openhands/json"},
	{"openhands/openhands-benchmarks_openagentsafety_v1-sdk_output.jsonl", "openhands/jsonl"},
	{"openhands/openhands-sdk_v1_goal_events.jsonl", "openhands/sdk-events"},
	{"openhands/openhands_resolver_mock_output.jsonl", "openhands/jsonl"},
	{"openhands/openhands_runtime_trajs_basic_gui_mode.json", "openhands/json"},
	{"other/aider_afi-core.aider.chat.history.md", "aider/markdown"},
	{"other/aider_zen-mcp-server_commands-only.aider.chat.history.md", "aider/markdown"},
	{"other/gemini-cli_harbor-rfc_session.json", "gemini-cli/json"},
	{"sweagent/mini-swe-agent-v1.13.4_harbor-rfc_hello-world.traj.json", "swe-agent/mini-swe-agent-1"},
	{"sweagent/mini-swe-agent-v1.15_gemini-3-pro_django__django-10097_format-errors.traj.json", "swe-agent/mini-swe-agent-1"},
	{"sweagent/swe-agent_6e44b9__sweagenttestrepo-1c2844.traj", "swe-agent/traj"},
	{"sweagent/swe-agent_enigma-demo_ctf_pwn_warmup.traj", "swe-agent/traj"},
	{"sweagent/swe-agent_function_calling_simple.history-only.traj", "swe-agent/history"},
	// Producers no existing reader claims: "" is "not a trajectory".
	// New readers take these over; update the row with the reader.
	{"amp/T-019ca1ce-3ae2-7686-a41e-ccc078837f8a.json", "openai/wrapped"},
	{"amp/T-019ca1f6-7f21-77b5-a308-65416ebbdf48.json", "openai/wrapped"},
	{"continue/git-ai_continue-cli-session-simple.json", ""},
	{"copilot/git-ai_copilot_session_multiline.chat-session.jsonl", ""},
	{"copilot/git-ai_copilot_session_simple.chat-session.json", ""},
	{"copilot/git-ai_copilot_vscode_event_stream.jsonl", ""},
	{"copilot/session-state/301561f1-558a-43e9-a144-82d3ca12ab62/events.jsonl", ""},
	{"cursor/git-ai_cursor-session-simple.jsonl", ""},
	{"droid/droid-session.jsonl", ""},
	{"droid/droid-session.settings.json", ""},
	{"kimi/agent-sessions_kimi_assistant_tools.jsonl", ""},
	{"kimi/agent-sessions_kimi_assistant_tools.state.json", ""},
	{"langfuse/langfuse_claude-agent-2025-12-22.trace.json", "langfuse/export"},
	{"langfuse/langfuse_openai-agents-2025-09-30.trace.json", "langfuse/export"},
	{"langfuse/langfuse_pydantic-ai-tools-2025-12-04.trace.json", "langfuse/export"},
	{"openhands-v1/conversations/v1_11_5_cli_default/base_state.json", ""},
	{"openhands-v1/local_plugin_install_test/persistence/00000000000000000000000000000203/base_state.json", ""},
	{"openhands-v1/local_plugin_install_test/persistence/00000000000000000000000000000203/events/event-00000-e873d551-3b3e-4a3d-9533-ee5fed334228.json", ""},
	{"openhands-v1/local_plugin_install_test/persistence/00000000000000000000000000000203/events/event-00001-2ad1aaa6-170e-48c7-8728-a1f1a34ac324.json", ""},
	{"openhands-v1/local_plugin_install_test/persistence/00000000000000000000000000000203/events/event-00002-e6cc1c04-55f1-453a-b0d6-38b52346063c.json", ""},
	{"openhands-v1/test_file_store/base_state.json", ""},
	{"openhands-v1/test_file_store/events/event-00000-cd7fcbce-fc9a-4e7f-ba98-4378b1c0a9e0.json", ""},
	{"openhands-v1/workdir_layout/.openhands/base_state.json", ""},
	{"openhands-v1/workdir_layout/.openhands/events/event-00000-e911d29f-eac2-40e6-bde0-ef81be83a504.json", ""},
	{"otel-genai/openinference-genai_openinference_client_span_tool_calls.attributes.json", ""},
	{"otel-genai/openinference-genai_otel_genai_client_span_tool_calls.attributes.json", ""},
	{"pi/pi-mono_2025-12-17_session_two-records-on-one-line.jsonl", "pi/jsonl"},
	{"pi/pi-mono_large-session.jsonl", "pi/jsonl"},
	{"qwen-code/agent-sessions_qwen_019f0000-0000-7000-8000-000000000001.jsonl", "qwen-code/jsonl"},
	{"tau-bench/tool-calling-deepseek-v3-0.0_range_0-1_user-gpt-4o-human_0612073827.json", "tau-bench/results"},
	{"tau2-bench/oscaralvaro_2026-04-04T13-13-08.148739_hotel_calle_llm_agent_gemma-3-27b-it_user_simulator_gemma-3-12b-it.json", "tau-bench/tau2-results"},
	{"tau2-bench/oscaralvaro_resultados_restaurante_joaquin_cachay_full_throttled.json", "tau-bench/tau2-results"},
	{"tau2-bench/oscaralvaro_salud_mendoza_rag_demo_1.json", "tau-bench/tau2-results"},
	{"tau2-bench/voice_experiment/results.json", "tau-bench/tau2-results"},
	{"tau2-bench/voice_experiment/simulations/49b22f0c-4a56-41c5-922f-bc2a56e53a23.json", "tau-bench/tau2-simulation"},
	{"tau2-bench/voice_experiment/simulations/7c6a3e3e-ac3f-406f-aea9-8cacb0a2e680.json", "tau-bench/tau2-simulation"},
	{"tau2-bench/voice_experiment/simulations/cd9c5ed2-9751-4c86-8dac-8a895a332e41.json", "tau-bench/tau2-simulation"},
	{"windsurf/git-ai_windsurf-session-simple.jsonl", ""},
}

// claimedEmpty are samples whose structure proves their format but that
// hold no run: τ² results without simulations (an empty run, and the
// folder layout's results.json, whose simulations are files of their own).
var claimedEmpty = map[string]bool{
	"tau2-bench/oscaralvaro_salud_mendoza_rag_demo_1.json": true,
	"tau2-bench/voice_experiment/results.json":             true,
}

// TestEverySampleIsDetectedExactly detects every public sample and checks
// the result against sampleFormats; each claimed sample must normalize into
// Storylines that are not made up (madeUp), with unique session ids.
func TestEverySampleIsDetectedExactly(t *testing.T) {
	root := testutil.SamplesDir(t)
	want := map[string]string{}
	for _, s := range sampleFormats {
		want[s.file] = s.format
	}
	negatives := 0
	for _, rel := range testutil.SampleFiles(t) {
		t.Run(rel, func(t *testing.T) {
			expect, listed := want[rel]
			delete(want, rel)
			if strings.HasPrefix(rel, "negatives/") {
				negatives++
				expect, listed = "", true
			}
			if !listed {
				t.Fatalf("no row in sampleFormats: add its expected format")
			}
			var sls []*model.Storyline
			det, err := NormalizeFile(context.Background(), filepath.Join(root, rel), rel, Options{}, func(sl *model.Storyline) error {
				sls = append(sls, sl)
				return nil
			})
			if expect == "" {
				if !errors.Is(err, format.ErrUnrecognized) {
					t.Fatalf("want not a trajectory, got %s/%s (%v, %d Storylines)", det.Format, det.Layout, err, len(sls))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := det.Format + "/" + det.Layout; got != expect {
				t.Fatalf("detected %s, want %s", got, expect)
			}
			if claimedEmpty[rel] != (len(sls) == 0) {
				t.Fatalf("%d Storylines; a file claimed with none must be in claimedEmpty", len(sls))
			}
			if why := madeUp(sls); why != "" {
				t.Fatal(why)
			}
			seen := map[string]bool{}
			for _, sl := range sls {
				if !sl.More && seen[sl.Run.SessionID] {
					t.Errorf("session_id %q repeats", sl.Run.SessionID)
				}
				seen[sl.Run.SessionID] = !sl.More
			}
		})
	}
	if negatives < 90 {
		t.Errorf("only %d files under negatives/", negatives)
	}
	for rel := range want {
		t.Errorf("%s: in sampleFormats but not among the samples", rel)
	}
}

// madeUp says why the Storylines a claimed file normalized into without an
// error are made up, or "" when they are not. Made up means a Storyline
// with nothing read from the file — no message text,
// reasoning, observation, non-text content (a voice turn of τ²-bench) or
// tool call in any step, and no graded outcome (reward or scores, as a
// benchmark result whose run failed before its first turn has). That is what a
// structure that is not a trajectory turns into when an adapter claims it
// (an OpenCode message header read as a chat message: one empty step).
// Parts of a run (model.Storyline.More) count together.
func madeUp(sls []*model.Storyline) string {
	evidence := map[string]bool{}
	for _, sl := range sls {
		id := sl.Run.SessionID
		if _, ok := evidence[id]; !ok {
			evidence[id] = false
		}
		if len(sl.ToolCalls) > 0 || sl.Run.Reward != nil || model.Deref(sl.Run.Scores) != "" {
			evidence[id] = true
		}
		for _, st := range sl.Steps {
			nonText := st.MessageKind != "" && st.MessageKind != "text"
			if model.Deref(st.MessageValue) != "" || model.Deref(st.Reasoning) != "" || model.Deref(st.Observation) != "" || nonText {
				evidence[id] = true
			}
		}
	}
	for id, ok := range evidence {
		if !ok {
			return fmt.Sprintf("Storyline %q holds no message, reasoning, observation or tool call from the file", id)
		}
	}
	return ""
}

// TestOpenCodeStorageIsNotMisread: OpenCode's storage tree (testdata,
// written after OpenCode's session, message and part schemas) keeps one
// record per file — a session header, message headers (a role, no
// content), message parts, a project and a todo list. No reader may take
// any of them for a trajectory; before, the two message headers and the
// reasoning part became three made-up openai/responses Storylines.
func TestOpenCodeStorageIsNotMisread(t *testing.T) {
	root := filepath.Join("testdata", "opencode-storage")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		det, err := DetectFile(path, Options{})
		if !errors.Is(err, format.ErrUnrecognized) {
			t.Errorf("%s: detected %s/%s (%v)", path, det.Format, det.Layout, err)
		}
		return nil
	})
	if err != nil || n != 11 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
