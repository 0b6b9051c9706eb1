package benchcorpus_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// Every shape builds the same bytes twice, of the format it names, with
// distinct Storylines ((_file_, session_id)) across its copies (so a corpus is not one file's
// rows repeated under one id).
func TestShapesAreDeterministicAndOfTheirFormat(t *testing.T) {
	samples := testutil.SamplesDir(t)
	formats := map[string]string{
		benchcorpus.ShapeCodex: format.OpenAI, benchcorpus.ShapeATIF: format.ATIF, benchcorpus.ShapeOpenHands: format.OpenHands,
		benchcorpus.ShapeInspect: format.Inspect, benchcorpus.ShapeChat: format.OpenAI, benchcorpus.ShapeATOF: format.ACTF,
		benchcorpus.ShapeClaude: format.ClaudeCode,
	}
	for _, shape := range benchcorpus.Shapes() {
		t.Run(shape, func(t *testing.T) {
			a, err := benchcorpus.BuildShape(samples, filepath.Join(t.TempDir(), "a"), shape, 2<<20)
			if err != nil {
				t.Fatal(err)
			}
			b, err := benchcorpus.BuildShape(samples, filepath.Join(t.TempDir(), "b"), shape, 2<<20)
			if err != nil {
				t.Fatal(err)
			}
			if a.Bytes < 2<<20 || a.Bytes != b.Bytes || len(a.Files) != len(b.Files) {
				t.Fatalf("%d bytes in %d files, then %d in %d", a.Bytes, len(a.Files), b.Bytes, len(b.Files))
			}
			runs := map[string]bool{}
			calls, unnamed := map[string]bool{}, 0
			for i, f := range a.Files {
				if digest(t, f) != digest(t, b.Files[i]) {
					t.Fatalf("%s differs between two builds", f)
				}
				rel, _ := filepath.Rel(a.Dir, f)
				det, err := ingest.NormalizeFile(context.Background(), f, rel, ingest.Options{}, func(sl *model.Storyline) error {
					runs[rel+"\x00"+sl.Run.SessionID] = true
					for _, tc := range sl.ToolCalls {
						if tc.ToolCallID == "" {
							unnamed++
						}
						calls[tc.ToolCallID] = true
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if det.Format != formats[shape] {
					t.Fatalf("%s is %s, want %s", rel, det.Format, formats[shape])
				}
			}
			if len(runs) < a.Copies {
				t.Fatalf("%d distinct run/session ids over %d copies", len(runs), a.Copies)
			}
			// The samples of these shapes name every tool call; the copies
			// keep them named, each copy's its own.
			if shape == benchcorpus.ShapeCodex || shape == benchcorpus.ShapeChat {
				if unnamed > 0 || len(calls) < a.Copies {
					t.Fatalf("%d tool calls without an id; %d distinct ids over %d copies", unnamed, len(calls), a.Copies)
				}
			}
		})
	}
}

func digest(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
