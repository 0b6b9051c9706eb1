package storyline

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// TestConcurrentReadersAndWriter runs readers that pin and read through
// DuckDB in a loop while a writer publishes many generations and GC runs:
// every read must match the counts of the manifest it pinned, and readers
// must observe generations moving forward.
func TestConcurrentReadersAndWriter(t *testing.T) {
	s := newStore(t)
	db := openDuck(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const generations = 25
	var reads, distinct atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(-1)
			for ctx.Err() == nil {
				g, err := s.Pin()
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if g.Number < last {
					errs <- fmt.Errorf("reader %d: generation went back from %d to %d", r, last, g.Number)
					return
				}
				if g.Number != last {
					distinct.Add(1)
				}
				last = g.Number
				got, err := duckCounts(ctx, db, g)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("reader %d: generation %d: %w", r, g.Number, err)
					return
				}
				if want := manifestCounts(g); !maps.Equal(got, want) {
					errs <- fmt.Errorf("reader %d: generation %d: read %v, manifest %v", r, g.Number, got, want)
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := range generations {
		var sls []*model.Storyline
		for j := range 1 + i%7 {
			sls = append(sls, genStoryline(fmt.Sprintf("f%d.json", i), fmt.Sprintf("s%d-%d", i, j), 1+(i*j)%11))
		}
		writeGeneration(t, s, sls...)
		if _, err := s.GC(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d consistent reads, %d generation changes observed", reads.Load(), distinct.Load())
	if reads.Load() < generations {
		t.Fatalf("only %d reads; the readers did not overlap the writer", reads.Load())
	}
}
