package catalog

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/hugeheap"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// Names that mark composite roots (docs/storage.md).
const (
	currentFile     = "CURRENT"
	eventsDirName   = "events.lance"
	eventsManifest  = "_manifest.json"
	compactManifest = "chronicle.manifest"
)

// LimitError is returned when a walk exceeds max_entries or max_files. It
// fails the build under every error policy: an incomplete listing must never
// pass for a complete one.
type LimitError struct {
	Setting string
	Limit   int
	Root    string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: more than %s=%d; raise the limit or mount a narrower path", e.Root, e.Setting, e.Limit)
}

// Discover lists the sources under a local root in stable path order. A
// file root is one source "."; a composite root is one source "."; otherwise
// the tree is walked without following symbolic links, composite roots are
// recognized and not descended into, and supported peripheral files are
// collected. The walk fails as soon as max_entries+1 entries or max_files+1
// sources are seen.
func Discover(ctx context.Context, root string, opts Options) ([]*DiscoveredSource, error) {
	return discover(ctx, root, opts, nil, PathFilter{})
}

// discover is Discover reporting the number of sources found so far to
// progress (when set), for terminals that show long walks.
func discover(ctx context.Context, root string, opts Options, progress func(sources int), filter PathFilter) ([]*DiscoveredSource, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("Dataset root: %w", err)
	}
	d := &discoverer{ctx: ctx, root: root, opts: opts, progress: progress, filter: filter}
	if fi.Mode()&os.ModeSymlink != 0 {
		// The root itself is named by the user: resolve it once.
		if fi, err = os.Stat(root); err != nil {
			return nil, fmt.Errorf("Dataset root: %w", err)
		}
	}
	if !fi.IsDir() {
		// A file named explicitly is a source whatever its extension (e.g. a
		// SWE-agent .traj): detection decides whether it is readable.
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("Dataset root %s is not a directory or a regular file", root)
		}
		return []*DiscoveredSource{fileSource(root, ".", fi)}, nil
	}
	if kind, ok := compositeKind(root, statRegular(root)); ok {
		if err := d.addStore(root, ".", kind); err != nil {
			return nil, err
		}
		return d.out, nil
	}
	if err := d.walkAndPin(filepath.Clean(root)); err != nil {
		return nil, err
	}
	markNameCollisions(d.out, d.escaped)
	return d.out, nil
}

type discoverer struct {
	ctx      context.Context
	root     string
	opts     Options
	filter   PathFilter // the mount's --include/--exclude
	progress func(sources int)
	entries  int
	out      []*DiscoveredSource
	escaped  []*DiscoveredSource // sources whose _file_ had to be escaped (fileRel)
	pins     chan pinJob         // to the pinning workers (see walkAndPin)
}

func (d *discoverer) report() {
	if d.progress != nil {
		d.progress(len(d.out))
	}
}

// walkAndPin lists the tree in stable order on one goroutine, adding each file
// source in place, and hands the files of every directory to the pinning
// workers: pinning needs one lstat per file, which costs several times the
// walk itself, so the two overlap and the lstats run on every CPU.
func (d *discoverer) walkAndPin(root string) error {
	d.pins = make(chan pinJob, 64)
	var wg sync.WaitGroup
	for range max(2, runtime.NumCPU()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range d.pins {
				job.pin()
			}
		}()
	}
	err := d.walk(root, "")
	close(d.pins)
	wg.Wait()
	return err
}

func (d *discoverer) walk(dir, rel string) error {
	f, entries, err := d.readDir(dir)
	if err != nil {
		return err
	}
	return d.walkListed(f, dir, rel, entries)
}

// walkListed walks the directory dir, open as f and listed as entries.
// A subdirectory is listed before it is walked, and its listing tells
// whether it is a store, without a stat per marker file.
func (d *discoverer) walkListed(f *os.File, dir, rel string, entries []dirEntry) error {
	files := &pinDir{f: f, path: dir}
	defer files.send(d.pins)
	var slab []DiscoveredSource // one allocation for the directory's file sources
	for _, e := range entries {
		name, typ := e.name, e.typ
		if typ&os.ModeSymlink != 0 || !(typ.IsDir() || typ.IsRegular() && isPeripheral(name)) {
			// Symlinks are not followed: that avoids cycles, out-of-tree reads
			// and duplicate identities.
			continue
		}
		path := joinName(dir, name)
		childRel := relName(path, rel, name)
		switch {
		case typ.IsDir():
			if err := d.walkDir(path, childRel); err != nil {
				return err
			}
		default:
			if !d.filter.Keep(childRel) {
				continue
			}
			if slab == nil {
				slab = make([]DiscoveredSource, 0, len(entries))
			}
			slab = append(slab, DiscoveredSource{File: childRel, Path: path, Kind: KindFile})
			src := &slab[len(slab)-1]
			if err := d.add(src); err != nil {
				return err
			}
			files.add(src, name)
		}
	}
	return nil
}

