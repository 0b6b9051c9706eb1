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
	"github.com/pchronicle/pchronicle/internal/parallel"
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
	bound, err := ParseMemorySize(o.MaxCacheBytes)
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

// cacheKey digests what a peripheral file source's rows of a part depend
// on: where it is, its exact pin (its companion's included), the _file_ its
// rows carry, the options of normalization and the part (each relation,
// whole or lean, is an entry of its own, as a query normalizes only the
// relations it reads). ok is false for a source the cache does not keep: a remote
// object pinned only by key, size and mtime could be rewritten without its
// pin showing it.
func (s *Source) cacheKey(c *normcache.Session, part string) (key normcache.Key, ok bool) {
	if !strongPin(s.Revision) || (s.Companion != nil && !strongPin(s.Companion.Revision)) {
		return key, false
	}
	var where []string
	switch s.Revision.(type) {
	case *FileRevision:
		where = []string{"local", s.Path}
	case *ConversationRevision:
		where = []string{"local-conversation", s.Path}
	case RemoteFileRevision:
		cfg := s.dataset.Mount.Config // the same bucket name on another endpoint or account is other data
		where = []string{"remote", s.Path, cfg.Endpoint, cfg.Account, cfg.AccessKey}
	}
	o := s.snap.Options
	return c.Key(append(where, s.PinRef(), s.File,
		strconv.FormatInt(o.MaxDetectionBytes, 10), strconv.FormatInt(o.MaxFileBytes, 10), o.Unrecognized, part)...), true
}

// cacheKeys are the keys of parts (ok false: the source is not cacheable).
func (s *Source) cacheKeys(c *normcache.Session, parts []string) (keys []normcache.Key, ok bool) {
	keys = make([]normcache.Key, len(parts))
	for i, p := range parts {
		if keys[i], ok = s.cacheKey(c, p); !ok {
			return nil, false
		}
	}
	return keys, true
}

// lookupParts looks up the entries of the parts of several sources at
// once (keys are theirs, in order: the index is read once) and returns one
// hit or nil per key. A lean part the cache has no entry of is served by
// its relation's whole entry when there is one, which has every column.
func lookupParts(c *normcache.Session, want normcache.Want, srcs []*Source, parts [][]string, keys []normcache.Key) []*normcache.Hit {
	type item struct {
		src  *Source
		part string
	}
	items := make([]item, 0, len(keys))
	for n, s := range srcs {
		for _, p := range parts[n] {
			items = append(items, item{s, p})
		}
	}
	return c.LookupAny(keys, func(i int) (normcache.Key, bool) {
		if rel, lean := storyline.PartRelation(items[i].part); lean {
			return items[i].src.cacheKey(c, rel)
		}
		return normcache.Key{}, false
	}, want)
}

