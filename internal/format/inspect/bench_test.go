package inspect

import (
	"bytes"
	"context"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// BenchmarkNormalizeJSON measures the JSON form: a 16 MiB log whose
// samples repeat the two samples of the docent Claude log.
func BenchmarkNormalizeJSON(b *testing.B) {
	var doc map[string]jsonx.RawMessage
	if err := jsonx.Unmarshal(readSample(b, "docent_intercode-ctf_claude-3-5-sonnet_2-epochs.json"), &doc); err != nil {
		b.Fatal(err)
	}
	samples, _ := format.SplitArray(doc["samples"])
	var all [][]byte
	for n := 0; n < 16<<20; {
		for _, s := range samples {
			all = append(all, s)
			n += len(s)
		}
	}
	data := []byte(jsonLog(`"version": 2`, `"status": "success"`, `"eval": `+string(doc["eval"]), `"plan": `+string(doc["plan"]),
		`"samples": `+string(format.JoinArray(all))))
	bench(b, data, LayoutJSON)
}

// BenchmarkNormalizeEval measures the .eval zip of 15 gpt-4o samples
// (deflate; 3.9 MB of JSON uncompressed).
func BenchmarkNormalizeEval(b *testing.B) {
	bench(b, readSample(b, "docent_intercode-ctf_gpt-4o_subset.eval"), LayoutEval)
}

func bench(b *testing.B, data []byte, layout string) {
	src := format.Source{Path: "bench", File: "bench"}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var steps int
		err := New().Normalize(context.Background(), bytes.NewReader(data), src, layout, func(sl *model.Storyline) error {
			steps += len(sl.Steps)
			return nil
		})
		if err != nil || steps == 0 {
			b.Fatal(err, steps)
		}
	}
}
