package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
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
		return []*DiscoveredSource{storeSource(root, ".", kind)}, nil
	}
	if err := d.walk(root, ""); err != nil {
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
}

func (d *discoverer) report() {
	if d.progress != nil {
		d.progress(len(d.out))
	}
}

func (d *discoverer) walk(dir, rel string) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	entries, err := d.readDir(dir)
	if err != nil {
		return err
	}
	var files []*DiscoveredSource
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		switch {
		case e.Type()&os.ModeSymlink != 0:
			// Not followed: avoids cycles, out-of-tree reads and duplicate identities.
		case e.IsDir():
			if err := d.flush(files); err != nil {
				return err
			}
			files = files[:0]
			if kind, ok := compositeKind(path); ok {
				if err := d.add(storeSource(path, childRel, kind)); err != nil {
					return err
				}
				continue
			}
			if err := d.walk(path, childRel); err != nil {
				return err
			}
		case e.Type().IsRegular() && isPeripheral(name):
			files = append(files, &DiscoveredSource{File: childRel, Path: path, Kind: KindFile})
		}
	}
	return d.flush(files)
}

// statWorkers bounds concurrent lstat calls: pinning needs one per file,
// and on large trees those syscalls, not the walk, dominate.
const statWorkers = 16

// flush pins a run of sibling files (concurrently) and adds them in order.
func (d *discoverer) flush(files []*DiscoveredSource) error {
	if len(files) == 0 {
		return nil
	}
	if len(d.out)+len(files) > d.opts.MaxFiles {
		return &LimitError{Setting: "max_files", Limit: d.opts.MaxFiles, Root: d.root}
	}
	var wg sync.WaitGroup
	next := make(chan *DiscoveredSource)
	for w := 0; w < min(statWorkers, len(files)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for src := range next {
				fi, err := os.Lstat(src.Path)
				if err != nil {
					src.Err = err
					continue
				}
				*src = *fileSource(src.Path, src.File, fi)
			}
		}()
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	d.out = append(d.out, files...)
	d.report()
	return nil
}

// readDir reads one directory in batches, so that an enormous directory
// fails at max_entries+1 without first being listed whole, then sorts it.
func (d *discoverer) readDir(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []os.DirEntry
	for {
		batch, err := f.ReadDir(1024)
		d.entries += len(batch)
		if d.entries > d.opts.MaxEntries {
			return nil, &LimitError{Setting: "max_entries", Limit: d.opts.MaxEntries, Root: d.root}
		}
		all = append(all, batch...)
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name() < all[j].Name() })
	return all, nil
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
// source: a .json, .jsonl or .ndjson file.
func isPeripheral(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".ndjson")
}

// PeripheralFiles lists the trajectory files under root for commands that
// read files directly (inspect, import): Discover without limits, where a
// store found under root is an error naming it, since its rows are not
// files to normalize.
func PeripheralFiles(ctx context.Context, root string) ([]*DiscoveredSource, error) {
	opts := DefaultOptions()
	opts.MaxFiles, opts.MaxEntries = math.MaxInt, math.MaxInt
	srcs, err := Discover(ctx, root, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range srcs {
		if s.Kind != KindFile {
			return nil, fmt.Errorf("%s is a %s store, not a trajectory file; query it with `pchronicle query`", s.Path, s.Kind)
		}
		if s.Err != nil {
			return nil, s.Err
		}
	}
	return srcs, nil
}

func fileSource(path, rel string, fi os.FileInfo) *DiscoveredSource {
	rev := fileRevision(fi)
	return &DiscoveredSource{File: rel, Path: path, Kind: KindFile, Size: fi.Size(), ModTime: fi.ModTime(), Revision: rev}
}

func storeSource(path, rel string, kind SourceKind) *DiscoveredSource {
	return &DiscoveredSource{File: rel, Path: path, Kind: kind}
}
