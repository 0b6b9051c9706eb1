package claudecode_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestIngestDetection runs the fixtures through the registered adapter
// list: each is claimed by claude-code, not by a more generic adapter.
func TestIngestDetection(t *testing.T) {
	for _, name := range []string{"session-basic.jsonl", "session-subagents.jsonl", "agent-a1b2c3d.jsonl"} {
		path := filepath.Join("testdata", name)
		det, err := ingest.DetectFile(path, ingest.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if det.Format != format.ClaudeCode || det.Layout != "jsonl" {
			t.Errorf("%s: detected %s/%s", name, det.Format, det.Layout)
		}
		n := 0
		if _, err := ingest.NormalizeFile(context.Background(), path, name, ingest.Options{}, func(*model.Storyline) error { n++; return nil }); err != nil || n == 0 {
			t.Errorf("%s: %d Storylines, %v", name, n, err)
		}
	}
}

// TestSamplesKeepTheirDetection checks that no public sample is claimed by
// the Claude Code adapter.
func TestSamplesKeepTheirDetection(t *testing.T) {
	root := testutil.SamplesDir(t)
	for _, rel := range testutil.SampleFiles(t) {
		det, err := ingest.DetectFile(filepath.Join(root, rel), ingest.Options{})
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if det.Format == format.ClaudeCode {
			t.Errorf("%s: claimed by claude-code", rel)
		}
	}
}
