package normcache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/parallel"
)

// Want says which entries a lookup may answer with, when several hold the
// source (it was normalized alone once and with others another time).
type Want int

const (
	// Smallest takes any entry, the one with the fewest owners first: a
	// reader of one source then scans the least.
	Smallest Want = iota
	// Own takes only an entry that holds this source's rows alone.
	Own
	// Largest takes the entry with the most members first: sources
	// resolved together then share the fewest file sets.
	Largest
	// Batch is Largest for sources resolved together, except that when
	// many of them would each be served by a small entry of its own (an
	// export or Storyline pages leave one per source), those miss:
	// linking and scanning thousands of small files cost ten times what
	// normalizing them again in one batch does, and that batch is kept as
	// one entry, which the next lookup takes. A few such entries among
	// larger ones are taken, so a source that a batch happened to leave
	// alone in an entry is not normalized again and again.
	Batch
)

// A small entry of one source is one whose files are smaller than
// smallEntryBytes; Batch passes over them when at least smallEntriesMin
// keys of a lookup would take one.
const (
	smallEntryBytes = 256 << 10
	smallEntriesMin = 64
)

// Hit is a source found in the cache, its files copied into the session's
// directory. Hits from one entry share its Files, Dir and Owners.
type Hit struct {
	Member
	Entry string
	// Files maps a relation to the verified Parquet file of the entry
	// (absent when the entry has none: NoRows).
	Files map[string]string
	// Dir is the directory of the linked files.
	Dir string
	// Owners are the _file_ values of every source with rows in Files.
	Owners []string
}

// Session is one reader's use of the cache (one Snapshot's): lookups link
// verified entries into its directory, at most once each, so every hit of
// an entry names the same files; its stores keep the cache within its
// bound. Counters are written at Close.
type Session struct {
	c        *Cache
	dir      string
	maxBytes int64

	mu      sync.Mutex
	entries map[string]*sessionEntry
	pending counters
}

// counters are a session's contribution to the cache's statistics.
type counters struct {
	Hits        int64  `json:"hits"`
	Misses      int64  `json:"misses"`
	Stored      int64  `json:"stored"`
	Evicted     int64  `json:"evicted"`
	Rejected    int64  `json:"rejected"`
	Failures    int64  `json:"failures"`
	LastFailure string `json:"last_failure,omitempty"`
}

func (a *counters) add(b counters) {
	a.Hits += b.Hits
	a.Misses += b.Misses
	a.Stored += b.Stored
	a.Evicted += b.Evicted
	a.Rejected += b.Rejected
	a.Failures += b.Failures
	if b.LastFailure != "" {
		a.LastFailure = b.LastFailure
	}
}

// sessionEntry single-flights the verification of one entry.
type sessionEntry struct {
	mu     sync.Mutex
	loaded bool
	m      *manifest
	linked map[string]string // nil until linked
	bad    bool              // failed verification (removed) or unreadable
}

// Session starts a session that links hits under dir (created when the
// first hit needs it) and stores within maxBytes of entries in all; dir
// must be the caller's own, e.g. inside a Snapshot's temp directory, and
// removed by the caller.
func (c *Cache) Session(dir string, maxBytes int64) *Session {
	return &Session{c: c, dir: dir, maxBytes: maxBytes, entries: map[string]*sessionEntry{}}
}

// Cache returns the session's cache.
func (s *Session) Cache() *Cache { return s.c }

// Key is Cache.Key.
func (s *Session) Key(fields ...string) Key { return s.c.Key(fields...) }

// Lookup returns, for each key, a verified hit or nil. A corrupt entry met
// on the way is removed and the next candidate tried.
func (s *Session) Lookup(keys []Key, want Want) []*Hit { return s.LookupAny(keys, nil, want) }

