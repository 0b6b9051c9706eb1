package storyline

import (
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
)

// DefaultMemoryLimit bounds the estimated bytes of rows a Writer buffers
// before spilling sorted runs to disk.
const DefaultMemoryLimit = 256 << 20

// Writer builds one new generation. Rows are added in any order (Add is
// safe for concurrent use); Commit sorts them by session_id with bounded
// memory and publishes the generation. Everything is written under a
// temporary directory inside the store, so an unfinished Writer is never
// visible and GC removes what a crash leaves behind.
type Writer struct {
	s     *Store
	tmp   string
	limit int64

	mu      sync.Mutex
	bytes   int64
	runs    *sorter[model.Run]
	steps   *sorter[model.Step]
	calls   *sorter[model.ToolCall]
	sources []SourceInfo
	dropped map[string]bool
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

// NewGeneration starts a new generation. Call Commit to publish it or
// Abort to discard it.
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

func (s *Store) newWriter() (*Writer, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("storyline: new generation: %w", err)
	}
	tmp, err := os.MkdirTemp(s.dir, tmpPrefix)
	if err != nil {
		return nil, fmt.Errorf("storyline: new generation: %w", err)
	}
	spill := filepath.Join(tmp, "spill")
	if err := os.Mkdir(spill, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("storyline: new generation: %w", err)
	}
	dropped := map[string]bool{}
	return &Writer{
		s:       s,
		tmp:     tmp,
		limit:   DefaultMemoryLimit,
		dropped: dropped,
		runs:    newSorter(model.RelRuns, spill, dropped, cmpRun, sizeRun, func(r *model.Run) string { return r.File }),
		steps:   newSorter(model.RelSteps, spill, dropped, cmpStep, sizeStep, func(r *model.Step) string { return r.File }),
		calls:   newSorter(model.RelToolCalls, spill, dropped, cmpToolCall, sizeToolCall, func(r *model.ToolCall) string { return r.File }),
	}, nil
}

// Add adds a finalized Storyline's rows.
func (w *Writer) Add(sl *model.Storyline) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errors.New("storyline: Add after Commit or Abort")
	}
	w.bytes += w.runs.add(&sl.Run)
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
// is true: an import in append mode keeps the files it does not replace, a
// projection keeps the sessions whose events did not change.
func (w *Writer) CopyFrom(ctx context.Context, g *Generation, keep func(file, sessionID string) bool) error {
	err := copyRows(ctx, w, g.Path(model.RelRuns), w.runs, func(r *model.Run) bool { return keep(r.File, r.SessionID) })
	if err == nil {
		err = copyRows(ctx, w, g.Path(model.RelSteps), w.steps, func(r *model.Step) bool { return keep(r.File, r.SessionID) })
	}
	if err == nil {
		err = copyRows(ctx, w, g.Path(model.RelToolCalls), w.calls, func(r *model.ToolCall) bool { return keep(r.File, r.SessionID) })
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

// Abort discards the generation.
func (w *Writer) Abort() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	return os.RemoveAll(w.tmp)
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
	defer func() {
		if err != nil {
			os.RemoveAll(w.tmp)
		}
	}()
	tables, err := w.writeTables(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(w.tmp, "spill")); err != nil {
		return nil, fmt.Errorf("storyline: %w", err)
	}
	unlock, err := lockStore(w.s.dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if create && IsStore(w.s.dir) {
		return nil, fmt.Errorf("storyline: %s: %w", w.s.dir, fs.ErrExist)
	}
	num, err := w.s.nextNumber()
	if err != nil {
		return nil, err
	}
	m := Manifest{
		SchemaVersion: model.SchemaVersion,
		Generation:    num,
		CreatedAt:     w.s.now().UTC(),
		Tables:        tables,
		Lineage:       lineage,
		Sources:       w.sources,
	}
	if err := w.install(m); err != nil {
		return nil, err
	}
	return w.s.generation(num)
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
func (w *Writer) install(m Manifest) error {
	data, err := m.encode()
	if err != nil {
		return fmt.Errorf("storyline: manifest: %w", err)
	}
	if err := fsx.WriteFileAtomic(filepath.Join(w.tmp, ManifestFile), data, 0o644); err != nil {
		return fmt.Errorf("storyline: manifest: %w", err)
	}
	dst := filepath.Join(w.s.dir, genName(m.Generation))
	if err := fsx.SyncDir(w.tmp); err != nil {
		return fmt.Errorf("storyline: %w", err)
	}
	if err := fsx.Check(dst, fsx.FailRename); err != nil {
		return err
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
