package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// FuzzDetectAndNormalize feeds arbitrary bytes through detection across every
// adapter and, when one claims them, through its normalizer: nothing may
// panic, and a failure must be a located error. Each input is normalized as
// a streamed file and as one read whole into memory (format.InMemory, as
// ingest reads small files): the two give the same Storylines and error.
func FuzzDetectAndNormalize(f *testing.F) {
	root := testutil.SamplesDir(f)
	for _, rel := range testutil.SampleFiles(f) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 64<<10 {
			data = data[:64<<10] // keep the corpus quick to mutate
		}
		f.Add(data, filepath.Base(rel))
	}
	// Formats and dialects no public sample exists for: the adapters' own
	// fixtures.
	fixtures, err := filepath.Glob(filepath.Join(testutil.RepoRoot(f), "internal", "format", "*", "testdata", "*.json*"))
	if err != nil || len(fixtures) == 0 {
		f.Fatalf("adapter fixtures: %v", err)
	}
	markdown, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(f), "internal", "format", "*", "testdata", "*.aider.chat.history.md"))
	fixtures = append(fixtures, markdown...)
	for _, path := range fixtures {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, filepath.Base(path))
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		p := format.NewProbe(name, data, false)
		det, err := Detect(p)
		if err != nil {
			return // no adapter claims the input: nothing to normalize
		}
		normalize := func(r io.Reader) (string, error) {
			var out strings.Builder
			err := det.Adapter.Normalize(context.Background(), r, format.Source{Path: name, File: name}, det.Layout,
				func(sl *model.Storyline) error {
					b, err := json.Marshal(sl)
					out.Write(b)
					return err
				})
			return out.String(), err
		}
		inMemory, memErr := normalize(format.NewInMemory(bytes.Clone(data)))
		streamed, err := normalize(bytes.NewReader(data))
		if inMemory != streamed || fmt.Sprint(memErr) != fmt.Sprint(err) {
			t.Fatalf("%s/%s: in memory and streamed differ:\n%s\n%v\n---\n%s\n%v", det.Adapter.Name(), det.Layout, inMemory, memErr, streamed, err)
		}
		if err == nil {
			return
		}
		// The user sees this error: it must say which file (and where in it).
		pe, located := errors.AsType[*format.ParseError](err)
		if !located || pe.Path != name {
			t.Fatalf("%s/%s: error does not locate the failure in %q: %v", det.Adapter.Name(), det.Layout, name, err)
		}
	})
}

// FuzzDetectionPrecision mutates the public samples — trajectories and the
// files of negatives/ that are not — and checks that detection claims only
// what its adapter can read as a trajectory: when an adapter claims the
// input and normalizes it without an error, the Storylines must not be made
// up (madeUp: at least one Storyline, each with a step holding a message,
// reasoning, observation or tool call read from the file). A claim the
// adapter then rejects with a located error is fine (FuzzDetectAndNormalize
// checks those); rows with nothing of the file in them are not.
func FuzzDetectionPrecision(f *testing.F) {
	root := testutil.SamplesDir(f)
	for _, rel := range testutil.SampleFiles(f) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 32<<10 {
			continue // keep the corpus quick to mutate: most samples are smaller
		}
		f.Add(data, filepath.Base(rel))
	}
	opencode, err := filepath.Glob(filepath.Join("testdata", "opencode-storage", "*", "*", "*.json"))
	if err != nil || len(opencode) == 0 {
		f.Fatalf("opencode tree: %v", err)
	}
	for _, path := range opencode {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, filepath.Base(path))
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		det, err := Detect(format.NewProbe(name, data, false))
		if err != nil {
			return
		}
		var sls []*model.Storyline
		err = det.Adapter.Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, det.Layout,
			func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
		if err != nil {
			return
		}
		if why := madeUp(sls); why != "" {
			t.Fatalf("%s/%s claimed %q: %s", det.Adapter.Name(), det.Layout, name, why)
		}
	})
}
