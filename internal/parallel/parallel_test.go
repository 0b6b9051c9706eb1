package parallel

import (
	"runtime"
	"sync"
	"testing"
)

func TestRangesCoverEveryIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, c := range []struct{ n, grain, ranges int }{
		{n: 0, grain: 10, ranges: 1},
		{n: 5, grain: 10, ranges: 1},
		{n: 25, grain: 10, ranges: 2},
		{n: 1000, grain: 10, ranges: 4},
		{n: 1001, grain: 0, ranges: 4},
	} {
		seen := make([]int, c.n)
		var mu sync.Mutex
		ranges := 0
		Ranges(c.n, c.grain, func(lo, hi int) {
			mu.Lock()
			ranges++
			mu.Unlock()
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		if ranges != c.ranges {
			t.Errorf("n=%d grain=%d: %d ranges, want %d", c.n, c.grain, ranges, c.ranges)
		}
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("n=%d grain=%d: index %d visited %d times", c.n, c.grain, i, k)
			}
		}
	}
}
