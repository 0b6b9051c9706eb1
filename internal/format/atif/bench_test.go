package atif

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// bigDocument repeats the terminus-2 sample's steps (which carry token-id
// arrays) until the document is about size bytes.
func bigDocument(b *testing.B, size int) []byte {
	data, err := os.ReadFile(filepath.Join(samplesDir(b), "harbor-golden/terminus_2_context-summarization/trajectory.json"))
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		b.Fatal(err)
	}
	steps := doc["steps"].([]any)
	var all []any
	for n := 0; n*len(data) < size; n++ {
		for _, s := range steps {
			st := map[string]any{}
			for k, v := range s.(map[string]any) {
				st[k] = v
			}
			st["step_id"] = len(all) + 1
			all = append(all, st)
		}
	}
	doc["steps"] = all
	out, err := json.Marshal(doc)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func BenchmarkNormalizeDocument(b *testing.B) {
	data := bigDocument(b, 50<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{File: "big.json"}, LayoutJSON,
			func(*model.Storyline) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNormalizeLines(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(samplesDir(b), "openagents_orchestrator_streaming.atif.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{File: "s.jsonl"}, LayoutJSONL,
			func(*model.Storyline) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
}