// strongPin reports whether a file's pin names one exact content: a local
// fingerprint, or an object version, generation or ETag.
func strongPin(r Revision) bool {
	switch rev := r.(type) {
	case *FileRevision, *ConversationRevision:
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
	var dirs pinDirs
	defer dirs.close()
	return dirs.unchanged(s)
}

// pinDirs re-checks the pins of many local sources, in the order they were
// discovered, by an lstat relative to their directory, which is opened once
// for the sources that follow in it: a stat of the whole path walked it
// again for every file, half the time of the check. The first file of a
// directory is checked by its path, and the directory opened only when a
// second follows: a tree of one file per directory would otherwise pay an
// open and a close besides each stat.
type pinDirs struct {
	path string   // the directory of the last file checked
	dir  *os.File // path, opened for its second file; nil before
}

func (p *pinDirs) unchanged(s *Source) bool { return s.allLocalPins(p.check) }

// allLocalPins reports whether ok holds for the source and its companion
// that are pinned as local files.
func (s *Source) allLocalPins(ok func(d *DiscoveredSource, rev *FileRevision) bool) bool {
	if conv, is := s.Revision.(*ConversationRevision); is { // its members are its pins
		for _, m := range append([]conversationFile{conv.State}, conv.Events...) {
			if !ok(&DiscoveredSource{File: m.File, Path: m.Path}, m.Rev) {
				return false
			}
		}
		return true
	}
	for _, d := range []*DiscoveredSource{&s.DiscoveredSource, s.Companion} {
		if d == nil {
			continue
		}
		if rev, local := d.Revision.(*FileRevision); local && !ok(d, rev) {
			return false
		}
	}
	return true
}

func (p *pinDirs) check(d *DiscoveredSource, rev *FileRevision) bool {
	if d.File == "." { // a Dataset root that names a file, a symlink perhaps, was pinned by a stat
		fi, err := os.Stat(d.Path)
		return err == nil && rev.Check(d.File, fi) == nil
	}
	dir, name := filepath.Split(d.Path)
	switch {
	case dir != p.path:
		p.close()
		p.path = dir
	case p.dir == nil:
		f, err := openDir(dir)
		if err != nil {
			return false
		}
		p.dir = f
	}
	seen, err := lstatAt(p.dir, p.path, name)
	return err == nil && rev.check(d.File, seen) == nil
}

func (p *pinDirs) close() {
	if p.dir != nil {
		p.dir.Close()
		p.dir = nil
	}
}

// settled reports whether the local pins were older than racyWindow when
// normalizing started.
func (s *Source) settled(start time.Time) bool {
	limit := start.Add(-racyWindow)
	return s.allLocalPins(func(_ *DiscoveredSource, rev *FileRevision) bool {
		return rev.ModTime.Before(limit) && (rev.ChangeTime.IsZero() || rev.ChangeTime.Before(limit))
	})
}

// cached resolves relations of a peripheral file source alone through the
// cache: a verified entry for its exact pin when there is one (want says
// which), else normalize those the cache lacks, whose results are kept for
// the next process. It returns one result per relation of rels.
func (s *Source) cached(ctx context.Context, want normcache.Want, rels []string, normalize func(rels []string) (*Resolved, error)) ([]*Resolved, error) {
	c := s.snap.cache
	var keys []normcache.Key
	ok := false
	if c != nil {
		keys, ok = s.cacheKeys(c, rels)
	}
	if !ok {
		res, err := normalize(rels)
		if err != nil {
			return nil, err
		}
		return res.byPart(rels), nil
	}
	out := make([]*Resolved, len(rels))
	var missing []string
	var missingKeys []normcache.Key
	var at []int
	hits := make([]*normcache.Hit, len(rels))
	if s.unchanged() {
		hits = lookupParts(c, want, []*Source{s}, [][]string{rels}, keys)
	}
	for i, h := range hits {
		if h != nil {
			out[i] = resolvedHit(h)
			if !h.NoRows {
				s.setFormat(h.Format)
			}
			continue
		}
		missing, missingKeys, at = append(missing, rels[i]), append(missingKeys, keys[i]), append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	start := time.Now()
	res, err := normalize(missing)
	if err != nil {
		return nil, err
	}
	for j, r := range res.byPart(missing) {
		out[at[j]] = r
	}
	if !s.settled(start) {
		return out, nil
	}
	for j, rel := range missing {
		file, rows, ok := cacheFile(res, rel)
		if !ok || res.uncacheable {
			continue
		}
		m := normcache.Member{Key: missingKeys[j], File: s.File, Format: res.Format, Warnings: res.Warnings, NoRows: !rows}
		var owners []string
		files := map[string]string{}
		if rows {
			relation, _ := storyline.PartRelation(rel)
			owners, files[relation] = []string{s.File}, file
		}
		c.Store(ctx, []normcache.Member{m}, owners, files) // a failure is the cache's (counted in its stats), never the query's
	}
	return out, nil
}

// cacheFile returns the file of a part's relation in a resolution when the
// cache can keep it: one file, or none at all (rows false: a file that is
// not a trajectory).
func cacheFile(res *Resolved, part string) (file string, rows bool, ok bool) {
	if len(res.Files) == 0 {
		return "", false, true
	}
	relation, _ := storyline.PartRelation(part)
	if files := res.Files[relation]; len(files) == 1 {
		return files[0], true, true
	}
	return "", false, false
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

// cacheClaim is the relations of one source a batch must resolve: fromCache
// sets the cells it can serve and leaves the rest in missing, with their
// keys (cacheable false: not to be kept).
type cacheClaim struct {
	s         *Source
	missing   []string
	keys      []normcache.Key
	cacheable bool
}

// fromCache serves relations of sources claimed by a batch from verified
// entries (Batch: sources resolved together share the fewest file sets),
// setting their cells, whose locks the caller holds. It looks them all up
// at once: the index is read once, not once per source.
func (snap *Snapshot) fromCache(claims []cacheClaim) {
	c := snap.cache
	if c == nil {
		return
	}
	// A key is a digest and the pin's re-check a stat: over thousands of
	// sources, they run on every CPU.
	unchanged := make([]bool, len(claims))
	parallel.Ranges(len(claims), 256, func(lo, hi int) {
		var dirs pinDirs
		defer dirs.close()
		for i := lo; i < hi; i++ {
			cl := &claims[i]
			cl.keys, cl.cacheable = cl.s.cacheKeys(c, cl.missing)
			unchanged[i] = cl.cacheable && dirs.unchanged(cl.s)
		}
	})
	var keys []normcache.Key
	var of []int // claim of each key
	var srcs []*Source
	var parts [][]string
	for i := range claims {
		cl := &claims[i]
		if unchanged[i] {
			keys = append(keys, cl.keys...)
			srcs, parts = append(srcs, cl.s), append(parts, cl.missing)
			for range cl.keys {
				of = append(of, i)
			}
		}
	}
	if len(keys) == 0 {
		return
	}
	hits := lookupParts(c, normcache.Batch, srcs, parts, keys)
	for i := 0; i < len(keys); {
		cl := &claims[of[i]]
		rels, relKeys := cl.missing, cl.keys
		cl.missing, cl.keys = nil, nil
		for j, rel := range rels {
			h := hits[i+j]
			if h == nil {
				cl.missing, cl.keys = append(cl.missing, rel), append(cl.keys, relKeys[j])
				continue
			}
			cell := &cl.s.relations[partIndex(rel)]
			cell.done, cell.res = true, resolvedHit(h)
			if !h.NoRows {
				cl.s.setFormat(h.Format)
			}
		}
		i += len(rels)
	}
}

// cacheMember is a source of a normalized batch, as storeBatch keeps it.
type cacheMember struct {
	s         *Source
	keys      []normcache.Key // by relation of the batch
	cacheable bool
	err       error
	format    string
	warnings  []string
}

// storeBatch keeps the shared files of a batch, one entry per relation, for
// its sources that normalized (or were found not to be trajectories) with
// settled pins. A source that failed may have rows in the files too:
// owners are every source of the batch, and readers of an entry filter by
// _file_.
func (snap *Snapshot) storeBatch(ctx context.Context, batch []cacheMember, rels []string, files map[string][]string, owners []string, start time.Time) {
	c := snap.cache
	if c == nil {
		return
	}
	for j, rel := range rels {
		var members []normcache.Member
		for _, b := range batch {
			if !b.cacheable || !b.s.settled(start) {
				continue
			}
			var nt *notTrajectory
			switch {
			case b.err == nil:
				members = append(members, normcache.Member{Key: b.keys[j], File: b.s.File, Format: b.format, Warnings: b.warnings})
			case errors.As(b.err, &nt) && !nt.skipped:
				members = append(members, normcache.Member{Key: b.keys[j], File: b.s.File, Warnings: nt.resolved().Warnings, NoRows: true})
			}
		}
		file, rows, ok := cacheFile(&Resolved{Files: files}, rel)
		if len(members) == 0 || !ok {
			continue
		}
		kept := map[string]string{}
		if rows {
			relation, _ := storyline.PartRelation(rel)
			kept[relation] = file
		}
		c.Store(ctx, members, owners, kept) // a failure is the cache's (counted in its stats), never the query's
	}
}
