package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestEmittedRowsOutliveTheirFile keeps every row an emit was given, as a
// store Writer does (a shallow copy, held until Commit), while the other
// samples are normalized concurrently, then checks each row still reads
// as it did when it was emitted: an adapter that reused memory a row's
// strings point into (a pooled buffer, a shared block) would change rows
// already handed over.
func TestEmittedRowsOutliveTheirFile(t *testing.T) {
	root := testutil.SamplesDir(t)
	files := testutil.SampleFiles(t)
	type kept struct {
		file  string
		round int
		row   any
		as    string
	}
	var mu sync.Mutex
	var rows []kept
	keep := func(file string, round int, row any) {
		b, err := json.Marshal(row)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		rows = append(rows, kept{file, round, row, string(b)})
		mu.Unlock()
	}
	const rounds = 4
	var wg sync.WaitGroup
	type job struct {
		rel   string
		round int
	}
	work := make(chan job)
	for range max(4, runtime.GOMAXPROCS(0)*2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				rel := j.rel
				_, err := NormalizeFile(context.Background(), filepath.Join(root, rel), rel, Options{Parts: true}, func(sl *model.Storyline) error {
					if !sl.More {
						run := sl.Run
						keep(rel, j.round, &run)
					}
					for i := range sl.Steps {
						st := sl.Steps[i]
						keep(rel, j.round, &st)
					}
					for i := range sl.ToolCalls {
						tc := sl.ToolCalls[i]
						keep(rel, j.round, &tc)
					}
					return nil
				})
				if err != nil && !errors.Is(err, format.ErrUnrecognized) { // not a trajectory: no rows to keep
					t.Errorf("%s: %v", rel, err)
				}
			}
		}()
	}
	for round := range rounds {
		for _, rel := range files {
			work <- job{rel, round}
		}
	}
	close(work)
	wg.Wait()
	runtime.GC()
	changed := 0
	for _, k := range rows {
		b, _ := json.Marshal(k.row)
		if string(b) != k.as {
			if changed++; changed <= 5 {
				t.Errorf("%s: a %T changed after its emit returned:\nemitted %s\nnow     %s", k.file, k.row, k.as, b)
			}
		}
	}
	if changed > 0 {
		t.Errorf("%d of %d rows changed", changed, len(rows))
	}
	// Each round of a file gives the same rows, in the same order.
	byRound := map[string][]string{}
	for _, k := range rows {
		key := fmt.Sprintf("%s\x00%d", k.file, k.round)
		byRound[key] = append(byRound[key], k.as)
	}
	for _, rel := range files {
		first := byRound[rel+"\x000"]
		for round := 1; round < rounds; round++ {
			if got := byRound[fmt.Sprintf("%s\x00%d", rel, round)]; !slices.Equal(got, first) {
				t.Errorf("%s: round %d gave other rows than round 0", rel, round)
			}
		}
	}
}
