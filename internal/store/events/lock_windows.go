//go:build windows

package events

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lock takes the store's writer lock, blocking until it is free. It is a
// LockFileEx on _lock, released by the system when a writer process dies.
func (s *Store) lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
