package catalog

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

// snapshotTempPrefix starts the name of every Snapshot's temp directory in
// os.TempDir().
const snapshotTempPrefix = "pchronicle-snapshot-"

// A Snapshot's temp directory holds normalized and downloaded sources, often
// large. Close removes it; a process killed with SIGKILL (or a power loss)
// cannot, so each directory is locked for its Snapshot's life
// (fsx.MkdirTempLocked) and Builds reclaim the unlocked ones of dead
// processes. The grace period protects a directory between its creation and
// its lock, and directories of older pchronicle versions, which do not lock.
const (
	snapshotTempGrace = 15 * time.Minute
	// reclaimEvery bounds how often a long-lived process (a server building
	// a Snapshot per refresh) lists os.TempDir().
	reclaimEvery = time.Hour
)

var tempDirs struct {
	mu          sync.Mutex
	lastReclaim time.Time
	// held maps each live temp directory of this process to the release of
	// its lock. Close removes the directory; the next Build releases the
	// locks of directories that are gone, so a process holds at most the
	// locks of its open Snapshots and of those closed since its last Build.
	held map[string]func()
}

// newSnapshotTempDir reclaims the temp directories of killed processes (at
// most once per reclaimEvery) and creates the locked temp directory of a new
// Snapshot whose id starts with id.
func newSnapshotTempDir(id string) (string, error) {
	tempDirs.mu.Lock()
	defer tempDirs.mu.Unlock()
	for dir, release := range tempDirs.held {
		if _, err := os.Lstat(dir); os.IsNotExist(err) {
			release()
			delete(tempDirs.held, dir)
		}
	}
	if time.Since(tempDirs.lastReclaim) >= reclaimEvery {
		tempDirs.lastReclaim = time.Now()
		fsx.ReclaimTemp("", snapshotTempPrefix, snapshotTempGrace) // best effort: what fails is tried again next time
	}
	dir, release, err := fsx.MkdirTempLocked("", snapshotTempPrefix+id+"-")
	if err != nil {
		return "", err
	}
	if tempDirs.held == nil {
		tempDirs.held = map[string]func(){}
	}
	tempDirs.held[filepath.Clean(dir)] = release
	return dir, nil
}
