package engine

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Reader reads whole Storylines, or pages of one, through the pinned
// sources of a Snapshot (the spec's load_storyline). It runs only this
// package's own SQL, in one private DuckDB instance with the same walls as
// the query engine (limits, file access confined to the Snapshot's pinned
// data, a locked configuration); since no user SQL ever reaches it, the
// instance is opened once and shared by every read. It is safe for
// concurrent use.
type Reader struct {
	snap   *catalog.Snapshot
	limits Limits

	once  sync.Once
	db    *sql.DB
	spill string
	err   error

	// located caches where each Storyline read so far lives (pages.go):
	// the Snapshot is immutable, so the answer never changes.
	mu      sync.Mutex
	located map[StorylineKey]*located
}

// NewReader returns a Reader over snap; it opens nothing until first used.
func NewReader(snap *catalog.Snapshot, limits Limits) *Reader {
	return &Reader{snap: snap, limits: limits}
}

// Close releases the reader's DuckDB instance.
func (r *Reader) Close() error {
	r.once.Do(func() { r.err = errors.New("reader closed") }) // a later use fails
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	os.RemoveAll(r.spill)
	return err
}

func (r *Reader) open(ctx context.Context) (*sql.DB, error) {
	r.once.Do(func() {
		spill := r.snap.SpillDir()
		db, err := sql.Open("duckdb", r.limits.openConfig())
		if err != nil {
			r.err = err
			return
		}
		setup := append(r.limits.instanceSettings(spill), accessSettings(spill, r.snap.ReadableDirs())...)
		setup = append(setup, lockConfiguration)
		for _, stmt := range setup {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				db.Close()
				r.err = fmt.Errorf("preparing reader: %s: %w", firstLine(stmt), err)
				return
			}
		}
		r.db, r.spill = db, spill
	})
	return r.db, r.err
}

// StorylineKey is a Storyline's full identity: (dataset, _file_, session_id).
// Dataset is a namespace path or a SQL alias.
type StorylineKey struct {
	Dataset   string `json:"dataset"`
	File      string `json:"_file_"`
	SessionID string `json:"session_id"`
}

func (k StorylineKey) String() string {
	return fmt.Sprintf("Storyline (%s, %s, %s)", k.Dataset, k.File, k.SessionID)
}

// StorylineFilter selects Storylines of one source; empty fields select
// every Storyline.
type StorylineFilter struct {
	Sessions []string // session_id IN Sessions
	RunID    string   // run_id = RunID
}

// where returns the filter as a SQL condition with its parameters.
func (f StorylineFilter) where() (string, []any) {
	cond, args := "true", []any{}
	if len(f.Sessions) > 0 {
		cond += " AND session_id IN (?" + strings.Repeat(", ?", len(f.Sessions)-1) + ")"
		for _, id := range f.Sessions {
			args = append(args, id)
		}
	}
	if f.RunID != "" {
		cond += " AND run_id = ?"
		args = append(args, f.RunID)
	}
	return cond, args
}

// sourceFiles resolves a source's Storyline relations and returns them with
// the condition that keeps its own rows: files shared with other sources
// (Snapshot.ResolveFiles) hold rows of several _file_ values.
func (r *Reader) sourceFiles(ctx context.Context, dataset, file string) (*catalog.Source, *catalog.Resolved, string, []any, error) {
	src, err := r.snap.LookupSource(dataset, file)
	if err != nil {
		return nil, nil, "", nil, err
	}
	// The source's own files: reading one source out of a large shared
	// batch would scan every other source's rows too.
	res, err := resolveStorylines(documentBudget(ctx, r.snap.Options), src, src.ResolveSolo)
	if err != nil {
		return nil, nil, "", nil, err
	}
	if res.Owners != nil {
		return src, res, "_file_ = ?", []any{src.File}, nil
	}
	return src, res, "true", nil, nil
}

// storylineRelations are the relations a Storyline is read from.
var storylineRelations = []string{model.RelRuns, model.RelSteps, model.RelToolCalls}

