package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pchronicle/pchronicle/internal/normcache"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// The normalization cache (docs/storage.md, "Normalization cache") keeps
// the normalized rows of peripheral file sources between processes. It sits
// at two seams: a lookup before a source is normalized (alone: cached; in a
// batch: fromCache) and a store after (the same, and storeBatch). A hit
// links verified Parquet files into the Snapshot's temp directory, so the
// query sandbox reads them where it reads everything else. It never changes
// a result: an entry is found only by the source's exact pin, the options
// that shape its rows and this build, a local source is re-checked against
// its pin as normalizing would, and nothing is written to a source.

// racyWindow is how recent a local file's mtime or ctime may be for its
// rows to be kept. Filesystem clocks are coarse (a tick of a few ms, 2 s on
// FAT), so a file written again within the tick of its last change may keep
// its size and timestamps; its pin cannot show that, and a cache entry
// would then outlive the change. Such a file is normalized as usual and
// kept the next time, once its timestamps are settled.
var racyWindow = 2 * time.Second

// openCache starts the Snapshot's session of the cache its options name
// (nil: none). The cache being unusable is not an error of the Snapshot:
// it runs without one, and CacheError says why.
func openCache(o Options, tempDir string) (*normcache.Session, error) {
	if o.NoCache || o.CacheDir == "" {
		return nil, nil
	}
	bound, err := parseMemorySize(o.MaxCacheBytes)
	if err != nil {
		return nil, err // Validate refused it already
	}
	c, err := normcache.Open(o.CacheDir)
	if err != nil {
		return nil, err
	}
	return c.Session(filepath.Join(tempDir, "cache"), bound), nil
}

// CacheError says why the Snapshot runs without the normalization cache
// its options name (nil: it uses it, or none was asked for).
func (s *Snapshot) CacheError() error { return s.cacheErr }

// cacheKey digests what a peripheral file source's rows depend on: where it
// is, its exact pin (its companion's included), the _file_ its rows carry,
// and the options of normalization. ok is false for a source the cache
// does not keep: a remote object pinned only by key, size and mtime could
// be rewritten without its pin showing it.
func (s *Source) cacheKey(c *normcache.Session) (key normcache.Key, ok bool) {
	if !strongPin(s.Revision) || (s.Companion != nil && !strongPin(s.Companion.Revision)) {
		return key, false
	}
	var where []string
	switch s.Revision.(type) {
	case *FileRevision:
		where = []string{"local", s.Path}
	case RemoteFileRevision:
		cfg := s.dataset.Mount.Config // the same bucket name on another endpoint or account is other data
		where = []string{"remote", s.Path, cfg.Endpoint, cfg.Account, cfg.AccessKey}
	}
	o := s.snap.Options
	return c.Key(append(where, s.PinRef(), s.File,
		strconv.FormatInt(o.MaxDetectionBytes, 10), strconv.FormatInt(o.MaxFileBytes, 10), o.Unrecognized)...), true
}

// strongPin reports whether a file's pin names one exact content: a local
// fingerprint, or an object version, generation or ETag.
func strongPin(r Revision) bool {
	switch rev := r.(type) {
	case *FileRevision:
		return true
	case RemoteFileRevision:
		switch rev.Object.RevisionKind() {
		case objstore.KindS3Version, objstore.KindGCSGeneration, objstore.KindETag:
			return true
		}
	}
	return false
}

// unchanged re-checks a local source and its local companion against their
// pins by a stat, as normalizing does on the open file: a hit is served
// only while the file is as pinned, and a changed one fails as it would
// without the cache. A stat reads nothing of the file (no atime).
func (s *Source) unchanged() bool {
	for _, d := range []*DiscoveredSource{&s.DiscoveredSource, s.Companion} {
		if d == nil {
			continue
		}
		if rev, ok := d.Revision.(*FileRevision); ok {
			fi, err := os.Stat(d.Path)
			if err != nil || rev.Check(d.File, fi) != nil {
				return false
			}
		}
	}
	return true
}

// settled reports whether the local pins were older than racyWindow when
// normalizing started.
func (s *Source) settled(start time.Time) bool {
	limit := start.Add(-racyWindow)
	for _, d := range []*DiscoveredSource{&s.DiscoveredSource, s.Companion} {
		if d == nil {
			continue
		}
		if rev, ok := d.Revision.(*FileRevision); ok {
			if !rev.ModTime.Before(limit) || (!rev.ChangeTime.IsZero() && !rev.ChangeTime.Before(limit)) {
				return false
			}
		}
	}
	return true
}

