package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TempLockFile is the lock file inside a directory made by MkdirTempLocked:
// held for as long as the directory is in use.
const TempLockFile = ".lock"

// MkdirTempLocked creates a new directory in dir (os.TempDir() when dir is
// empty) whose name starts with prefix, and locks its TempLockFile until
// release is called: the lock tells ReclaimTemp in other processes that
// the directory is in use. Call release after removing the directory; a
// process that dies releases it with its descriptors.
func MkdirTempLocked(dir, prefix string) (path string, release func(), err error) {
	// A reclaimer with a zero grace may remove a directory between its
	// creation and its lock; then try again with a new one.
	for range 10 {
		path, err := os.MkdirTemp(dir, prefix)
		if err != nil {
			return "", nil, err
		}
		unlock, ok, err := TryLock(filepath.Join(path, TempLockFile))
		if ok {
			return path, unlock, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(path)
			return "", nil, err
		}
	}
	return "", nil, fmt.Errorf("%s: could not create a locked temp directory %s*", dir, prefix)
}

// ReclaimTemp removes the directories in dir (os.TempDir() when empty)
// whose name starts with prefix, that nobody changed for longer than grace
// and whose TempLockFile no process holds: what a killed process (SIGKILL,
// power loss) left behind. Directories of other users and anything that is
// not a directory are left alone. It returns the removed paths; failures to
// remove one are skipped (the next reclaim tries again).
func ReclaimTemp(dir, prefix string, grace time.Duration) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-grace)
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if fi, err := os.Lstat(path); err != nil || !ownedByUs(fi) {
			continue
		}
		if ReclaimDir(path, cutoff) {
			removed = append(removed, path)
		}
	}
	return removed, nil
}

// ReclaimDir removes the directory at path if it was last modified before
// cutoff and its TempLockFile is free, holding that lock while it removes
// the directory so that nobody can start using it meanwhile. It reports
// whether the directory was removed.
func ReclaimDir(path string, cutoff time.Time) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || fi.ModTime().After(cutoff) {
		return false
	}
	unlock, ok, err := TryLock(filepath.Join(path, TempLockFile))
	if err != nil || !ok {
		return false
	}
	defer unlock()
	return os.RemoveAll(path) == nil
}

// MkdirAllNew is os.MkdirAll that also returns the topmost directory it
// created ("" when dir existed), so that a writer that ends up publishing
// nothing can remove exactly what it made (RemoveCreated).
func MkdirAllNew(dir string, perm os.FileMode) (top string, err error) {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		top = d
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return top, os.MkdirAll(dir, perm)
}

// RemoveCreated removes dir and then its parents up to top (returned by
// MkdirAllNew), each only while it is empty: what another writer or the
// user put there meanwhile stays.
func RemoveCreated(dir, top string) {
	if top == "" {
		return
	}
	top = filepath.Clean(top)
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if os.Remove(d) != nil || d == top || filepath.Dir(d) == d {
			return
		}
	}
}
