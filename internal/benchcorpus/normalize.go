package benchcorpus

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Totals counts what a normalization produced.
type Totals struct {
	Storylines, Steps, ToolCalls int64
}

// Normalize runs every file through its adapter, one worker per thread
// (GOMAXPROCS is set to threads), and drops the rows: the normalization
// side of the benchmarks, without Parquet or a query.
func Normalize(ctx context.Context, files []string, threads int) (Totals, error) {
	runtime.GOMAXPROCS(threads)
	var storylines, steps, calls atomic.Int64
	work := make(chan string)
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for path := range work {
				if errs[i] != nil {
					continue
				}
				_, errs[i] = ingest.NormalizeFile(ctx, path, filepath.Base(path), ingest.Options{}, func(sl *model.Storyline) error {
					storylines.Add(1)
					steps.Add(int64(len(sl.Steps)))
					calls.Add(int64(len(sl.ToolCalls)))
					return nil
				})
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Totals{}, err
		}
	}
	return Totals{storylines.Load(), steps.Load(), calls.Load()}, nil
}
