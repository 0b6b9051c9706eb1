//go:build unix

package query

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the test process has used: unlike wall time, it
// does not grow when other processes load the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
