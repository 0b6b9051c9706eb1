package projection

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/store/events"
)

// BenchmarkProjection measures a full build of the projection of a store
// holding 2000 sessions × 60 events (120k events, 2000 Storylines), and an
// incremental update after 1% of the sessions gained events.
func BenchmarkProjection(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), events.DirName)
	es, err := events.Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	all := sessions("s", 2000)
	if _, err := es.Append(ctx, batch("a", all, 60, 0)); err != nil {
		b.Fatal(err)
	}
	b.Run("full", func(b *testing.B) {
		var evs, sls int64
		for i := 0; i < b.N; i++ {
			res, err := Rebuild(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			evs, sls = evs+res.Events, sls+res.Sessions
		}
		b.ReportMetric(float64(evs)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(sls)/b.Elapsed().Seconds(), "storylines/s")
	})
	round := 0 // across the benchmark's runs, so ids and seqs stay new
	b.Run("incremental-1pct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			round++
			if _, err := es.Append(ctx, batch(fmt.Sprint("u", round), all[:20], 3, int64(60+3*round))); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := Update(ctx, dir)
			if err != nil || res.Mode != ModeIncremental {
				b.Fatalf("%v, %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/update")
	})
}
