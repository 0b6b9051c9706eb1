package atif

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// samplesDir finds shared/samples/atif beside the repository: walk up to
// go.mod (the repo root), then look in <root>/../shared/samples.
func samplesDir(t testing.TB) string {
	return filepath.Join(testutil.SamplesDir(t), "atif")
}

// sampleFiles lists the ATIF samples, relative to samplesDir.
var sampleFiles = []string{
	"fast-agent_harbor_multiagent_v1_7.json",
	"harbor-golden/misc/openhands_hello-world.trajectory.json",
	"harbor-golden/terminus_2_context-summarization/trajectory.json",
	"harbor-golden/terminus_2_context-summarization/trajectory.summarization-1-summary.json",
	"harbor-golden/terminus_2_linear-history/trajectory.cont-1.json",
	"harbor-golden/terminus_2_linear-history/trajectory.json",
	"nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json",
	"openagents_orchestrator_streaming.atif.jsonl",
	"openagents_tbench-regex-log_nonconformant-1.4.trajectory.json",
}

// normalizeFile detects and normalizes one file as ingest would.
func normalizeFile(t testing.TB, path, rel string) (string, []*model.Storyline) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := New()
	layout, ok := a.Detect(format.NewProbe(filepath.Base(path), data, false))
	if !ok {
		t.Fatalf("%s: not detected as ATIF", rel)
	}
	var out []*model.Storyline
	src := format.Source{Path: path, File: rel}
	err = a.Normalize(context.Background(), bytes.NewReader(data), src, layout, func(sl *model.Storyline) error {
		out = append(out, sl)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return layout, out
}

// TestGolden compares each sample's Storylines with
// testdata/golden/<sample path without extension>.golden.json.
func TestGolden(t *testing.T) { testutil.GoldenSamples(t, New(), "atif", sampleFiles...) }
