package fsx

import (
	"context"
	"fmt"
	"os"
	"time"
)

// maxLockPoll bounds the wait between two attempts to take a held lock:
// waiters poll so that a cancelled context (Ctrl-C, SIGTERM) stops the wait
// at once, which a blocking flock(2) cannot do.
const maxLockPoll = 50 * time.Millisecond

// Lock takes an exclusive lock on path (created if missing), waiting while
// another holder has it until ctx is done. The lock is an flock(2)
// (LockFileEx on Windows), so the kernel releases it when the holder dies:
// a crash never leaves a store locked. Readers never lock.
//
// A holder may remove the lock file (a writer cleaning up a store it
// created and never published). A waiter that then gets the lock of the
// removed file notices and locks whatever file is at path now, so two
// writers never both believe they hold the lock; if the directory is gone
// too, the error matches fs.ErrNotExist.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	delay := time.Millisecond
	for {
		f, err := openLockFile(path)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		for {
			ok, err := tryLockFile(f)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, fmt.Errorf("lock %s: waiting for another writer: %w", path, ctx.Err())
			case <-time.After(delay):
			}
			delay = min(2*delay, maxLockPoll)
		}
		if stillAt(f, path) {
			return func() { f.Close() }, nil // closing the descriptor releases the lock
		}
		f.Close()
	}
}

// TryLock takes the lock on path (see Lock) only if it is free. ok is false
// when another holder has it, or when path was removed while it was being
// locked.
func TryLock(path string) (unlock func(), ok bool, err error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	ok, err = tryLockFile(f)
	if err != nil || !ok || !stillAt(f, path) {
		f.Close()
		if err != nil {
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		return nil, false, nil
	}
	return func() { f.Close() }, true, nil
}

// stillAt reports whether path still names the open file f.
func stillAt(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}