// resolveStorylines resolves the three relations of src with resolve (one
// resolution) and returns their files as one Resolved.
func resolveStorylines(ctx context.Context, src *catalog.Source, resolve func(context.Context, ...string) ([]*catalog.Resolved, error)) (*catalog.Resolved, error) {
	rels, err := resolve(ctx, storylineRelations...)
	if err != nil {
		return nil, err
	}
	res := *rels[0]
	res.Files = map[string][]string{}
	for i, rel := range storylineRelations {
		res.Files[rel] = rels[i].Files[rel]
		if rels[i].Owners != nil {
			res.Owners = rels[i].Owners
		}
	}
	return &res, nil
}

// LoadStoryline reads exactly one Storyline — its runs, steps and tool_calls
// rows — through the pinned source. Its _file_ columns hold the source's
// Dataset-relative path, as in SQL. Warnings raised while normalizing are
// not stored with the rows, so the result has none.
func (r *Reader) LoadStoryline(ctx context.Context, key StorylineKey) (*model.Storyline, error) {
	var found []*model.Storyline
	err := r.EachStoryline(ctx, key.Dataset, key.File, StorylineFilter{Sessions: []string{key.SessionID}}, func(sl *model.Storyline) error {
		found = append(found, sl)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s: %w", key, catalog.ErrNotFound)
	case 1:
		return found[0], nil
	}
	return nil, ambiguous(key, len(found))
}

// ErrAmbiguous is wrapped when a source holds several Storylines with the
// requested session_id. Sources keep session ids unique (a store qualifies
// ids its inputs share, and one written before that is refused when they
// repeat: docs/storage.md, "Session identity"), so this guards against a
// store that breaks that promise rather than a case users meet.
var ErrAmbiguous = errors.New("ambiguous Storyline")

func ambiguous(key StorylineKey, n int) error {
	return fmt.Errorf("%s is ambiguous: the source holds %d Storylines with that session_id: %w", key, n, ErrAmbiguous)
}

// EachStoryline calls fn with every Storyline of one source that f selects,
// in session_id order. Rows stream: only the current Storyline is held in
// memory. The _file_ columns hold the source's Dataset-relative path.
func (r *Reader) EachStoryline(ctx context.Context, dataset, file string, f StorylineFilter, fn func(*model.Storyline) error) error {
	db, err := r.open(ctx)
	if err != nil {
		return err
	}
	src, res, own, ownArgs, err := r.sourceFiles(ctx, dataset, file)
	if err != nil {
		return err
	}
	where, args := f.where()
	where += " AND " + own
	args = append(args, ownArgs...)
	return readStorylines(ctx, db, res, where, args, false, "source "+file, func(sl *model.Storyline) error {
		setFile(sl, src.File)
		return fn(sl)
	})
}

// EachStorylineOf is EachStoryline over several sources of a Dataset, in
// the order given, with fn told each Storyline's source. The peripheral
// files among them are resolved together, as a query resolves its sources
// (normalized as one batch into shared files, or served by the cache's
// entries of an earlier batch), and their Storylines read with one query per
// relation, filtered by _file_, and held until their turn: a resolution and
// three queries per source were most of an export of many small files.
// Store sources are read one by one. The caller bounds what is held by how
// many sources, and how large, it passes at once.
func (r *Reader) EachStorylineOf(ctx context.Context, dataset string, files []string, f StorylineFilter, fn func(file string, sl *model.Storyline) error) error {
	db, err := r.open(ctx)
	if err != nil {
		return err
	}
	resolved, err := r.resolveAll(ctx, dataset, files)
	if err != nil {
		return err
	}
	// The sources read together, by the schema version of their files
	// (columns a version lacks read as NULL for all files of a scan).
	together := map[int]*catalog.Resolved{}
	held := map[string][]*model.Storyline{} // by source read together
	where, args := f.where()
	var own []any
	for i, file := range files {
		src, res := resolved[i].src, resolved[i].res
		if src.Kind != catalog.KindFile {
			continue // read alone, at its turn
		}
		held[file], own = nil, append(own, file)
		all := together[res.SchemaVersion]
		if all == nil {
			all = &catalog.Resolved{Files: map[string][]string{}, SchemaVersion: res.SchemaVersion}
			together[res.SchemaVersion] = all
		}
		for rel, fs := range res.Files {
			for _, name := range fs { // a shared file once
				if !slices.Contains(all.Files[rel], name) {
					all.Files[rel] = append(all.Files[rel], name)
				}
			}
		}
	}
	if len(own) > 0 {
		where += " AND _file_ IN (?" + strings.Repeat(", ?", len(own)-1) + ")"
		args = append(args, own...)
	}
	for _, res := range together {
		err := readStorylines(ctx, db, res, where, args, true, "sources of "+dataset, func(sl *model.Storyline) error {
			if _, ok := held[sl.Run.File]; !ok {
				return fmt.Errorf("a row of %q among the files of other sources", sl.Run.File)
			}
			held[sl.Run.File] = append(held[sl.Run.File], sl)
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, file := range files {
		if _, ok := held[file]; !ok { // read alone
			if err := r.EachStoryline(ctx, dataset, file, f, func(sl *model.Storyline) error { return fn(file, sl) }); err != nil {
				return err
			}
			continue
		}
		for _, sl := range held[file] {
			if err := fn(file, sl); err != nil {
				return err
			}
		}
		delete(held, file)
	}
	return nil
}

// resolveAll resolves the file sources among files (sources of other kinds
// are read alone): the local ones in one batch (Snapshot.ResolveFiles), then
// each as many at once as a query would, which for a local one is taking
// the batch's result and for an object downloading it.
func (r *Reader) resolveAll(ctx context.Context, dataset string, files []string) ([]sourceRes, error) {
	ctx = documentBudget(ctx, r.snap.Options)
	out := make([]sourceRes, len(files))
	var reqs []catalog.FileRequest
	for i, file := range files {
		src, err := r.snap.LookupSource(dataset, file)
		if err != nil {
			return nil, err
		}
		out[i].src = src
		if src.Kind == catalog.KindFile {
			reqs = append(reqs, catalog.FileRequest{Source: src, Relations: storylineRelations})
		}
	}
	if len(reqs) > 1 {
		if err := r.snap.ResolveFiles(ctx, reqs); err != nil && ctx.Err() != nil {
			return nil, err // other errors are the sources', reported below
		}
	}
	errs := make([]error, len(files))
	eachAtOnce(len(files), r.snap.Options.MaxConcurrentSources, func(i int) {
		if src := out[i].src; src.Kind == catalog.KindFile && ctx.Err() == nil {
			out[i].res, errs[i] = resolveStorylines(ctx, src, src.ResolveRelations)
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err // the first in the sources' order, as one at a time
		}
	}
	return out, nil
}

// sourceRes is a source and its resolved Storyline relations.
type sourceRes struct {
	src *catalog.Source
	res *catalog.Resolved
}

// readStorylines reads the Storylines of res's files that match where, in
// Storyline-key order, or by source first when byFile (files holding the
// rows of several file sources): three queries, one per relation, merged.
// Its own errors are prefixed with what (fn's are returned as they are).
func readStorylines(ctx context.Context, db *sql.DB, res *catalog.Resolved, where string, args []any, byFile bool, what string, fn func(*model.Storyline) error) error {
	fail := func(err error) error { return fmt.Errorf("%s: %w", what, err) }
	runs, err := openCursor(ctx, db, model.RelRuns, res, where, args, runKey, byFile)
	if err != nil {
		return fail(err)
	}
	defer runs.close()
	steps, err := openCursor(ctx, db, model.RelSteps, res, where, args, stepKey, byFile)
	if err != nil {
		return fail(err)
	}
	defer steps.close()
	calls, err := openCursor(ctx, db, model.RelToolCalls, res, where, args, callKey, byFile)
	if err != nil {
		return fail(err)
	}
	defer calls.close()
	for runs.row != nil {
		sl := &model.Storyline{Run: *runs.row}
		k := runKey(runs.row)
		if err := steps.take(k, func(r *model.Step) { sl.Steps = append(sl.Steps, *r) }); err != nil {
			return fail(err)
		}
		if err := calls.take(k, func(r *model.ToolCall) { sl.ToolCalls = append(sl.ToolCalls, *r) }); err != nil {
			return fail(err)
		}
		if err := fn(sl); err != nil {
			return err
		}
		if err := runs.advance(); err != nil {
			return fail(err)
		}
	}
	return nil
}

// setFile gives every row the source's _file_: store rows may carry their
// import provenance there, but a Storyline's identity is the source path.
func setFile(sl *model.Storyline, file string) {
	sl.Run.File = file
	for i := range sl.Steps {
		sl.Steps[i].File = file
	}
	for i := range sl.ToolCalls {
		sl.ToolCalls[i].File = file
	}
}

// storyKey orders rows of one source: a store may hold rows imported from
// several files, so the import _file_ is part of a Storyline's key there.
type storyKey struct{ session, file string }

func (a storyKey) compare(b storyKey) int {
	return cmp.Or(strings.Compare(a.session, b.session), strings.Compare(a.file, b.file))
}

func runKey(r *model.Run) storyKey       { return storyKey{r.SessionID, r.File} }
func stepKey(r *model.Step) storyKey     { return storyKey{r.SessionID, r.File} }
func callKey(r *model.ToolCall) storyKey { return storyKey{r.SessionID, r.File} }

// fileFirst orders the keys of several sources read at once
// (EachStorylineOf): by source, then session.
func (a storyKey) fileFirst(b storyKey) int {
	return cmp.Or(strings.Compare(a.file, b.file), strings.Compare(a.session, b.session))
}

// cursor streams one relation's rows in Storyline-key order, decoded into
// the model struct whose fields are the relation's columns in order.
type cursor[T any] struct {
	rows *sql.Rows
	row  *T // current row; nil at the end
	key  func(*T) storyKey
	cmp  func(a, b storyKey) int // the order of the query's ORDER BY
}

// orderBy lists each relation's sort columns: the Storyline key, then the
// row's position in its Storyline. byFile is the same with the source first.
var (
	orderBy = map[string]string{
		model.RelRuns:      "session_id, _file_",
		model.RelSteps:     "session_id, _file_, step_index",
		model.RelToolCalls: "session_id, _file_, call_index",
	}
	orderByFile = map[string]string{
		model.RelRuns:      "_file_, session_id",
		model.RelSteps:     "_file_, session_id, step_index",
		model.RelToolCalls: "_file_, session_id, call_index",
	}
)

// selectFrom is the scan of one relation of res with every column in model
// order (NULL for columns the files predate).
func selectFrom(rel string, res *catalog.Resolved) string {
	cols := make([]string, 0, len(model.Schemas[rel]))
	for _, col := range model.Schemas[rel] {
		cols = append(cols, column(res, col))
	}
	return fmt.Sprintf("SELECT %s FROM read_parquet([%s])", strings.Join(cols, ", "), quoteList(res.Files[rel]))
}

// openCursor opens a cursor over one relation of res's files, ordered by
// source first when byFile.
func openCursor[T any](ctx context.Context, db *sql.DB, rel string, res *catalog.Resolved, where string, args []any, key func(*T) storyKey, byFile bool) (*cursor[T], error) {
	c := &cursor[T]{key: key, cmp: storyKey.compare}
	order := orderBy[rel]
	if byFile {
		c.cmp, order = storyKey.fileFirst, orderByFile[rel]
	}
	if len(res.Files[rel]) == 0 {
		return c, nil
	}
	// ORDER BY uses DuckDB's default binary collation, the same byte order
	// as storyKey's comparisons, so the three cursors merge correctly.
	q := fmt.Sprintf("%s WHERE %s ORDER BY %s", selectFrom(rel, res), where, order)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	c.rows = rows
	if err := c.advance(); err != nil {
		rows.Close()
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	return c, nil
}

func (c *cursor[T]) advance() error {
	c.row = nil
	if c.rows == nil || !c.rows.Next() {
		if c.rows == nil {
			return nil
		}
		return c.rows.Err()
	}
	var row T
	if err := scanStruct(c.rows, &row); err != nil {
		return err
	}
	c.row = &row
	return nil
}

// take passes every row with key k to add and stops at the first row after
// it. Rows ordered before k belong to no selected run and are skipped.
func (c *cursor[T]) take(k storyKey, add func(*T)) error {
	for c.row != nil {
		switch d := c.cmp(c.key(c.row), k); {
		case d > 0:
			return nil
		case d == 0:
			add(c.row)
		}
		if err := c.advance(); err != nil {
			return err
		}
	}
	return nil
}

func (c *cursor[T]) close() {
	if c.rows != nil {
		c.rows.Close()
	}
}
