package catalog

import (
	"context"
	"fmt"
	"github.com/pchronicle/pchronicle/internal/format"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Names that mark composite roots (spec §5.1–5.2, DECISIONS §3).
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
	return discover(ctx, root, opts, nil)
}

// discover is Discover reporting the number of sources found so far to
// progress (when set), for terminals that show long walks.
func discover(ctx context.Context, root string, opts Options, progress func(sources int)) ([]*DiscoveredSource, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("Dataset root: %w", err)
	}
	d := &discoverer{ctx: ctx, root: root, opts: opts, progress: progress}
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
	if kind, ok := compositeKind(root); ok {
		if kind == KindCompact {
			if err := d.addCompact(root, "."); err != nil {
				return nil, err
			}
			return d.out, nil
		}
		return []*DiscoveredSource{storeSource(root, ".", kind)}, nil
	}
	if err := d.walkAndPin(filepath.Clean(root)); err != nil {
		return nil, err
	}
	return d.out, nil
}

type discoverer struct {
	ctx      context.Context
	root     string
	opts     Options
	progress func(sources int)
	entries  int
	out      []*DiscoveredSource
	pins     chan pinJob // to the pinning workers (see walkAndPin)
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
	if err := d.ctx.Err(); err != nil {
		return err
	}
	f, entries, err := d.readDir(dir)
	if err != nil {
		return err
	}
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
			if kind, ok := compositeKind(path); ok {
				var err error
				if kind == KindCompact {
					err = d.addCompact(path, childRel)
				} else {
					err = d.add(storeSource(path, childRel, kind))
				}
				if err != nil {
					return err
				}
				continue
			}
			if err := d.walk(path, childRel); err != nil {
				return err
			}
		default:
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
	f, err := os.Open(dir)
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

func (d *discoverer) add(s *DiscoveredSource) error {
	if len(d.out) >= d.opts.MaxFiles {
		return &LimitError{Setting: "max_files", Limit: d.opts.MaxFiles, Root: d.root}
	}
	d.out = append(d.out, s)
	d.report()
	return nil
}

// compositeKind recognizes a directory that is a store.
func compositeKind(dir string) (SourceKind, bool) {
	if isFile(filepath.Join(dir, currentFile)) {
		return KindStoryline, true
	}
	if filepath.Base(dir) == eventsDirName && isFile(filepath.Join(dir, eventsManifest)) {
		return KindEvents, true
	}
	if isFile(filepath.Join(dir, compactManifest)) {
		return KindCompact, true
	}
	return "", false
}

func isFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
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
		if s.Kind != KindFile && s.Err == nil {
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