// walkDir adds the subdirectory path when it is a store, else walks it
// unless the filter skips it.
func (d *discoverer) walkDir(path, rel string) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	var f *os.File
	var entries []dirEntry
	var err error
	skip := d.filter.SkipDir(rel)
	if !skip {
		f, entries, err = d.readDir(path)
	}
	if skip || err != nil {
		// An excluded directory is not listed, and a store needs no
		// listing (one that may only be searched is still a store): their
		// marker files say so one by one, and the filter judges what a
		// store adds, as for any other.
		if kind, ok := compositeKind(path, statRegular(path)); ok {
			return d.addStore(path, rel, kind)
		}
		return err
	}
	if kind, ok := compositeKind(path, listedRegular(entries)); ok {
		f.Close()
		return d.addStore(path, rel, kind)
	}
	return d.walkListed(f, path, rel, entries)
}

// addStore adds the store at path.
func (d *discoverer) addStore(path, rel string, kind SourceKind) error {
	if kind == KindCompact {
		return d.addCompact(path, rel)
	}
	return d.add(storeSource(path, rel, kind))
}

// pinDir is an open directory whose file sources are pinned by lstat
// relative to it (no path lookup per file), in chunks spread over the
// workers; the last chunk to finish closes it.
type pinDir struct {
	f       *os.File
	path    string
	srcs    []*DiscoveredSource
	names   []string
	pending atomic.Int32
}

type pinJob struct {
	dir        *pinDir
	start, end int
}

// pinChunk is the number of files one pinning job stats.
const pinChunk = 256

func (p *pinDir) add(src *DiscoveredSource, name string) {
	p.srcs = append(p.srcs, src)
	p.names = append(p.names, name)
}

// send queues the directory's files for pinning (or closes it when it has
// none).
func (p *pinDir) send(pins chan<- pinJob) {
	if len(p.srcs) == 0 {
		p.f.Close()
		return
	}
	p.pending.Store(int32((len(p.srcs) + pinChunk - 1) / pinChunk))
	for start := 0; start < len(p.srcs); start += pinChunk {
		pins <- pinJob{p, start, min(start+pinChunk, len(p.srcs))}
	}
}

func (j pinJob) pin() {
	p := j.dir
	revs := make([]FileRevision, j.end-j.start) // one allocation per chunk
	for i := j.start; i < j.end; i++ {
		src, rev := p.srcs[i], &revs[i-j.start]
		var err error
		if *rev, err = lstatAt(p.f, p.path, p.names[i]); err != nil {
			src.Err = err
			continue
		}
		src.Size, src.ModTime, src.Revision = rev.Size, rev.ModTime, rev
	}
	if p.pending.Add(-1) == 0 {
		p.f.Close()
	}
}

// dirEntry is a directory entry as the walk needs it: a name and a type.
type dirEntry struct {
	name string
	typ  os.FileMode // os.ModeDir, os.ModeSymlink, 0 (regular) or other type bits
}

