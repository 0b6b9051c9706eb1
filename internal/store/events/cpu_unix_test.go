//go:build unix

package events

import (
	"syscall"
	"testing"
	"time"
)

// meter accumulates the process CPU time (user+system, all threads,
// DuckDB's included) of the timed parts of a benchmark, so that it can
// report events per CPU-second next to the wall-clock rate, which a shared
// machine makes noisy.
type meter struct {
	b   *testing.B
	cpu time.Duration
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// time runs fn with the benchmark timer and the CPU meter running.
func (m *meter) time(fn func()) {
	c := cpuTime()
	m.b.StartTimer()
	fn()
	m.b.StopTimer()
	m.cpu += cpuTime() - c
}

func (m *meter) report(n float64, unit string) {
	m.b.ReportMetric(n/m.b.Elapsed().Seconds(), unit+"/s")
	m.b.ReportMetric(n/m.cpu.Seconds(), unit+"/cpu-s")
}