// cached resolves a peripheral file source alone through the cache: a
// verified entry for its exact pin when there is one (want says which),
// else normalize, whose result is kept for the next process.
func (s *Source) cached(ctx context.Context, want normcache.Want, normalize func() (*Resolved, error)) (*Resolved, error) {
	c := s.snap.cache
	if c == nil {
		return normalize()
	}
	key, ok := s.cacheKey(c)
	if !ok {
		return normalize()
	}
	if s.unchanged() {
		if h := c.Lookup([]normcache.Key{key}, want)[0]; h != nil {
			return resolvedHit(h), nil
		}
	}
	start := time.Now()
	res, err := normalize()
	if err != nil || !s.settled(start) {
		return res, err
	}
	if files, ok := cacheFiles(res); ok {
		var owners []string
		if len(files) > 0 {
			owners = []string{s.File}
		}
		m := normcache.Member{Key: key, File: s.File, Format: res.Format, Warnings: res.Warnings, NoRows: len(files) == 0}
		c.Store(ctx, []normcache.Member{m}, owners, files) // a failure is the cache's (counted in its stats), never the query's
	}
	return res, nil
}

// cacheFiles returns the files of a resolution by relation when the cache
// can keep it: whole (every Storyline relation, one file each), or without
// rows (a file that is not a trajectory).
func cacheFiles(res *Resolved) (map[string]string, bool) {
	if len(res.Files) == 0 {
		return map[string]string{}, true
	}
	if len(res.Files) != len(storyline.Tables) {
		return nil, false
	}
	files := make(map[string]string, len(storyline.Tables))
	for _, rel := range storyline.Tables {
		if len(res.Files[rel]) != 1 {
			return nil, false
		}
		files[rel] = res.Files[rel][0]
	}
	return files, true
}

// resolvedHit is the resolution a cache hit stands for.
func resolvedHit(h *normcache.Hit) *Resolved {
	if h.NoRows {
		return &Resolved{Files: map[string][]string{}, Warnings: h.Warnings}
	}
	files := make(map[string][]string, len(h.Files))
	for rel, f := range h.Files {
		files[rel] = []string{f}
	}
	res := &Resolved{Files: files, Dirs: []string{h.Dir}, Format: h.Format, Warnings: h.Warnings}
	if len(h.Owners) != 1 || h.Owners[0] != h.File {
		res.Owners = h.Owners // shared with other sources: readers filter by _file_
	}
	return res
}

// fromCache serves the sources of a batch that have a verified entry
// (Largest: sources resolved together share the fewest file sets), setting
// their cells, whose locks the caller holds. It returns the others with
// their keys (ok false: not cacheable).
func (snap *Snapshot) fromCache(srcs []*Source) (rest []*Source, keys []normcache.Key, ok []bool) {
	c := snap.cache
	if c == nil {
		return srcs, make([]normcache.Key, len(srcs)), make([]bool, len(srcs))
	}
	all := make([]normcache.Key, len(srcs))
	cacheable := make([]bool, len(srcs))
	var look []normcache.Key
	var at []int
	for i, s := range srcs {
		all[i], cacheable[i] = s.cacheKey(c)
		if cacheable[i] && s.unchanged() {
			look = append(look, all[i])
			at = append(at, i)
		}
	}
	hit := make([]bool, len(srcs))
	for j, h := range c.Lookup(look, normcache.Largest) {
		if h == nil {
			continue
		}
		s := srcs[at[j]]
		s.storylines.done, s.storylines.res = true, resolvedHit(h)
		s.format = h.Format
		hit[at[j]] = true
	}
	for i, s := range srcs {
		if !hit[i] {
			rest, keys, ok = append(rest, s), append(keys, all[i]), append(ok, cacheable[i])
		}
	}
	return rest, keys, ok
}

// storeBatch keeps the shared files of a batch for its sources that
// normalized (or were found not to be trajectories) with settled pins. A
// source that failed may have rows in the files too: owners are every
// source of the batch, and readers of the entry filter by _file_.
func (snap *Snapshot) storeBatch(ctx context.Context, srcs []*Source, keys []normcache.Key, cacheable []bool, errs []error, formats []string, files map[string][]string, owners []string, start time.Time) {
	c := snap.cache
	if c == nil {
		return
	}
	var members []normcache.Member
	for i, s := range srcs {
		if !cacheable[i] || !s.settled(start) {
			continue
		}
		var nt *notTrajectory
		switch {
		case errs[i] == nil:
			members = append(members, normcache.Member{Key: keys[i], File: s.File, Format: formats[i]})
		case errors.As(errs[i], &nt):
			members = append(members, normcache.Member{Key: keys[i], File: s.File, Warnings: nt.resolved().Warnings, NoRows: true})
		}
	}
	kept, ok := cacheFiles(&Resolved{Files: files})
	if len(members) == 0 || !ok {
		return
	}
	c.Store(ctx, members, owners, kept) // a failure is the cache's (counted in its stats), never the query's
}
