package catalog

import (
	"runtime"
	"testing"
)

func TestBatchWorkers(t *testing.T) {
	sum := func(sizes []int64) (n int64) {
		for _, s := range sizes {
			n += s
		}
		return n
	}
	cpus := runtime.GOMAXPROCS(0)
	many := func(n int, size int64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	for _, c := range []struct {
		name  string
		most  int
		sizes []int64
		want  int
	}{
		{"small files: up to the option, CPUs aside", cpus + 4, many(100, 16<<10), cpus + 4},
		{"large files: one per CPU", cpus + 4, many(100, 4<<20), cpus},
		{"large files, the option lower still", 1, many(100, 4<<20), 1},
		{"fewer files than workers", cpus + 4, many(1, 16<<10), 1},
		{"a mean of 1 MiB is large", cpus + 4, []int64{2 << 20, 0}, min(2, cpus)},
		{"a mean just under 1 MiB is small", cpus + 4, []int64{2<<20 - 2, 0}, 2},
	} {
		if got := batchWorkers(c.most, len(c.sizes), sum(c.sizes)); got != c.want {
			t.Errorf("%s: %d workers, want %d", c.name, got, c.want)
		}
	}
}
