// Package fsx holds the crash-safe file primitives every writer uses:
// write-to-temp, fsync, rename, fsync the directory. Publication of store
// state (CURRENT, manifests, configs) goes only through these functions, and
// failure points let tests inject a crash between any two steps.
package fsx

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// FailPoint names a step of an atomic write at which tests may inject a
// failure.
type FailPoint string

// The steps of WriteAtomic, in order.
const (
	FailCreate FailPoint = "create"  // temp file created
	FailWrite  FailPoint = "write"   // content written
	FailSync   FailPoint = "sync"    // content fsynced
	FailRename FailPoint = "rename"  // before the rename that publishes
	FailDir    FailPoint = "dirsync" // after rename, before the directory fsync
)

var (
	hookMu sync.RWMutex
	hook   func(path string, at FailPoint) error
)

// SetFailHook installs fn, which is called at every failure point of every
// atomic write; a non-nil result aborts the write there as a crash would.
// It returns a function restoring the previous hook. Tests only.
func SetFailHook(fn func(path string, at FailPoint) error) (restore func()) {
	hookMu.Lock()
	prev := hook
	hook = fn
	hookMu.Unlock()
	return func() {
		hookMu.Lock()
		hook = prev
		hookMu.Unlock()
	}
}

// Check runs the failure hook for a step of a multi-file publication that is
// not itself an atomic write (e.g. "a segment is written, the manifest is not").
func Check(path string, at FailPoint) error {
	hookMu.RLock()
	h := hook
	hookMu.RUnlock()
	if h == nil {
		return nil
	}
	if err := h(path, at); err != nil {
		return fmt.Errorf("%s: injected failure at %s: %w", path, at, err)
	}
	return nil
}

// WriteAtomic replaces path with the bytes produced by write: readers see the
// old content or the new one, never a mix, and after a crash at any point the
// old content is intact. The temp file is removed on failure.
func WriteAtomic(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if err = Check(path, FailCreate); err != nil {
		return err
	}
	if err = write(tmp); err != nil {
		return err
	}
	if err = Check(path, FailWrite); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = Check(path, FailSync); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = Check(path, FailRename); err != nil {
		return err
	}
	if err = os.Rename(tmpName, path); err != nil {
		return err
	}
	if err := Check(path, FailDir); err != nil {
		return err // published; only durability of the rename is in question
	}
	return SyncDir(dir)
}

// WriteFileAtomic is WriteAtomic for a byte slice.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SyncDir fsyncs a directory so that renames and creations in it survive a
// crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
