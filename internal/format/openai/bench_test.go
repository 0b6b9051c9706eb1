package openai

import (
	"bytes"
	"context"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// BenchmarkNormalizeChatJSONL measures chat-jsonl throughput (the layout
// of the DuckDB read_json comparison) over a corpus of the cookbook sample
// and the tool-calling conversations of droneJSONL.
func BenchmarkNormalizeChatJSONL(b *testing.B) {
	unit := append(sample(b, "openai-cookbook_toy_chat_fine_tuning.jsonl"), droneJSONL...)
	var corpus bytes.Buffer
	for corpus.Len() < 16<<20 {
		corpus.Write(unit)
	}
	data := corpus.Bytes()
	src := format.Source{Path: "bench.jsonl", File: "bench.jsonl"}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var steps int64
		err := New().Normalize(context.Background(), bytes.NewReader(data), src, layoutChatJSONL, func(sl *model.Storyline) error {
			steps += int64(len(sl.Steps))
			return nil
		})
		if err != nil || steps == 0 {
			b.Fatal(err, steps)
		}
	}
}

// BenchmarkNormalizeCodex measures a Codex rollout (the layout of the
// DuckDB read_json comparison's codex shape), one file per iteration.
func BenchmarkNormalizeCodex(b *testing.B) {
	data := sample(b, "codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl")
	src := format.Source{Path: "rollout.jsonl", File: "rollout.jsonl"}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var steps int
		err := New().Normalize(context.Background(), bytes.NewReader(data), src, layoutCodex, func(sl *model.Storyline) error {
			steps += len(sl.Steps)
			return nil
		})
		if err != nil || steps == 0 {
			b.Fatal(err, steps)
		}
	}
}
