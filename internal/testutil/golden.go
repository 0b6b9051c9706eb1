package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Update rewrites golden files from the current output instead of comparing
// (go test ./... -run Golden -update); review the diff before committing.
var Update = flag.Bool("update", false, "rewrite golden files under testdata/ from the current output")

// Golden compares got with the golden file at path (relative to the test's
// package), or rewrites the file with -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	got = append(bytes.TrimSpace(got), '\n')
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the current output; rerun with -update and review the diff", path)
	}
}

// GoldenStoryline is the golden-file form of one Storyline: its rows and
// warnings, as adapters' golden tests record them.
type GoldenStoryline struct {
	Run       model.Run        `json:"run"`
	Steps     []model.Step     `json:"steps"`
	ToolCalls []model.ToolCall `json:"tool_calls"`
	Warnings  []model.Warning  `json:"warnings"`
}

// NewGoldenStoryline returns sl's golden-file form.
func NewGoldenStoryline(sl *model.Storyline) GoldenStoryline {
	return GoldenStoryline{sl.Run, sl.Steps, sl.ToolCalls, sl.Warnings}
}

// MustNormalize detects data (named name) with adapter a and normalizes it,
// failing the test when a does not claim it or cannot read it.
func MustNormalize(t testing.TB, a format.Adapter, name string, data []byte) (layout string, sls []*model.Storyline) {
	t.Helper()
	layout, ok := a.Detect(format.NewProbe(name, data, false))
	if !ok {
		t.Fatalf("%s: not detected as %s", name, a.Name())
	}
	err := a.Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, layout,
		func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return layout, sls
}

// Fixture reads testdata/name of the test's package.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// GoldenFixtures normalizes each testdata fixture with adapter a and
// compares its Storylines with testdata/golden/<name>.golden.json (the
// fixture's name without .json/.jsonl).
func GoldenFixtures(t *testing.T, a format.Adapter, names ...string) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) { GoldenInput(t, a, name, Fixture(t, name)) })
	}
}

// GoldenSamples is GoldenFixtures for public samples: each named file of
// ../shared/samples/<family> is compared with testdata/golden/<name>.golden.json.
func GoldenSamples(t *testing.T, a format.Adapter, family string, names ...string) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) { GoldenInput(t, a, name, Sample(t, family+"/"+name)) })
	}
}

// GoldenInput normalizes data (a fixture or a sample, named name) with
// adapter a and compares its Storylines with
// testdata/golden/<name>.golden.json, where a JSON, JSONL or Markdown
// extension is dropped from name (other extensions, .traj or .eval, stay).
func GoldenInput(t *testing.T, a format.Adapter, name string, data []byte) {
	t.Helper()
	_, sls := MustNormalize(t, a, name, data)
	out := make([]GoldenStoryline, len(sls))
	for i, sl := range sls {
		out[i] = NewGoldenStoryline(sl)
	}
	got, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	base := name
	switch filepath.Ext(name) {
	case ".json", ".jsonl", ".ndjson", ".md":
		base = strings.TrimSuffix(name, filepath.Ext(name))
	}
	Golden(t, filepath.Join("testdata", "golden", base+".golden.json"), got)
}

// OrMinus1 is an optional count for comparisons in figure tests: -1 when
// absent, so that absent and 0 stay apart.
func OrMinus1(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
