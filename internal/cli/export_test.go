package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
)

func normalizeBytes(t *testing.T, data []byte) (string, []*model.Storyline) {
	t.Helper()
	var out []*model.Storyline
	det, err := ingest.Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "export", File: "export"}, ingest.Options{},
		func(sl *model.Storyline) error {
			out = append(out, sl)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return det.Format, out
}

func TestExportSelection(t *testing.T) {
	atif := sampleDataset(t, "atif")
	tests := []struct {
		name     string
		args     []string
		format   string
		sessions string // session_id of each Storyline read back
		steps    int64  // total step_count read back
	}{
		{"source", []string{"--source", "fast-agent_harbor_multiagent_v1_7.json", "--as", "canonical"}, format.Canonical,
			"harbor-golden-run harbor-golden-run/traj_child_golden", 5},
		{"sessions", []string{"--session", "agent-004", "--session", "tbench-1765491470070-3679a2f1", "--as", "canonical"}, format.Canonical,
			"agent-004 tbench-1765491470070-3679a2f1", 12},
		{"run as atif", []string{"--run", "harbor-golden-run", "--as", "atif"}, format.ATIF,
			"harbor-golden-run harbor-golden-run/traj_child_golden", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runInProcess(t, append([]string{"export", atif}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got, sls := normalizeBytes(t, []byte(out))
			if got != tt.format {
				t.Fatalf("exported bytes detected as %s", got)
			}
			var ids []string
			var steps int64
			for _, sl := range sls {
				ids = append(ids, sl.Run.SessionID)
				steps += sl.Run.StepCount
			}
			if strings.Join(ids, " ") != tt.sessions || steps != tt.steps {
				t.Errorf("sessions %v, %d steps; want %s, %d", ids, steps, tt.sessions, tt.steps)
			}
		})
	}
}

func TestExportOutputs(t *testing.T) {
	atif := sampleDataset(t, "atif")
	dir := filepath.Join(t.TempDir(), "atif")
	if _, errOut, code := runInProcess(t, "export", atif, "--as", "atif", "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 10 { // the 9 ATIF samples hold 10 Storylines (one embedded subagent)
		t.Errorf("%d ATIF files, want 10", len(entries))
	}
	file := filepath.Join(t.TempDir(), "chat.jsonl")
	if _, errOut, code := runInProcess(t, "export", atif, "--as", "openai", "--out", file); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, _ := os.ReadFile(file)
	if f, sls := normalizeBytes(t, data); f != format.OpenAI || len(sls) != 10 {
		t.Errorf("openai export: %s, %d Storylines", f, len(sls))
	}
	for _, bad := range [][]string{
		{"--session", "nope"},
		{"--as", "parquet"},
		{"--source", "nope.json"},
		{"--as", "canonical", "--out", dir},
	} {
		if _, _, code := runInProcess(t, append([]string{"export", atif}, bad...)...); code == 0 {
			t.Errorf("%v: succeeded", bad)
		}
	}
	out, _, _ := runInProcess(t, "export", "--help")
	if !strings.Contains(out, "Examples:") || !strings.Contains(out, "--as") {
		t.Errorf("help: %s", out)
	}
}
