package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/normcache"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// Source is the spec's LazySource: a pinned source description plus resolve
// cells that run at most once per Snapshot (single-flight) and cache their
// result or error for the Snapshot's life. Resolution only ever uses the
// pinned version.
//
// The Storyline relations have a cell each, whole and lean (LeanPart). A
// store's are resolved together (its files exist already), but a peripheral
// file is normalized for the relations a query reads and writes only those,
// lean when it reads none of their free text: a count over tool_calls
// never encodes a message text or a tool result into Parquet. A later query
// that reads another relation, or free text of a lean one, normalizes the
// file once more, for that only.
type Source struct {
	DiscoveredSource
	Projections []*Projection

	snap    *Snapshot
	dataset *Dataset

	relations relCells // runs, steps, tool_calls, whole and lean
	events    cell     // events

	formatMu sync.Mutex
	format   string

	// rare holds what only some sources or some queries need, allocated on
	// first use: it was half of every Source, and a Snapshot holds one per
	// file of its Datasets.
	rare atomic.Pointer[sourceRare]
}

// sourceRare is the part of a Source that few of them use.
type sourceRare struct {
	solo    relCells // the relations, normalized alone when their files are a shared batch (ResolveSolo)
	compact compactLoad

	// Directed fallbacks of an events source, by session set (see
	// ResolveSessions).
	directedMu sync.Mutex
	directed   map[string]*cell
}

// more returns the source's rare part, allocating it on first use.
func (s *Source) more() *sourceRare {
	if r := s.rare.Load(); r != nil {
		return r
	}
	s.rare.CompareAndSwap(nil, new(sourceRare))
	return s.rare.Load()
}

// Dataset returns the Dataset the source belongs to.
func (s *Source) Dataset() *Dataset { return s.dataset }

// Resolved is a source's data for some relations, as local Parquet files.
type Resolved struct {
	// Files maps a relation to the Parquet files holding its rows.
	Files map[string][]string
	// Dirs are the directories those files live in (for the sandbox's
	// allowed_directories).
	Dirs []string
	// Format is the detected format of a file source.
	Format string
	// Owners, when set, lists the _file_ values of every source whose rows
	// the (shared) files hold: a reader of only some of them must filter by
	// _file_ (see Snapshot.ResolveFiles).
	Owners []string
	// Warnings say what the source's resolution skipped (an unrecognized
	// file); queries that read the source report them.
	Warnings []string
	// SchemaVersion is the row schema the files were written at (0: this
	// build's); a column added later is absent from them and reads as NULL
	// (model.Column.MissingIn).
	SchemaVersion int
	// uncacheable: the normalization cache must not keep this resolution
	// (an unreadable file skipped by --skip-unreadable).
	uncacheable bool
}

// Lacks reports whether the files predate column c (written at an older
// schema version), so readers must select NULL for it.
func (r *Resolved) Lacks(c model.Column) bool {
	return r != nil && r.SchemaVersion != 0 && c.MissingIn(r.SchemaVersion)
}

// Transient reports whether err is a failure of the machine rather than of
// the source: a full disk or quota, an I/O error, too many open files, no
// memory. A resolution that fails so is not kept for the Snapshot's life:
// the next query that needs it tries again (once per query), where a
// parse error of pinned bytes stays, since trying again cannot change it.
func Transient(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EAGAIN} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// keep reports whether a resolution's outcome is kept for the Snapshot's
// life: not a cancelled query's, nor a transient failure.
func keep(ctx context.Context, err error) bool {
	return err == nil || ctx.Err() == nil && !Transient(err)
}

type cell struct {
	mu   sync.Mutex
	done bool
	res  *Resolved
	err  error
}

// do runs fn once. A context cancellation or a transient failure is not
// cached: the next caller retries, so one cancelled query or a disk full
// for a moment does not poison a long-lived Snapshot.
func (c *cell) do(ctx context.Context, fn func() (*Resolved, error)) (*Resolved, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.res, c.err
	}
	res, err := fn()
	if !keep(ctx, err) {
		return nil, err
	}
	c.done, c.res, c.err = true, res, err
	return res, err
}

// relCells are the cells of the Storyline relations' parts, in
// storyline.Parts order: each relation whole, then lean (its free-text
// columns NULL, for queries that read none of them).
type relCells [6]cell

func partIndex(part string) int { return slices.Index(storyline.Parts, part) }