// readDir opens and reads one directory in batches, so that an enormous
// directory fails at max_entries+1 without first being listed whole, then
// sorts it. The directory stays open for pinning its files.
func (d *discoverer) readDir(dir string) (*os.File, []dirEntry, error) {
	f, err := openDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var all []dirEntry
	err = readEntries(f, func(batch []dirEntry) error {
		d.entries += len(batch)
		if d.entries > d.opts.MaxEntries {
			return &LimitError{Setting: "max_entries", Limit: d.opts.MaxEntries, Root: d.root}
		}
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	slices.SortFunc(all, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	return f, all, nil
}

// sourceHeapBytes is about what a source costs the heap of the process that
// holds it: its Source, pin and paths, and for a query its cache keys and
// claims (a warm query over 50,000 one-conversation files kept 2 KB of live
// heap per source). Many small sources are heap allocated before a byte of
// them is read, so each found counts toward the huge-page reservation as
// input does (docs/performance.md, "Many files, many rows").
const sourceHeapBytes = 1 << 10

// add appends a source, escaping a _file_ that is not valid UTF-8, and pins
// a store right away (see pinLocalStore); files are pinned by the walk's
// workers.
func (d *discoverer) add(s *DiscoveredSource) error {
	if !d.filter.Keep(s.File) {
		return nil
	}
	if len(d.out) >= d.opts.MaxFiles {
		return &LimitError{Setting: "max_files", Limit: d.opts.MaxFiles, Root: d.root}
	}
	if !utf8.ValidString(s.File) {
		s.File = fileRel(s.File)
		d.escaped = append(d.escaped, s)
	}
	if s.Kind.IsStore() && s.Err == nil {
		s.Err = pinLocalStore(s)
	}
	d.out = append(d.out, s)
	hugeheap.Expect(sourceHeapBytes)
	d.report()
	return nil
}

// pinLocalStore pins a local store (pin) and then checks that everything the
// pin will read — CURRENT, the generation directory, manifests, table
// files, segments, parts — is a real directory or regular file below the
// store: a generation directory or segment that is a symbolic link could
// point anywhere on the machine, and the query engine would read it.
// DuckDB reads store files by path, so a store whose path is not valid
// UTF-8 cannot be read at all.
func pinLocalStore(s *DiscoveredSource) error {
	if !utf8.ValidString(s.Path) {
		return fmt.Errorf("the path of this %s store is not valid UTF-8, which the query engine cannot read; rename it", s.Kind)
	}
	if err := pin(s); err != nil {
		return err
	}
	var paths []string
	switch rev := s.Revision.(type) {
	case StorylineRevision:
		g := rev.Generation
		paths = append(paths, filepath.Join(s.Path, currentFile), filepath.Join(g.Dir, storyline.ManifestFile))
		for _, rel := range storyline.Tables {
			paths = append(paths, g.Path(rel))
		}
	case EventsRevision:
		paths = append(rev.Revision.Paths(), filepath.Join(s.Path, eventsManifest))
	case *CompactRevision:
		paths = append(paths, filepath.Join(s.Path, compactManifest))
		for _, p := range rev.Parts {
			paths = append(paths, filepath.Join(s.Path, p.Name))
		}
	}
	return noSymlinksBelow(s.Path, paths)
}

// noSymlinksBelow checks every component of each path below dir with
// lstat: directories must be directories and the last component a regular
// file, never a symbolic link (nor a device or pipe). Components shared by
// several paths are checked once.
func noSymlinksBelow(dir string, paths []string) error {
	dir = filepath.Clean(dir)
	checked := map[string]bool{}
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s is not inside the store %s", p, dir)
		}
		parts := strings.Split(rel, string(filepath.Separator))
		cur := dir
		for i, part := range parts {
			cur = joinName(cur, part)
			if checked[cur] {
				continue
			}
			fi, err := os.Lstat(cur)
			if err != nil {
				return err
			}
			switch last := i == len(parts)-1; {
			case fi.Mode()&os.ModeSymlink != 0:
				return fmt.Errorf("%s is a symbolic link: links under a Dataset root are never followed", cur)
			case last && !fi.Mode().IsRegular(), !last && !fi.IsDir():
				return fmt.Errorf("%s is not a regular file or directory", cur)
			}
			checked[cur] = true
		}
	}
	return nil
}

// fileRel is the _file_ of a relative path that is not valid UTF-8 (DuckDB
// strings, and so _file_, must be): each component that is not valid UTF-8
// has every byte outside a valid sequence written as \xNN and every
// backslash as \\; valid components are unchanged (docs/query-model.md,
// Identity). The result is valid UTF-8, so fileRel leaves it unchanged.
func fileRel(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if utf8.ValidString(p) {
			continue
		}
		var b strings.Builder
		for len(p) > 0 {
			r, n := utf8.DecodeRuneInString(p)
			switch {
			case r == utf8.RuneError && n == 1:
				fmt.Fprintf(&b, `\x%02x`, p[0])
			case r == '\\':
				b.WriteString(`\\`)
			default:
				b.WriteString(p[:n])
			}
			p = p[n:]
		}
		parts[i] = b.String()
	}
	return strings.Join(parts, "/")
}

