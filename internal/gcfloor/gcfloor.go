// Package gcfloor keeps the Go collector from running over and over while
// the heap is small.
//
// With the default GOGC=100 the collector starts a cycle whenever the heap
// has grown by as much as was live after the last one, and waits for no
// less than 4 MB. Normalizing trajectories keeps little alive (a file's rows
// on their way to a scratch file) while it allocates a lot: normalizing
// 100 MB of Codex rollouts on two threads ran 128 cycles, whose mark
// workers, assists and write barriers took a third of its CPU. The floor
// lets the heap grow by at least the floor's bytes between cycles: after
// every cycle GOGC is set to what makes the next goal live + max(live,
// floor), so a large heap is collected as GOGC=100 would, and a small one
// costs at most the floor in memory. See docs/performance.md ("The
// collector's floor").
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the heap growth allowed between two cycles when little is
// live. Larger floors still saved time in a query's process, but each
// 16 MB more of them bought a few percent for as much resident memory
// (docs/performance.md).
const DefaultFloor = 16 << 20

// initialGoal is the runtime's minimum heap goal at GOGC=100, which is also
// its first, before any cycle has measured what is live.
const initialGoal = 4 << 20

// Start applies the floor until the returned stop is called, which restores
// the GOGC that was in effect. It does nothing, and reports false, when GOGC
// is set in the environment: a user who chose a GOGC gets it. GOMEMLIMIT
// still applies either way, and makes the collector run earlier near it.
func Start(floor uint64) (stop func(), started bool) {
	if _, set := os.LookupEnv("GOGC"); set || floor == 0 {
		return func() {}, false
	}
	t := &tuner{floor: floor, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/globals:bytes"}, {Name: "/gc/scan/stack:bytes"},
	}}
	t.previous = debug.SetGCPercent(percent(floor, initialGoal))
	t.arm()
	return t.stop, true
}

type tuner struct {
	floor    uint64
	samples  []metrics.Sample
	mu       sync.Mutex
	stopped  bool
	previous int
}

// sentinel is allocated once per cycle and dropped at once; its cleanup,
// which runs after the cycle that found it unreachable, retunes and arms the
// next one. It is larger than the tiny allocator's 16 bytes, whose blocks
// may keep an object alive past its cycle.
type sentinel struct{ _ [32]byte }

func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) { t.afterCycle() }, t)
}

func (t *tuner) afterCycle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	metrics.Read(t.samples)
	var base uint64
	for _, s := range t.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			base += s.Value.Uint64()
		}
	}
	debug.SetGCPercent(percent(t.floor, base))
	t.arm()
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.previous)
	}
}

// percent is the GOGC that lets a heap whose collector scans base bytes
// (live heap, globals and stacks: what the runtime multiplies by GOGC/100)
// grow by max(base, floor) before the next cycle. The runtime's minimum
// goal (4 MB at GOGC=100) scales with GOGC too, and is what sets the goal
// while base is smaller than it.
func percent(floor, base uint64) int {
	base = max(base, initialGoal)
	if base >= floor {
		return 100
	}
	return int((floor*100 + base - 1) / base)
}
