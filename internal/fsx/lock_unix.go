//go:build unix

package fsx

import (
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive lock on path (created if missing), blocking until
// it is free. It is an flock(2), so the kernel releases it when the holder
// dies: a crash never leaves a store locked. Readers never lock.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}