// LeanPart names the lean part of a Storyline relation, which Resolve and
// the others accept in place of the relation: its files have the
// relation's schema with the free-text columns NULL (model.Column.FreeText),
// so a query that reads none of them gets its rows without message texts
// and tool results ever being written.
func LeanPart(relation string) string { return storyline.Lean(relation) }

// lock locks the cells of parts and, for a lean part, its relation's whole
// cell too (each once, always in Parts order, so that concurrent
// resolutions of overlapping sets cannot deadlock), and returns their
// indexes and the parts not resolved yet.
func (cs *relCells) lock(parts []string) (held []int, missing []string) {
	for i, p := range storyline.Parts {
		if slices.ContainsFunc(parts, func(q string) bool { rel, _ := storyline.PartRelation(q); return q == p || rel == p }) {
			held = append(held, i)
		}
	}
	for _, i := range held {
		cs[i].mu.Lock()
	}
	for _, p := range storyline.Parts {
		if slices.Contains(parts, p) && cs.answer(p) == nil {
			missing = append(missing, p)
		}
	}
	return held, missing
}

func (cs *relCells) unlock(held []int) {
	for _, i := range held {
		cs[i].mu.Unlock()
	}
}

// answer is the resolved cell that answers part (nil: none yet): a lean
// part is answered by its relation's whole files as well as by its own,
// so what one query normalized whole is never normalized again lean. The
// caller holds the locks.
func (cs *relCells) answer(part string) *cell {
	if rel, lean := storyline.PartRelation(part); lean && cs[partIndex(rel)].done {
		return &cs[partIndex(rel)]
	}
	if c := &cs[partIndex(part)]; c.done {
		return c
	}
	return nil
}

// do is cell.do for several parts at once: fn runs once for those not
// resolved yet and returns one result per missing part (each cell holds
// only its relation's files), which is cached.
func (cs *relCells) do(ctx context.Context, parts []string, fn func(missing []string) ([]*Resolved, error)) ([]*Resolved, error) {
	held, missing := cs.lock(parts)
	defer cs.unlock(held)
	if len(missing) > 0 {
		res, err := fn(missing)
		if !keep(ctx, err) {
			return nil, err
		}
		for i, p := range missing {
			c := &cs[partIndex(p)]
			c.done, c.err = true, err
			if err == nil {
				c.res = res[i]
			}
		}
	}
	out := make([]*Resolved, len(parts))
	for i, p := range parts {
		c := cs.answer(p)
		if c.err != nil {
			return nil, c.err
		}
		out[i] = c.res
	}
	return out, nil
}

// only returns r restricted to the files of one part's relation.
func (r *Resolved) only(part string) *Resolved {
	rel, _ := storyline.PartRelation(part)
	out := *r
	out.Files = map[string][]string{}
	if files, ok := r.Files[rel]; ok {
		out.Files[rel] = files
	}
	return &out
}

// byPart splits r into one result per part of parts.
func (r *Resolved) byPart(parts []string) []*Resolved {
	out := make([]*Resolved, len(parts))
	for i, p := range parts {
		out[i] = r.only(p)
	}
	return out
}

// Provides reports whether the source can hold rows of relation (docs/sql.md,
// pruning step 1: events come only from canonical stores; Storyline relations from
// everything).
func (s *Source) Provides(relation string) bool {
	if s.Err != nil {
		return false
	}
	switch relation {
	case model.RelEvents:
		return s.Kind == KindEvents || s.Kind == KindCompact
	case model.RelRuns, model.RelSteps, model.RelToolCalls:
		return true
	}
	return false
}

// Format returns the detected format of a resolved file source ("" before).
func (s *Source) Format() string {
	s.formatMu.Lock()
	defer s.formatMu.Unlock()
	return s.format
}

func (s *Source) setFormat(f string) {
	s.formatMu.Lock()
	defer s.formatMu.Unlock()
	s.format = f
}

// failed wraps an error of resolving s with its _file_. A pinned local file
// that is gone is a changed source, as a rewritten one is, named by its
// _file_ alone (the OS error names the server's path).
func (s *Source) failed(err error) error {
	var pe *fs.PathError
	if rev, ok := s.Revision.(*FileRevision); ok && errors.As(err, &pe) && pe.Path == s.Path && errors.Is(err, fs.ErrNotExist) {
		return &ErrSourceChanged{File: s.File, Pinned: *rev}
	}
	return fmt.Errorf("source %s: %w", s.File, err)
}

