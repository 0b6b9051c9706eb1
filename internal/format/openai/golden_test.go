package openai

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

var goldenSamples = []string{
	"openai-cookbook_toy_chat_fine_tuning.jsonl",
	"harbor-golden_terminus2_context-summarization.traces.json",
	"codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
	"codex-fixture_rollout_copy_paste_local_image.response_item.json",
	"harbor-golden_openhands_hello-world.hermes-tool_call.traces.json",
	"fast-agent_ripgrep-tuning.history.json",
	"fast-agent_25_11_29_00_46-conversation.history.json",
}

func TestGolden(t *testing.T) {
	for _, name := range goldenSamples {
		t.Run(name, func(t *testing.T) {
			layout, sls := mustNormalize(t, name, sample(t, name))
			out := struct {
				Layout     string                     `json:"layout"`
				Storylines []testutil.GoldenStoryline `json:"storylines"`
			}{Layout: layout}
			for _, sl := range sls {
				out.Storylines = append(out.Storylines, testutil.NewGoldenStoryline(sl))
			}
			got, err := jsonx.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := indent(&pretty, got); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", strings.TrimSuffix(name, filepath.Ext(name))+".golden.json")
			testutil.Golden(t, path, pretty.Bytes())
		})
	}
}

func indent(dst *bytes.Buffer, src []byte) error {
	if err := json.Indent(dst, src, "", " "); err != nil {
		return err
	}
	dst.WriteByte('\n')
	return nil
}
