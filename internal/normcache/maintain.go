package normcache

import (
	"context"
	"os"
	"sort"
	"time"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// stagingGrace is how old an unlocked staging directory must be before
// another process removes it as left behind by a killed writer.
const stagingGrace = time.Hour

// statsJSON is stats.json: the counters since the last clear and the
// running total of entry bytes that decides when to evict (reconciled with
// the real total by every eviction).
type statsJSON struct {
	Since time.Time `json:"since"`
	Bytes int64     `json:"bytes"`
	counters
}

// readStats reads the statistics; the caller holds the lock. Missing or
// damaged statistics start again from now, with the real total of the
// entries (counted reports that).
func (c *Cache) readStats() (st statsJSON, counted bool) {
	data, err := os.ReadFile(c.path(statsFile))
	if err == nil && jsonx.DecodeStrict(data, &st) == nil && !st.Since.IsZero() && st.Bytes >= 0 {
		return st, false
	}
	_, total := c.listEntries()
	return statsJSON{Since: time.Now().UTC(), Bytes: total}, true
}

func (c *Cache) writeStats(st statsJSON) error {
	data, err := jsonx.Marshal(st)
	if err != nil {
		return err
	}
	return replaceFile(c.path(statsFile), data)
}

type entryInfo struct {
	id    string
	used  time.Time // the directory's mtime: written or last hit
	bytes int64
}

// listEntries returns every published entry with its size (its files'
// sizes, the manifest included) and the total.
func (c *Cache) listEntries() ([]entryInfo, int64) {
	des, err := os.ReadDir(c.path(entriesDir))
	if err != nil {
		return nil, 0
	}
	var out []entryInfo
	var total int64
	for _, de := range des {
		if !de.IsDir() || !isEntryID(de.Name()) {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		e := entryInfo{id: de.Name(), used: fi.ModTime()}
		files, _ := os.ReadDir(c.path(entriesDir, de.Name()))
		for _, f := range files {
			if fi, err := f.Info(); err == nil {
				e.bytes += fi.Size()
			}
		}
		out = append(out, e)
		total += e.bytes
	}
	return out, total
}

// evict removes the least recently used entries until at most target
// bytes remain, never keep (the entry just stored), and compacts the
// index; the caller holds the lock. A reader that linked an evicted
// entry's files keeps them (links); one that is about to finds it gone and
// normalizes instead.
func (c *Cache) evict(st *statsJSON, target int64, keep string) {
	entries, total := c.listEntries()
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	live := make(map[string]bool, len(entries))
	for _, e := range entries {
		live[e.id] = true
	}
	for _, e := range entries {
		if total <= target {
			break
		}
		if e.id == keep || c.remove(e.id) != nil {
			continue
		}
		delete(live, e.id)
		total -= e.bytes
		st.Evicted++
	}
	c.rewriteIndex(live) // best effort: a stale line leads nowhere
	st.Bytes = total
}

// Prefixes of the directories in staging/: entries being written (locked
// while they are), and entries being removed.
const (
	stagingPrefix = "entry-"
	removedPrefix = "removed-"
)

// reclaimStaging removes what killed processes left in staging/: entries
// they were writing or removing.
func (c *Cache) reclaimStaging() {
	// Best effort, tried again by the next store.
	fsx.ReclaimTemp(c.path(stagingDir), stagingPrefix, stagingGrace)
	fsx.ReclaimTemp(c.path(stagingDir), removedPrefix, stagingGrace)
}

// Stats describes a cache directory.
type Stats struct {
	Dir     string
	Entries int
	Bytes   int64 // of the entries' files, counted now
	Since   time.Time
	// Sources served from the cache, looked up but not found, entries
	// written, evicted, and removed as corrupt, and failed stores.
	Hits, Misses, Stored, Evicted, Rejected, Failures int64
	LastFailure                                       string
}

// Stats counts the entries now and reads the counters since the last
// clear.
func (c *Cache) Stats(ctx context.Context) (Stats, error) {
	var st statsJSON
	err := c.locked(ctx, func() error {
		st, _ = c.readStats()
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	entries, total := c.listEntries()
	return Stats{Dir: c.Dir(), Entries: len(entries), Bytes: total, Since: st.Since,
		Hits: st.Hits, Misses: st.Misses, Stored: st.Stored, Evicted: st.Evicted, Rejected: st.Rejected,
		Failures: st.Failures, LastFailure: st.LastFailure}, nil
}

// Clear removes every entry and the index, and starts the counters again.
// Readers that linked entries keep their links; a store under way when
// Clear runs publishes after it, which is as if it came later.
func (c *Cache) Clear(ctx context.Context) error {
	return c.locked(ctx, func() error {
		if err := os.RemoveAll(c.path(entriesDir)); err != nil {
			return err
		}
		if err := os.MkdirAll(c.path(entriesDir), 0o700); err != nil {
			return err
		}
		if err := os.Remove(c.path(indexFile)); err != nil && !os.IsNotExist(err) {
			return err
		}
		fsx.ReclaimTemp(c.path(stagingDir), stagingPrefix, 0) // unlocked ones only: a writer's own stays
		return c.writeStats(statsJSON{Since: time.Now().UTC()})
	})
}
