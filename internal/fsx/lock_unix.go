//go:build unix

package fsx

import (
	"errors"
	"os"
	"syscall"
)

// openLockFile opens (creating) a lock file without following a symbolic
// link, so a lock in a shared directory cannot be pointed at another file.
func openLockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
}

// tryLockFile takes an exclusive flock(2) on f without blocking.
func tryLockFile(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}

// ownedByUs reports whether fi belongs to the current user: temp
// directories of other users are never reclaimed.
func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