// LookupAny is Lookup for items that a second key can serve too: for each,
// the hit of its key, or else of the key alt gives for it (ok false: none),
// or nil; each item counts as one hit or miss. alt is called, on every CPU,
// only for the items their keys miss: over thousands of sources that the
// cache holds, computing every second key up front was a digest each for
// nothing.
func (s *Session) LookupAny(keys []Key, alt func(i int) (Key, bool), want Want) []*Hit {
	hits := make([]*Hit, len(keys))
	items := make([]int, len(keys))
	for i := range items {
		items[i] = i
	}
	s.lookupRound(keys, items, hits, want)
	if alt != nil {
		var missed []int
		for i, h := range hits {
			if h == nil {
				missed = append(missed, i)
			}
		}
		alts, ok := make([]Key, len(missed)), make([]bool, len(missed))
		parallel.Ranges(len(missed), 256, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				alts[j], ok[j] = alt(missed[j])
			}
		})
		var second []Key
		var of []int
		for j, i := range missed {
			if ok[j] {
				second, of = append(second, alts[j]), append(of, i)
			}
		}
		s.lookupRound(second, of, hits, want)
	}
	s.mu.Lock()
	for _, h := range hits {
		if h != nil {
			s.pending.Hits++
		} else {
			s.pending.Misses++
		}
	}
	s.mu.Unlock()
	return hits
}

// lookupRound sets hits[items[j]] to the hit of keys[j], or leaves it nil.
func (s *Session) lookupRound(keys []Key, items []int, hits []*Hit, want Want) {
	if len(keys) == 0 {
		return
	}
	ids := s.c.candidates(keys)
	s.loadManifests(ids)
	cands := make([][]cand, len(keys))
	small := 0
	for j, k := range keys {
		cands[j] = s.choose(k, ids[j], want)
		if len(cands[j]) > 0 && cands[j][0].small() {
			small++
		}
	}
	passOver := want == Batch && small >= smallEntriesMin
	for j := range keys {
		if passOver {
			cands[j] = slices.DeleteFunc(cands[j], cand.small)
		}
		hits[items[j]] = s.take(cands[j])
	}
}

// candidates returns the entries the index names for each key, newest
// first.
func (c *Cache) candidates(keys []Key) [][]string {
	entries := c.refresh()
	c.idx.mu.Lock()
	defer c.idx.mu.Unlock()
	out := make([][]string, len(keys))
	for i, k := range keys {
		ids := entries[k]
		for j := len(ids) - 1; j >= 0; j-- {
			out[i] = append(out[i], ids[j])
		}
	}
	return out
}

// cand is an entry that holds a key's member.
type cand struct {
	e  *sessionEntry
	id string
	mb Member
}

// small reports whether the entry is a small one of one source.
func (c cand) small() bool { return len(c.e.m.Members) == 1 && c.e.m.bytes() < smallEntryBytes }

// choose returns the verified entries that may serve key k as want says,
// in the order to try them.
func (s *Session) choose(k Key, ids []string, want Want) []cand {
	var cs []cand
	for i, id := range ids {
		if slices.Contains(ids[:i], id) { // a key has a few candidates
			continue
		}
		e := s.entry(id)
		m := s.manifest(id, e)
		if m == nil {
			continue
		}
		mb, ok := m.member(k)
		if !ok {
			continue // a damaged index line
		}
		if want == Own && !alone(m, mb) {
			continue
		}
		cs = append(cs, cand{e, id, mb})
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i].e.m, cs[j].e.m
		if want == Largest || want == Batch {
			return len(a.Members) > len(b.Members)
		}
		return len(a.Owners) < len(b.Owners)
	})
	return cs
}

// take links the first of cs whose files verify, or returns nil.
func (s *Session) take(cs []cand) *Hit {
	for _, c := range cs {
		files, ok := s.link(c.id, c.e)
		if !ok {
			continue
		}
		h := &Hit{Member: c.mb, Entry: c.id, Files: files, Owners: c.e.m.Owners}
		if len(files) > 0 {
			h.Dir = filepath.Join(s.dir, c.id)
		}
		return h
	}
	return nil
}

// alone reports whether an entry holds the rows of mb and of no one else.
func alone(m *manifest, mb Member) bool {
	if mb.NoRows {
		return len(m.Owners) == 0
	}
	return len(m.Owners) == 1 && m.Owners[0] == mb.File
}

func (s *Session) entry(id string) *sessionEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[id]
	if e == nil {
		e = &sessionEntry{}
		s.entries[id] = e
	}
	return e
}