// markNameCollisions keeps _file_ an identity: an escaped _file_ (fileRel)
// that equals another source's _file_ marks the escaped source as an error,
// so that two sources never share one. Only escaped names can collide.
func markNameCollisions(all, escaped []*DiscoveredSource) {
	if len(escaped) == 0 {
		return
	}
	isEscaped := make(map[*DiscoveredSource]bool, len(escaped))
	for _, s := range escaped {
		isEscaped[s] = true
	}
	plain := make(map[string]bool, len(all))
	for _, s := range all {
		if !isEscaped[s] {
			plain[s.File] = true
		}
	}
	for _, s := range escaped {
		if plain[s.File] && s.Err == nil {
			s.Err = fmt.Errorf("its name is not valid UTF-8, and escaped (%s) it equals another source's _file_; rename one of them", s.File)
		}
	}
}

// compositeKind recognizes a directory that is a store by its marker
// files, which isRegular says are regular files of it.
func compositeKind(dir string, isRegular func(name string) bool) (SourceKind, bool) {
	if isRegular(currentFile) {
		return KindStoryline, true
	}
	if filepath.Base(dir) == eventsDirName && isRegular(eventsManifest) {
		return KindEvents, true
	}
	if isRegular(compactManifest) {
		return KindCompact, true
	}
	return "", false
}

// statRegular says whether a name is a regular file of dir by an lstat.
func statRegular(dir string) func(name string) bool {
	return func(name string) bool {
		fi, err := os.Lstat(filepath.Join(dir, name))
		return err == nil && fi.Mode().IsRegular()
	}
}

// listedRegular says whether a name is a regular file of a sorted listing.
func listedRegular(entries []dirEntry) func(name string) bool {
	return func(name string) bool {
		i, found := slices.BinarySearchFunc(entries, name, func(e dirEntry, name string) int { return strings.Compare(e.name, name) })
		return found && entries[i].typ.IsRegular()
	}
}

// isPeripheral reports whether a file found by a walk is a candidate
// source (format.CandidateName). It looks at the name only: discovery
// reads no file.
func isPeripheral(name string) bool { return format.CandidateName(name) }

// relName is the Dataset-relative name of the entry name at path, whose
// directory's relative name is rel. With '/' separators it is the tail of
// path, sharing its bytes (one string less per file on large trees).
func relName(path, rel, name string) string {
	switch {
	case rel == "":
		return name
	case filepath.Separator == '/':
		return path[len(path)-len(rel)-1-len(name):]
	}
	return rel + "/" + name
}

// joinName is filepath.Join for a clean directory and an entry name read
// from it, without Join's cleaning pass (it showed in walks of large trees).
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

// PeripheralFiles lists the trajectory files under root for commands that
// read files directly (inspect, import): Discover without limits.
//
// An error means the listing itself failed (a missing root, a directory that
// cannot be read, a path too long to open): the member set is unknown, so
// callers fail under every error policy; report mode never turns an
// incomplete listing into an empty one. A problem with one member is on that
// file's Err instead, for the caller's error policy: a file that could not
// be pinned, or a store found under root (its rows are not a file to
// normalize; query it instead).
func PeripheralFiles(ctx context.Context, root string) ([]*DiscoveredSource, error) {
	opts := DefaultOptions()
	opts.MaxFiles, opts.MaxEntries = math.MaxInt, math.MaxInt
	srcs, err := Discover(ctx, root, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range srcs {
		if s.Kind != KindFile {
			s.Err = fmt.Errorf("%s is a %s store, not a trajectory file; query it with `pchronicle query`", s.Path, s.Kind)
		}
	}
	return srcs, nil
}

func fileSource(path, rel string, fi os.FileInfo) *DiscoveredSource {
	rev := fileRevision(fi)
	return &DiscoveredSource{File: rel, Path: path, Kind: KindFile, Size: rev.Size, ModTime: rev.ModTime, Revision: &rev}
}

func storeSource(path, rel string, kind SourceKind) *DiscoveredSource {
	return &DiscoveredSource{File: rel, Path: path, Kind: kind}
}
