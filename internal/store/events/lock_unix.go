//go:build unix

package events

import (
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the store's writer lock, blocking until it is free. It is an
// flock(2) on _lock, so the kernel releases it when a writer process dies:
// a crash never leaves the store locked.
func (s *Store) lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}