// loadManifests loads the manifests of the entries named in ids that this
// session has not read yet, on every CPU: a lookup over thousands of
// sources meets a few manifests of thousands of members each.
func (s *Session) loadManifests(ids [][]string) {
	var todo []string
	seen := map[string]bool{}
	for _, of := range ids {
		for _, id := range of {
			if !seen[id] {
				seen[id] = true
				todo = append(todo, id)
			}
		}
	}
	parallel.Ranges(len(todo), 1, func(lo, hi int) {
		for _, id := range todo[lo:hi] {
			s.manifest(id, s.entry(id))
		}
	})
}

// manifest loads and verifies the manifest of entry id once per session.
func (s *Session) manifest(id string, e *sessionEntry) *manifest {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.loaded {
		e.loaded = true
		m, err := s.c.readManifest(id)
		if err != nil {
			s.fail(id, e, err)
		}
		e.m = m
	}
	if e.bad {
		return nil
	}
	return e.m
}

// link links and verifies the files of entry id once per session.
func (s *Session) link(id string, e *sessionEntry) (map[string]string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bad {
		return nil, false
	}
	if e.linked == nil {
		dir := filepath.Join(s.dir, id)
		files, err := s.c.link(id, e.m, dir)
		if err != nil {
			os.RemoveAll(dir)
			s.fail(id, e, err)
			return nil, false
		}
		e.linked = files
		s.c.touch(id)
	}
	return e.linked, true
}

// fail marks an entry unusable for the session; a corrupt one is removed
// from the cache, so that it is rebuilt.
func (s *Session) fail(id string, e *sessionEntry, err error) {
	e.bad = true
	if errors.Is(err, errCorrupt) {
		s.c.remove(id) // best effort: a failed removal is found corrupt again next time
		s.mu.Lock()
		s.pending.Rejected++
		s.mu.Unlock()
	}
}

// storeWait bounds how long a store or Close waits for the cache's lock
// held by another process: the cache must never hold up a query for long.
const storeWait = 10 * time.Second

// Store keeps the normalized rows of members: files maps each relation to
// a Parquet file holding the rows of every owner (the members, and any
// source normalized with them that is not a member). The files are linked
// (or copied) into the cache, never moved. An entry larger than the cache's
// bound is not kept. A failure is returned for the caller to ignore: the
// cache is never the reason a query fails.
func (s *Session) Store(ctx context.Context, members []Member, owners []string, files map[string]string) error {
	if len(members) == 0 {
		return nil
	}
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return s.failed(err)
		}
		size += fi.Size()
	}
	if size > s.maxBytes {
		return nil
	}
	id, n, err := s.c.write(members, owners, files)
	if err != nil {
		return s.failed(err)
	}
	ctx, cancel := context.WithTimeout(ctx, storeWait)
	defer cancel()
	err = s.c.locked(ctx, func() error {
		if err := s.c.appendIndex(id, members); err != nil {
			return err
		}
		st, counted := s.c.readStats()
		if !counted { // a count made now includes the new entry
			st.Bytes += n
		}
		s.mu.Lock()
		s.pending.Stored++
		st.counters.add(s.pending)
		s.pending = counters{}
		s.mu.Unlock()
		if st.Bytes > s.maxBytes {
			s.c.evict(&st, s.maxBytes/10*9, id)
		}
		s.c.reclaimStaging()
		return s.c.writeStats(st)
	})
	if err != nil {
		s.c.remove(id) // unindexed, it would only take room until evicted
		return s.failed(err)
	}
	return nil
}

func (s *Session) failed(err error) error {
	s.mu.Lock()
	s.pending.Failures++
	s.pending.LastFailure = time.Now().UTC().Format(time.RFC3339) + " " + err.Error()
	s.mu.Unlock()
	return err
}

// Close writes the session's counters to the cache's statistics (best
// effort: statistics are advisory). Linked files are the caller's to
// remove with its directory.
func (s *Session) Close() error {
	s.mu.Lock()
	p := s.pending
	s.pending = counters{}
	s.mu.Unlock()
	if p == (counters{}) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	return s.c.locked(ctx, func() error {
		st, _ := s.c.readStats()
		st.counters.add(p)
		return s.c.writeStats(st)
	})
}
