package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/cli"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// columnarBenchSQL is a 1,000,000-row result of the samples' runs: their
// identity, timestamps, counts, cost and names, each run repeated with
// values that differ per row (repeated values would flatter Parquet).
const columnarBenchSQL = `SELECT r._file_, r.session_id || '-' || n.i AS session_id, r.started_at + to_seconds(n.i) AS started_at,
	r.ended_at + to_seconds(2 * n.i) AS ended_at, r.step_count + n.i %% 97 AS step_count, r.tool_call_count, r.prompt_tokens + n.i AS prompt_tokens,
	r.cost_usd * (1 + n.i / 1000) AS cost_usd, r.agent_name, r.agent_model_name, r.status, n.i
FROM runs r, (SELECT unnest(range(%d)) AS i) n LIMIT 1000000`

// BenchmarkColumnarVsJSONL times `pchronicle query --format jsonl` against
// --format arrow and --format parquet on a 1,000,000-row result (docs/
// performance.md, "Arrow and Parquet results"), counts their bytes, and
// reports the ratios of JSONL's time and bytes to each.
//
//	go test ./internal/cli -run '^$' -bench ColumnarVsJSONL -benchtime 1x
func BenchmarkColumnarVsJSONL(b *testing.B) {
	samples := testutil.SamplesDir(b)
	runs := countRuns(b, samples)
	sql := fmt.Sprintf(columnarBenchSQL, (1_000_000+runs-1)/runs)
	formats := []string{"jsonl", "arrow", "parquet"}
	took := map[string]time.Duration{}
	size := map[string]int64{}
	for range b.N {
		for _, f := range formats {
			var out countingWriter
			var errb strings.Builder
			start := time.Now()
			code := cli.Execute(context.Background(), []string{"query", samples, sql, "--format", f, "--max-output-rows", "0"}, strings.NewReader(""), &out, &errb)
			took[f] += time.Since(start)
			if code != 0 {
				b.Fatalf("%s: %s", f, errb.String())
			}
			size[f] = out.n
		}
	}
	for _, f := range formats {
		b.ReportMetric(took[f].Seconds()/float64(b.N), f+"-s")
		b.ReportMetric(float64(size[f])/1e6, f+"-MB")
	}
	for _, f := range formats[1:] {
		b.ReportMetric(took["jsonl"].Seconds()/took[f].Seconds(), "jsonl/"+f+"-time")
		b.ReportMetric(float64(size["jsonl"])/float64(size[f]), "jsonl/"+f+"-bytes")
		b.Logf("1,000,000 rows: jsonl %.2fs %.1f MB; %s %.2fs %.1f MB: JSONL takes %.1fx the time and %.1fx the bytes",
			took["jsonl"].Seconds()/float64(b.N), float64(size["jsonl"])/1e6, f, took[f].Seconds()/float64(b.N), float64(size[f])/1e6,
			took["jsonl"].Seconds()/took[f].Seconds(), float64(size["jsonl"])/float64(size[f]))
	}
}

func countRuns(b *testing.B, samples string) int {
	var out, errb strings.Builder
	if code := cli.Execute(context.Background(), []string{"query", samples, "SELECT count(*) AS n FROM runs", "--format", "csv"}, strings.NewReader(""), &out, &errb); code != 0 {
		b.Fatal(errb.String())
	}
	var n int
	fmt.Sscanf(strings.TrimPrefix(out.String(), "n\n"), "%d", &n)
	if n == 0 {
		b.Fatalf("no runs in the samples: %q", out.String())
	}
	return n
}

// countingWriter counts what a command writes and keeps none of it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
