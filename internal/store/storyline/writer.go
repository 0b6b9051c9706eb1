package storyline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store"
)

// DefaultMemoryLimit bounds the estimated bytes of rows a Writer buffers
// before spilling sorted runs to disk.
const DefaultMemoryLimit = 256 << 20

// Writer builds one new generation. Rows are added in any order (Add is
// safe for concurrent use); Commit sorts them by session_id with bounded
// memory and publishes the generation. Everything is written under a
// temporary directory inside the store, locked while the Writer lives, so
// an unfinished Writer is never visible, GC never removes it, and GC
// removes what a crash leaves behind.
type Writer struct {
	s       *Store
	tmp     string
	release func() // unlocks tmp (fsx.MkdirTempLocked)
	limit   int64
	created string // the topmost directory this Writer created for the store ("" if none)

	// held is the store lock when the Writer took it up front
	// (NewGenerationOnCurrent) and keeps it until Commit or Abort.
	held func()
	// copied lists the generations CopyFrom read: Commit publishes only
	// while CURRENT still names them, so copied rows are never a stale view.
	copied []int64

	mu      sync.Mutex
	bytes   int64
	runs    *sorter[model.Run]
	steps   *sorter[model.Step]
	calls   *sorter[model.ToolCall]
	sources []SourceInfo
	dropped map[string]bool
	ids     *identity // the Storylines added, to rename repeated session ids
	done    bool
}

// WriterOption configures NewGeneration.
type WriterOption func(*Writer)

// MemoryLimit sets the estimated bytes of buffered rows above which the
// Writer spills to disk (default DefaultMemoryLimit).
func MemoryLimit(bytes int64) WriterOption {
	return func(w *Writer) {
		if bytes > 0 {
			w.limit = bytes
		}
	}
}

// NewGeneration starts a new generation that does not depend on the
// current one (it takes the store lock only to publish). Call Commit to
// publish it or Abort to discard it. A Writer that copies rows from a
// generation (CopyFrom) fails to publish with ErrLostRace once another
// writer replaced that generation; to build on the current generation
// without that risk, use NewGenerationOnCurrent.
func (s *Store) NewGeneration(opts ...WriterOption) (*Writer, error) {
	w, err := s.newWriter()
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(w)
	}
	return w, nil
}

// NewGenerationOnCurrent starts a new generation that builds on the
// current one, base (nil while dir is not a store yet). It takes the
// store's writer lock — waiting for other writers until ctx is done — and
// holds it until Commit or Abort, so base stays current while the new
// generation is built: whatever the new generation keeps of base (append
// imports, incremental projections) can never miss a concurrent
// publication. Concurrent writers of this kind therefore run one after the
// other, each on the result of the previous one.
func (s *Store) NewGenerationOnCurrent(ctx context.Context, opts ...WriterOption) (w *Writer, base *Generation, err error) {
	if w, err = s.NewGeneration(opts...); err != nil {
		return nil, nil, err
	}
	// The temp directory exists before the lock is taken, so a writer
	// removing the store directory it created (Abort) sees it in use.
	if w.held, err = lockStore(ctx, s.dir); err != nil {
		w.Abort()
		return nil, nil, err
	}
	if IsStore(s.dir) {
		if base, err = s.Pin(); err != nil {
			w.Abort()
			return nil, nil, err
		}
	}
	return w, base, nil
}

func (s *Store) newWriter() (*Writer, error) {
	var created, tmp string
	var release func()
	var err error
	// A failed first writer may remove the store directory it created
	// between this MkdirAll and the MkdirTemp: then create it again.
	for range 3 {
		top, err := fsx.MkdirAllNew(s.dir, 0o755)
		if err != nil {
			return nil, fmt.Errorf("storyline: new generation: %w", err)
		}
		created = cmp.Or(created, top)
		if tmp, release, err = fsx.MkdirTempLocked(s.dir, tmpPrefix); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("storyline: new generation: %w", err)
	}
	spill := filepath.Join(tmp, "spill")
	if err := os.Mkdir(spill, 0o755); err != nil {
		os.RemoveAll(tmp)
		release()
		return nil, fmt.Errorf("storyline: new generation: %w", err)
	}
	dropped := map[string]bool{}
	return &Writer{
		s:       s,
		tmp:     tmp,
		release: release,
		created: created,
		limit:   DefaultMemoryLimit,
		dropped: dropped,
		ids:     newIdentity(),
		runs:    newSorter(model.RelRuns, spill, dropped, cmpRun, sizeRun, func(r *model.Run) string { return r.File }),
		steps:   newSorter(model.RelSteps, spill, dropped, cmpStep, sizeStep, func(r *model.Step) string { return r.File }),
		calls:   newSorter(model.RelToolCalls, spill, dropped, cmpToolCall, sizeToolCall, func(r *model.ToolCall) string { return r.File }),
	}, nil
}

