package openai

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

// samplesDir locates shared/samples beside the repository: walk up to the
// directory holding go.mod, then look in its parent.
func samplesDir(t testing.TB) string {
	return testutil.SamplesDir(t)
}

func sample(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(samplesDir(t), "openai", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// detect runs detection over the bounded probe of data, as ingest does.
func detect(name string, data []byte) (string, bool) {
	p, err := format.ReadProbe(bytes.NewReader(data), name, format.DefaultMaxDetectionBytes)
	if err != nil {
		return "", false
	}
	return New().Detect(p)
}

// normalize detects and normalizes data, collecting every Storyline.
func normalize(name string, data []byte) (string, []*model.Storyline, error) {
	layout, ok := detect(name, data)
	if !ok {
		return "", nil, &format.UnrecognizedError{Path: name, Reason: "not detected"}
	}
	var out []*model.Storyline
	err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, layout,
		func(sl *model.Storyline) error {
			out = append(out, sl)
			return nil
		})
	return layout, out, err
}

func mustNormalize(t testing.TB, name string, data []byte) (string, []*model.Storyline) {
	t.Helper()
	layout, sls, err := normalize(name, data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return layout, sls
}
