package catalog

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/blake3"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/normcache"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/projection"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// Dataset is one mounted Dataset of a Snapshot with its pinned sources.
type Dataset struct {
	Mount   DatasetMount
	Root    string    // absolute local root, or the redacted URI of a remote one
	Sources []*Source // in stable _file_ order

	byFile    map[string]*Source // Sources by _file_
	providers map[string]int     // how many sources can provide each row relation
}

// index builds the lookups of a Dataset whose sources are final.
func (d *Dataset) index() {
	d.byFile = make(map[string]*Source, len(d.Sources))
	d.providers = map[string]int{}
	for _, s := range d.Sources {
		d.byFile[s.File] = s
		for _, rel := range model.RowRelations {
			if s.Provides(rel) {
				d.providers[rel]++
			}
		}
	}
}

// Source returns the source with the given _file_.
func (d *Dataset) Source(file string) (*Source, bool) {
	s, ok := d.byFile[file]
	return s, ok
}

// SourcesOf returns the sources among files (in the Dataset's order of
// files, unknown names skipped).
func (d *Dataset) SourcesOf(files []string) []*Source {
	out := make([]*Source, 0, len(files))
	for _, f := range files {
		if s, ok := d.byFile[f]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Providers counts the sources that can provide rows of relation.
func (d *Dataset) Providers(relation string) int { return d.providers[relation] }

// Snapshot pins the members and versions of every mounted Dataset. It is
// built completely (discover → pin → id) before anyone sees it, is immutable
// afterwards, and owns a temp directory for resolved sources that Close
// removes. Sources are resolved lazily, at most once each.
type Snapshot struct {
	ID       string
	Datasets []*Dataset
	Options  Options
	TempDir  string
	BuiltAt  time.Time

	batchMu          sync.Mutex        // serializes ResolveFiles batches
	progress         func(sources int) // see WithProgress; build time only
	resolves         atomic.Int64
	spills           atomic.Int64 // names SpillDir
	fallbackSessions atomic.Int64

	buckets []objstore.Bucket // remote Datasets' clients (remote.go), closed by Close

	cache    *normcache.Session // the normalization cache (normcache.go); nil: none
	cacheErr error              // why there is none although the options name one

	reuse  *Snapshot // see Reusing; build time only
	reused int
}

// FallbackSessions counts the canonical sessions normalized by events
// fallbacks so far (tests assert point lookups normalize only their hits).
func (s *Snapshot) FallbackSessions() int64 { return s.fallbackSessions.Load() }

// Resolves counts LazySource resolutions so far (tests assert that building
// a Snapshot or an engine resolves nothing).
func (s *Snapshot) Resolves() int64 { return s.resolves.Load() }

// SpillDir returns a new, unique path in the temp directory for one DuckDB
// instance's spill files. It is not created: DuckDB creates it on its first
// spill.
func (s *Snapshot) SpillDir() string {
	return filepath.Join(s.TempDir, fmt.Sprintf("spill-%d", s.spills.Add(1)))
}

// ReadableDirs lists every directory a query over the Snapshot may read,
// and nothing else: the temp directory (normalized and downloaded sources,
// events fallbacks) and the pinned generation and store directories of
// local Storyline and events stores and their selected projections. The
// query engine's sandbox allows exactly these.
func (s *Snapshot) ReadableDirs() []string {
	dirs := []string{s.TempDir}
	for _, d := range s.Datasets {
		for _, src := range d.Sources {
			if src.Err != nil {
				continue
			}
			if d, ok := src.Revision.(localStore); ok {
				dirs = append(dirs, d.storeDir())
			}
			if p := src.selected(); p != nil {
				dirs = append(dirs, p.Generation.Dir)
			}
		}
	}
	return dirs
}

// Dataset returns the Dataset with the given alias.
func (s *Snapshot) Dataset(alias string) (*Dataset, bool) {
	for _, d := range s.Datasets {
		if d.Mount.Alias == alias {
			return d, true
		}
	}
	return nil, false
}

// Close removes the Snapshot's temp directory. Resolved sources must not be
// used afterwards.
func (s *Snapshot) Close() error {
	for _, b := range s.buckets { // remote Datasets
		b.Close()
	}
	s.buckets = nil
	if s.cache != nil {
		s.cache.Close() // its statistics are advisory
		s.cache = nil
	}
	if s.TempDir == "" {
		return nil
	}
	return os.RemoveAll(s.TempDir)
}

// BuildOption configures a Build beyond the settings of Options.
type BuildOption func(*Snapshot)

// WithProgress has Build report, while it walks a local Dataset, how many
// sources it has found so far (for a terminal spinner).
func WithProgress(fn func(sources int)) BuildOption {
	return func(s *Snapshot) { s.progress = fn }
}

// Build validates mounts, discovers and pins every source, and computes the
// snapshot id. Under the strict policy any bad candidate fails the build;
// under report it is kept with status error. A missing root, a failed walk
// or an exceeded limit fails the build under both.
func Build(ctx context.Context, mounts []DatasetMount, opts Options, buildOpts ...BuildOption) (*Snapshot, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	mounts = append([]DatasetMount(nil), mounts...)
	if err := ValidateMounts(mounts); err != nil {
		return nil, err
	}
	snap := &Snapshot{Options: opts, BuiltAt: time.Now().UTC()}
	for _, o := range buildOpts {
		o(snap)
	}
	for _, m := range mounts {
		root, found, err := discoverMount(ctx, snap, m, opts) // remote.go: local walk or object listing
		if err != nil {
			snap.Close()
			return nil, fmt.Errorf("Dataset %s: %w", m.NamespacePath(), err)
		}
		found = GroupConversations(pairTrials(found))
		ds := &Dataset{Mount: m, Root: root}
		for _, d := range found {
			d.FormatHint = m.FormatHint
			if d.Err == nil && d.Revision == nil { // remote stores were pinned by their discovery
				d.Err = pin(d)
			}
			if d.Err != nil && opts.Errors == ErrorsStrict {
				snap.Close()
				return nil, fmt.Errorf("Dataset %s: source %s: %w", m.NamespacePath(), d.File, d.Err)
			}
			ds.Sources = append(ds.Sources, &Source{DiscoveredSource: *d, snap: snap, dataset: ds})
		}
		attachProjections(ds)
		ds.index()
		snap.Datasets = append(snap.Datasets, ds)
	}
	snap.ID = snapshotID(snap)
	tmp, err := newSnapshotTempDir(snap.ID[:8])
	if err != nil {
		return nil, err
	}
	snap.TempDir = tmp
	snap.cache, snap.cacheErr = openCache(opts, tmp)
	if snap.reuse != nil {
		err := snap.carryOver(snap.reuse)
		snap.reuse = nil
		if err != nil {
			snap.Close()
			return nil, err
		}
	}
	return snap, nil
}

// pin freezes a store source's version description; file sources were
// pinned by their fingerprint during discovery. Nothing here opens data.
func pin(d *DiscoveredSource) error {
	switch d.Kind {
	case KindStoryline:
		st, err := storyline.Open(d.Path)
		if err != nil {
			return err
		}
		gen, err := st.Pin()
		if err != nil {
			return err
		}
		d.Revision = StorylineRevision{Generation: gen}
		d.Size, d.ModTime = storylineSize(gen), gen.Manifest.CreatedAt
	case KindEvents:
		st, err := events.Open(d.Path)
		if err != nil {
			return err
		}
		rev, err := st.Pin()
		if err != nil {
			return err
		}
		d.Revision = EventsRevision{Revision: rev}
		var size int64
		for _, s := range rev.Segments {
			size += s.Bytes
		}
		d.Size, d.ModTime = size, rev.CreatedAt
	case KindCompact:
		return pinCompact(d)
	}
	return nil
}

func storylineSize(g *storyline.Generation) int64 {
	var n int64
	for _, t := range g.Manifest.Tables {
		n += t.Bytes
	}
	return n
}

// Projection is a Storyline store attached to a canonical events source as a
// read-acceleration candidate.
type Projection struct {
	File       string // Dataset-relative path of the projection store
	Generation *storyline.Generation
	Fresh      bool
	Selected   bool
}

// attachProjections turns Storyline stores whose lineage names an events
// source of the same Dataset into projections of that source (they are not
// sources of rows themselves), and selects at most one fresh candidate per
// events source in the stable order fresh → last_modified → generation →
// path.
func attachProjections(ds *Dataset) {
	byPath := map[string]*Source{}
	for _, s := range ds.Sources {
		if s.Kind == KindEvents && s.Err == nil {
			byPath[filepath.Clean(s.Path)] = s
		}
	}
	kept := ds.Sources[:0]
	for _, s := range ds.Sources {
		rev, ok := s.Revision.(StorylineRevision)
		if ok && s.Err == nil && rev.Generation.Manifest.Lineage != nil {
			if ev := byPath[lineagePath(s.Path, rev.Generation.Manifest.Lineage.EventsURI)]; ev != nil {
				uri, err := projection.URI(ev.Path)
				fresh := err == nil && projection.Fresh(rev.Generation, uri, ev.Revision.(EventsRevision).Revision)
				ev.Projections = append(ev.Projections, &Projection{File: s.File, Generation: rev.Generation, Fresh: fresh})
				continue
			}
		}
		kept = append(kept, s)
	}
	ds.Sources = kept
	for _, s := range ds.Sources {
		ps := s.Projections
		sort.SliceStable(ps, func(i, j int) bool {
			a, b := ps[i], ps[j]
			if a.Fresh != b.Fresh {
				return a.Fresh
			}
			if ta, tb := a.Generation.Manifest.CreatedAt, b.Generation.Manifest.CreatedAt; !ta.Equal(tb) {
				return ta.After(tb)
			}
			if a.Generation.Number != b.Generation.Number {
				return a.Generation.Number > b.Generation.Number
			}
			return a.File < b.File
		})
		if len(ps) > 0 && ps[0].Fresh {
			ps[0].Selected = true
		}
	}
}

// lineagePath resolves a lineage events_uri (absolute, or relative to the
// projection store) to a clean local path.
func lineagePath(storeDir, uri string) string {
	p, err := LocalPath(uri)
	if err != nil {
		return ""
	}
	if !filepath.IsAbs(uri) && !strings.Contains(uri, "://") {
		p = filepath.Join(storeDir, uri)
	}
	return filepath.Clean(p)
}

// snapshotID is a truncated BLAKE3 digest of what the Snapshot pins: Dataset
// names, URIs (with their endpoint) and format hints, source paths, pinned references and
// candidate errors (docs/query-model.md). It identifies a member/version view, not
// content.
func snapshotID(s *Snapshot) string {
	h := blake3.New()
	var n []byte
	field := func(v string) { // "<len>:<v>", written without fmt: once per field of every source
		n = append(strconv.AppendInt(n[:0], int64(len(v)), 10), ':')
		h.Write(n)
		h.WriteString(v)
	}
	for _, d := range s.Datasets {
		field("dataset")
		field(d.Mount.NamespacePath())
		field(d.Mount.Alias)
		field(RedactURI(d.Mount.URI))
		field(d.Mount.FormatHint)
		field(d.Mount.Config.Endpoint) // the same URI on another endpoint is another Dataset
		field(d.Mount.Filter.key())
		for _, src := range d.Sources {
			field(src.File)
			field(string(src.Kind))
			if src.Revision != nil {
				field(src.PinRef())
			}
			if src.Err != nil {
				field(src.Err.Error())
			}
			for _, p := range src.Projections {
				field(p.File)
				field(StorylineRevision{Generation: p.Generation}.Ref())
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
