// Package parallel spreads independent work over a slice's indexes on
// every CPU.
package parallel

import (
	"runtime"
	"sync"
)

// Ranges runs fn over [0, n) split into one contiguous range per CPU, each
// at least grain long (fewer ranges when n is small; fn runs on the caller's
// goroutine when one is enough). It returns when every range is done.
func Ranges(n, grain int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/max(1, grain)))
	if workers == 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}