// Resolve makes the source's rows of relation available as Parquet files.
func (s *Source) Resolve(ctx context.Context, relation string) (*Resolved, error) {
	if s.Err != nil {
		return nil, fmt.Errorf("source %s: %w", s.File, s.Err)
	}
	if relation == model.RelEvents {
		return s.events.do(ctx, func() (*Resolved, error) {
			s.snap.resolves.Add(1)
			rev, err := s.pinnedEvents(ctx, nil) // remote.go: local revision or downloaded remote segments
			if err != nil {
				return nil, s.failed(err)
			}
			return &Resolved{Files: map[string][]string{model.RelEvents: rev.Paths()}, Dirs: []string{rev.Dir}}, nil
		})
	}
	res, err := s.ResolveRelations(ctx, relation)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// ResolveRelations resolves several Storyline relations (or their lean
// parts, LeanPart) of the source at once (in the order given): a file
// source is normalized once for those of them not resolved yet. A store
// resolves all three together.
func (s *Source) ResolveRelations(ctx context.Context, rels ...string) ([]*Resolved, error) {
	if s.Err != nil {
		return nil, fmt.Errorf("source %s: %w", s.File, s.Err)
	}
	want := rels
	if s.Kind != KindFile {
		want = storyline.Tables
	}
	all, err := s.relations.do(ctx, want, func(missing []string) ([]*Resolved, error) {
		s.snap.resolves.Add(1)
		return s.cached(ctx, normcache.Smallest, missing, func(rels []string) (*Resolved, error) {
			res, err := s.Revision.storylines(ctx, s, rels)
			if res != nil && s.Kind == KindFile {
				s.setFormat(res.Format)
			}
			return res, err
		})
	})
	if err != nil {
		return nil, s.failed(err)
	}
	if s.Kind != KindFile { // a store's files have every column: a lean part is its relation
		out := make([]*Resolved, len(rels))
		for i, p := range rels {
			rel, _ := storyline.PartRelation(p)
			out[i] = all[slices.Index(storyline.Tables, rel)]
		}
		return out, nil
	}
	return all, nil
}

// ResolveSolo is ResolveRelations for a reader of only a few sources of a
// large shared batch (Snapshot.ResolveFiles): scanning the batch for them
// would read every other source's rows too, so the relations of a file
// source resolved in a batch are normalized once more on their own (once
// per Snapshot, like every resolution) and those small results returned.
// Anything else resolves as ResolveRelations does.
func (s *Source) ResolveSolo(ctx context.Context, rels ...string) ([]*Resolved, error) {
	res, err := s.ResolveRelations(ctx, rels...)
	if err != nil {
		return nil, err
	}
	rev, ok := s.Revision.(*FileRevision)
	var shared []string
	for i, r := range res {
		if r.Owners != nil {
			shared = append(shared, rels[i])
		}
	}
	if !ok || len(shared) == 0 {
		return res, nil
	}
	solo, err := s.more().solo.do(ctx, shared, func(missing []string) ([]*Resolved, error) {
		s.snap.resolves.Add(1)
		return s.cached(ctx, normcache.Own, missing, func(m []string) (*Resolved, error) { return s.normalizeFile(ctx, *rev, m) })
	})
	if err != nil {
		return nil, s.failed(err)
	}
	for i, rel := range shared {
		res[slices.Index(rels, rel)] = solo[i]
	}
	return res, nil
}

// ResolveSessions is Resolve for a query that provably reads only the given
// session ids. For a canonical events source without a fresh projection it
// normalizes just those sessions (segments whose session range excludes
// them are not opened); everything else resolves as usual.
func (s *Source) ResolveSessions(ctx context.Context, relation string, sessions []string) (*Resolved, error) {
	if sessions == nil || s.Kind != KindEvents || relation == model.RelEvents || s.Err != nil || s.selected() != nil {
		return s.Resolve(ctx, relation)
	}
	set := append([]string(nil), sessions...)
	sort.Strings(set)
	key := strings.Join(set, "\x00")
	more := s.more()
	more.directedMu.Lock()
	if more.directed == nil {
		more.directed = map[string]*cell{}
	}
	c := more.directed[key]
	if c == nil {
		c = &cell{}
		more.directed[key] = c
	}
	more.directedMu.Unlock()
	res, err := c.do(ctx, func() (*Resolved, error) {
		s.snap.resolves.Add(1)
		want := map[string]bool{}
		for _, id := range set {
			want[id] = true
		}
		rev, err := s.pinnedEvents(ctx, want) // remote.go: downloads only segments that may hold them
		if err != nil {
			return nil, err
		}
		return s.eventFallback(ctx, rev, want)
	})
	if err != nil {
		return nil, s.failed(err)
	}
	return res, nil
}

func (s *Source) selected() *Projection {
	for _, p := range s.Projections {
		if p.Selected {
			return p
		}
	}
	return nil
}

func generationFiles(g *storyline.Generation) *Resolved {
	files := map[string][]string{}
	for _, rel := range storyline.Tables {
		files[rel] = []string{g.Path(rel)}
	}
	return &Resolved{Files: files, Dirs: []string{g.Dir}, SchemaVersion: g.Manifest.SchemaVersion}
}

// importedGeneration is generationFiles of a Storyline store's generation
// once it is known to identify each Storyline by its session_id: a store
// written before session ids were made unique may repeat one across its
// inputs (storyline.CheckSessions), and is refused rather than answering
// joins on (_file_, session_id) with rows of two Storylines.
func importedGeneration(ctx context.Context, g *storyline.Generation) (*Resolved, error) {
	if err := g.CheckSessions(ctx); err != nil {
		return nil, err
	}
	return generationFiles(g), nil
}

// scratch writes the rows of rels (all three relations when none) of the
// Storylines that fill produces into a fresh directory of the Snapshot's
// temp directory, as unsorted, non-durable Parquet: they live only as long
// as the Snapshot.
func (s *Source) scratch(rels []string, fill func(add func(*model.Storyline) error) error) (*Resolved, error) {
	dir, err := os.MkdirTemp(s.snap.TempDir, "src-")
	if err != nil {
		return nil, err
	}
	w, err := storyline.NewScratch(dir, 1, rels...)
	if err != nil {
		return nil, err
	}
	if err := fill(w.Add); err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return &Resolved{Files: scratchFiles(w), Dirs: []string{dir}}, nil
}

// scratchFiles maps each relation a Scratch wrote to its file.
func scratchFiles(w *storyline.Scratch) map[string][]string {
	files := map[string][]string{}
	for _, rel := range w.Relations() {
		files[rel] = []string{w.Path(rel)}
	}
	return files
}

// normalizeFile normalizes a local file source once into the Snapshot's
// temp directory, re-checking its pinned fingerprint before and after the
// read: a file changed in between fails the query rather than mixing
// versions.
func (s *Source) normalizeFile(ctx context.Context, rev FileRevision, rels []string) (*Resolved, error) {
	return s.normalizePath(ctx, s.Path, s.checkPin(rev), rels)
}

// checkPin compares the open source file with its pin (ingest.Options.Check).
func (s *Source) checkPin(rev FileRevision) func(os.FileInfo) error {
	return func(fi os.FileInfo) error { return rev.Check(s.File, fi) }
}

// normalizePath normalizes the local file at path (the source itself, or a
// verified download of a remote one, see remote.go) into the Snapshot's temp
// directory, writing the relations rels.
func (s *Source) normalizePath(ctx context.Context, path string, check func(os.FileInfo) error, rels []string) (*Resolved, error) {
	var format string
	var warnings []string
	res, err := s.scratch(rels, func(add func(*model.Storyline) error) error {
		var err error
		format, warnings, err = s.normalizeInto(ctx, path, check, add)
		return err
	})
	var nt *notTrajectory
	if errors.As(err, &nt) {
		return nt.resolved(), nil
	}
	if err != nil {
		return nil, err
	}
	res.Format, res.Warnings = format, warnings
	return res, nil
}

// unrecognizedPolicy is the Dataset's own policy, else the Snapshot's.
func (s *Source) unrecognizedPolicy() string {
	if p := s.dataset.Mount.Unrecognized; p != "" {
		return p
	}
	return s.snap.Options.Unrecognized
}

// notTrajectory is a file no adapter recognizes, read under the warn
// policy for unrecognized files: it is not a trajectory source, so it
// resolves to no rows and a warning, counted in the query's summary (a
// config.json or result.json beside the trajectories must not fail every
// query over the folder). A file an adapter claims but cannot parse is an
// error, unless --skip-unreadable.
//
// skipped marks a file an adapter claimed but could not parse, skipped
// under --skip-unreadable: no rows and a warning too, but never kept in the
// normalization cache, since a later command without the flag must fail on
// it.
type notTrajectory struct {
	err     error
	skipped bool
}

func (e *notTrajectory) Error() string { return e.err.Error() }
func (e *notTrajectory) Unwrap() error { return e.err }

func (e *notTrajectory) resolved() *Resolved {
	if e.skipped {
		return &Resolved{Files: map[string][]string{}, Warnings: []string{e.err.Error() + skippedMark}, uncacheable: true}
	}
	return &Resolved{Files: map[string][]string{}, Warnings: []string{e.err.Error() + notTrajectoryMark}} // the error names the file first
}

// normalizeInto normalizes the local file at path through add and returns
// its detected format and what the file as a whole warns of (a torn last
// line of a file being written); check, when set, re-checks the pin on the
// open file before and after the read.
func (s *Source) normalizeInto(ctx context.Context, path string, check func(os.FileInfo) error, add func(*model.Storyline) error) (string, []string, error) {
	opts := ingest.Options{MaxDetectionBytes: s.snap.Options.MaxDetectionBytes, MaxFileBytes: s.snap.Options.MaxFileBytes, Check: check,
		Outcome: s.outcome(), Parts: true}
	det, err := ingest.NormalizeFile(ctx, path, s.File, opts, add)
	if errors.Is(err, format.ErrUnrecognized) && s.unrecognizedPolicy() != UnrecognizedFail {
		return "", nil, &notTrajectory{err: fmt.Errorf("%s: %w", s.File, err)}
	}
	if err != nil {
		return "", nil, s.unreadable(err)
	}
	var warnings []string
	for _, w := range det.Warnings {
		w.File = s.File // the Dataset-relative path, as the other warnings name it
		warnings = append(warnings, w.String())
	}
	return det.Format, warnings, nil
}

// eventFallback normalizes the pinned canonical events into Storylines when
// no fresh projection exists — all sessions, or only those in sessions —
// bounded by max_event_fallback_rows/_bytes over the segments it must read.
func (s *Source) eventFallback(ctx context.Context, rev *events.Revision, sessions map[string]bool) (*Resolved, error) {
	o := s.snap.Options
	var rows, bytes int64
	for i := range rev.Segments {
		seg := &rev.Segments[i]
		if sessions != nil && !mayHoldAny(seg, sessions) {
			continue
		}
		rows += seg.Rows
		bytes += seg.Bytes
	}
	if rows > o.MaxEventFallbackRows || bytes > o.MaxEventFallbackBytes {
		return nil, fmt.Errorf("no fresh Storyline projection, and normalizing %d events (%d bytes) exceeds max_event_fallback_rows=%d / max_event_fallback_bytes=%d; run `pchronicle project %s`",
			rows, bytes, o.MaxEventFallbackRows, o.MaxEventFallbackBytes, s.Path)
	}
	res, err := s.scratch(nil, func(add func(*model.Storyline) error) error {
		return rev.ScanSessions(ctx, sessions, func(_ string, evs []model.Event) error {
			s.snap.fallbackSessions.Add(1)
			for _, sl := range canonical.Storylines(evs, s.File) {
				if err := add(sl); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	res.Format = format.Canonical
	return res, nil
}

func mayHoldAny(seg *events.Segment, sessions map[string]bool) bool {
	for id := range sessions {
		if seg.MayHoldSession(id) {
			return true
		}
	}
	return false
}

// Detect runs format detection on a file source at its pinned version —
// reading at most max_detection_bytes of a local file, or downloading the
// pinned object of a remote one — without normalizing it (pchronicle ls
// --detect). A file no adapter recognizes gives a *format.UnrecognizedError
// that says why.
func (s *Source) Detect(ctx context.Context) (ingest.Detection, error) {
	if s.Err != nil {
		return ingest.Detection{}, s.Err
	}
	path := s.Path
	var rev *FileRevision
	switch r := s.Revision.(type) {
	case *FileRevision:
		rev = r
	case RemoteFileRevision:
		local, err := r.remote.fetch(ctx, s.snap, r.Object, "file/"+filepath.Base(r.Object.Key))
		if err != nil {
			return ingest.Detection{}, err
		}
		path = local
	case *ConversationRevision:
		return r.detect(s)
	default:
		return ingest.Detection{}, fmt.Errorf("source %s is a %s, not a file", s.File, s.Kind)
	}
	det, err := ingest.DetectFile(path, ingest.Options{MaxDetectionBytes: s.snap.Options.MaxDetectionBytes})
	if rev != nil {
		if fi, serr := os.Lstat(path); serr != nil {
			return det, serr
		} else if cerr := rev.Check(s.File, fi); cerr != nil {
			return det, cerr
		}
	}
	return det, err
}