// Add adds a finalized Storyline's rows, or a part's (model.Storyline.More:
// its run row comes with the last part).
func (w *Writer) Add(sl *model.Storyline) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errors.New("storyline: Add after Commit or Abort")
	}
	if !sl.More {
		w.ids.add(&sl.Run)
		w.bytes += w.runs.add(&sl.Run)
	}
	for i := range sl.Steps {
		w.bytes += w.steps.add(&sl.Steps[i])
	}
	for i := range sl.ToolCalls {
		w.bytes += w.calls.add(&sl.ToolCalls[i])
	}
	return w.maybeSpill()
}

// Discard removes every row added so far whose _file_ is file, so that an
// input that fails halfway contributes nothing. Call it after the file's
// last Add; rows added later with the same _file_ are discarded as well.
func (w *Writer) Discard(file string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropped[file] = true
	w.bytes -= w.runs.discard() + w.steps.discard() + w.calls.discard()
}

// AddSource records the provenance of one imported input in the manifest.
func (w *Writer) AddSource(src SourceInfo) {
	w.mu.Lock()
	w.sources = append(w.sources, src)
	w.mu.Unlock()
}

// CopyFrom adds the rows of generation g for which keep(_file_, session_id)
// is true (the id as g stores it): an import in append mode keeps the files
// it does not replace, a projection keeps the sessions whose events did not
// change. Session ids g had to qualify are copied as their inputs gave
// them, and the new generation qualifies those that still repeat. The
// Writer then publishes only while g is still current (see NewGeneration).
func (w *Writer) CopyFrom(ctx context.Context, g *Generation, keep func(file, sessionID string) bool) error {
	w.mu.Lock()
	w.copied = append(w.copied, g.Number)
	w.mu.Unlock()
	rs := restorer(&g.Manifest)
	err := copyRows(ctx, w, g.Path(model.RelRuns), w.runs, func(r *model.Run) bool {
		if !keep(r.File, r.SessionID) {
			return false
		}
		rs.run(r)
		w.ids.add(r)
		return true
	})
	if err == nil {
		err = copyRows(ctx, w, g.Path(model.RelSteps), w.steps, func(r *model.Step) bool {
			if !keep(r.File, r.SessionID) {
				return false
			}
			rs.step(r)
			return true
		})
	}
	if err == nil {
		err = copyRows(ctx, w, g.Path(model.RelToolCalls), w.calls, func(r *model.ToolCall) bool {
			if !keep(r.File, r.SessionID) {
				return false
			}
			rs.call(r)
			return true
		})
	}
	if err != nil {
		return fmt.Errorf("storyline: copy from %s: %w", g.Name(), err)
	}
	return nil
}

func copyRows[T row](ctx context.Context, w *Writer, path string, s *sorter[T], keep func(*T) bool) error {
	return eachRow(ctx, path, func(r *T) error {
		if !keep(r) {
			return nil
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.bytes += s.add(r)
		return w.maybeSpill()
	})
}

// maybeSpill spills every relation once the budget is exceeded; the caller
// holds w.mu.
func (w *Writer) maybeSpill() error {
	if w.bytes <= w.limit {
		return nil
	}
	for _, spill := range []func() error{w.runs.spill, w.steps.spill, w.calls.spill} {
		if err := spill(); err != nil {
			return fmt.Errorf("storyline: spill: %w", err)
		}
	}
	w.bytes = 0
	return nil
}

// Abort discards the generation. A store directory that this Writer
// created and that never became a store is removed again.
func (w *Writer) Abort() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	return w.discard()
}

// discard removes the temp directory, releases the Writer's locks and
// removes what it created of a store that was never published; the caller
// holds w.mu.
func (w *Writer) discard() error {
	err := os.RemoveAll(w.tmp)
	w.release()
	if !IsStore(w.s.dir) {
		w.s.removeUnpublished(w.held, w.created)
	}
	if w.held != nil {
		w.held()
	}
	return err
}

// Commit writes the three tables and the manifest, then publishes the
// generation: rename into place, then replace CURRENT. lineage is recorded
// for projections (nil for imports). On error nothing new is current,
// except when the failure hit after CURRENT was replaced (only the final
// directory fsync was pending), in which case the new generation is.
func (w *Writer) Commit(ctx context.Context, lineage *Lineage) (*Generation, error) {
	return w.commit(ctx, lineage, false)
}

