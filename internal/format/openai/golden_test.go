package openai

import (
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

var goldenSamples = []string{
	"openai-cookbook_toy_chat_fine_tuning.jsonl",
	"harbor-golden_terminus2_context-summarization.traces.json",
	"codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
	"harbor-golden_openhands_hello-world.hermes-tool_call.traces.json",
	"fast-agent_ripgrep-tuning.history.json",
	"fast-agent_25_11_29_00_46-conversation.history.json",
}

func TestGolden(t *testing.T) { testutil.GoldenSamples(t, New(), "openai", goldenSamples...) }

// TestGoldenLayouts pins the layout detection chooses for each golden
// sample (golden files hold rows, not the layout).
func TestGoldenLayouts(t *testing.T) {
	for name, want := range map[string]string{
		"openai-cookbook_toy_chat_fine_tuning.jsonl":                                           layoutChatJSONL,
		"harbor-golden_terminus2_context-summarization.traces.json":                            layoutHarbor,
		"codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl": layoutCodex,
	} {
		if layout, ok := detect(name, sample(t, name)); !ok || layout != want {
			t.Errorf("%s: detected %q (%v), want %q", name, layout, ok, want)
		}
	}
}
