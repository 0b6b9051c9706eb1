package storyline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

// DefaultRetention is how long GC keeps a generation after it stopped being
// current (and an abandoned temporary directory after its last change). A
// reader pins a generation for the life of a Snapshot — one CLI query, or a
// server's Snapshot until its next refresh — so the retention must exceed
// the longest Snapshot; a day covers daily-refreshed servers and long
// exports with a wide margin, and old generations cost only disk.
const DefaultRetention = 24 * time.Hour

// GC removes generations that CURRENT does not name and that stopped being
// current more than retention ago, and temporary directories of writers
// that have not changed for as long and whose writer is gone (abandoned by
// a crash or a kill). It holds the writer lock, so it never races a
// publication. It returns the removed directory names in order.
func (s *Store) GC(ctx context.Context, retention time.Duration) ([]string, error) {
	if retention < 0 {
		return nil, fmt.Errorf("storyline: gc: negative retention %s", retention)
	}
	unlock, err := lockStore(ctx, s.dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cur, err := s.current()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("storyline: gc: %w", err)
	}
	cutoff := s.now().Add(-retention)
	var removed []string
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if !e.IsDir() || !collectable(e.Name(), cur) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return removed, fmt.Errorf("storyline: gc: %w", err)
		}
		// A generation's mtime is set when it is replaced (publish), a
		// temp dir's whenever its writer adds a file.
		if info.ModTime().After(cutoff) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			// A temp dir whose lock is held belongs to a writer still at
			// work (a long import), however old; it is never removed.
			if fsx.ReclaimDir(path, cutoff) {
				removed = append(removed, e.Name())
			}
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			return removed, fmt.Errorf("storyline: gc: %w", err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

func collectable(name string, current int64) bool {
	if strings.HasPrefix(name, tmpPrefix) {
		return true
	}
	n, ok := ParseGenerationName(name)
	return ok && n != current
}