func (w *Writer) commit(ctx context.Context, lineage *Lineage, create bool) (g *Generation, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, errors.New("storyline: Commit after Commit or Abort")
	}
	w.done = true
	unlock := w.held
	w.held = nil
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	defer func() {
		if err != nil {
			os.RemoveAll(w.tmp)
		}
		w.release()
		if err != nil && !IsStore(w.s.dir) {
			w.s.removeUnpublished(unlock, w.created)
		}
	}()
	renames, renamed := w.ids.plan(w.dropped)
	rn := &renamer{ids: renames}
	w.runs.out, w.steps.out, w.calls.out = rn.run, rn.step, rn.call
	tables, err := w.writeTables(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(w.tmp, "spill")); err != nil {
		return nil, fmt.Errorf("storyline: %w", err)
	}
	if unlock == nil {
		if unlock, err = lockStore(ctx, w.s.dir); err != nil {
			return nil, err
		}
	}
	if create && IsStore(w.s.dir) {
		return nil, fmt.Errorf("storyline: %s: %w", w.s.dir, fs.ErrExist)
	}
	if err := w.checkCopied(); err != nil {
		return nil, err
	}
	num, err := w.s.nextNumber()
	if err != nil {
		return nil, err
	}
	m := Manifest{
		SchemaVersion:   model.SchemaVersion,
		FormatVersion:   FormatVersion,
		Generation:      num,
		CreatedAt:       w.s.now().UTC(),
		Tables:          tables,
		Lineage:         lineage,
		Sources:         w.sources,
		RenamedSessions: renamed,
	}
	if err := w.install(ctx, m); err != nil {
		return nil, err
	}
	return w.s.generation(num)
}

// checkCopied fails with ErrLostRace when a generation the Writer copied
// rows from is no longer current; the caller holds the store lock.
func (w *Writer) checkCopied() error {
	if len(w.copied) == 0 {
		return nil
	}
	cur, err := w.s.current()
	if err != nil {
		return err
	}
	for _, n := range w.copied {
		if n != cur {
			return fmt.Errorf("storyline: %s: this generation copies rows of %s, but %s was published meanwhile; nothing was published (retry): %w",
				w.s.dir, genName(n), genName(cur), store.ErrLostRace)
		}
	}
	return nil
}

// writeTables finishes the three relations concurrently.
func (w *Writer) writeTables(ctx context.Context) (map[string]TableInfo, error) {
	infos := make([]TableInfo, 3)
	var eg errgroup.Group
	eg.Go(func() (err error) { infos[0], err = w.runs.finish(ctx, w.tablePath(model.RelRuns)); return })
	eg.Go(func() (err error) { infos[1], err = w.steps.finish(ctx, w.tablePath(model.RelSteps)); return })
	eg.Go(func() (err error) { infos[2], err = w.calls.finish(ctx, w.tablePath(model.RelToolCalls)); return })
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return map[string]TableInfo{model.RelRuns: infos[0], model.RelSteps: infos[1], model.RelToolCalls: infos[2]}, nil
}

func (w *Writer) tablePath(rel string) string { return filepath.Join(w.tmp, rel+".parquet") }

// install writes the manifest, moves the finished directory to its
// generation name and points CURRENT at it. The caller holds the lock.
// Once ctx is done (Ctrl-C, SIGTERM) nothing is published any more: the
// last check is right before the rename, the first step readers can see.
func (w *Writer) install(ctx context.Context, m Manifest) error {
	data, err := m.encode()
	if err != nil {
		return fmt.Errorf("storyline: manifest: %w", err)
	}
	if err := fsx.WriteFileAtomic(filepath.Join(w.tmp, ManifestFile), data, 0o644); err != nil {
		return fmt.Errorf("storyline: manifest: %w", err)
	}
	// The temp directory's lock file has no place in a generation; GC
	// cannot run while the store lock is held, so it is not needed now.
	if err := os.Remove(filepath.Join(w.tmp, fsx.TempLockFile)); err != nil {
		return fmt.Errorf("storyline: %w", err)
	}
	dst := filepath.Join(w.s.dir, genName(m.Generation))
	if err := fsx.SyncDir(w.tmp); err != nil {
		return fmt.Errorf("storyline: %w", err)
	}
	if err := fsx.Check(dst, fsx.FailRename); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storyline: not published: %w", err)
	}
	if err := os.Rename(w.tmp, dst); err != nil {
		return fmt.Errorf("storyline: %w", err)
	}
	err = fsx.Check(dst, fsx.FailDir)
	if err == nil {
		err = fsx.SyncDir(w.s.dir)
	}
	if err == nil {
		err = w.s.publish(m.Generation)
	}
	if err != nil {
		// Not current means no reader can have pinned it: remove it now
		// rather than leave it to GC.
		if cur, cerr := w.s.current(); cerr != nil || cur != m.Generation {
			os.RemoveAll(dst)
		}
		return fmt.Errorf("storyline: publish %s: %w", genName(m.Generation), err)
	}
	return nil
}
