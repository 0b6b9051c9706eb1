package catalog

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver

	"github.com/pchronicle/pchronicle/internal/model"
)

// The control-plane API of a Snapshot (spec §10): read one Storyline by its
// full identity (dataset, _file_, session_id), and page through namespaces
// and sources. Everything answers from the pinned Snapshot; nothing is
// rediscovered, so one response never splices two versions.

// ErrNotFound is wrapped by every API error about a Dataset, source or
// Storyline that the Snapshot does not hold.
var ErrNotFound = errors.New("not found")

// ErrPageToken is wrapped by every page-token error (see PageTokenError).
var ErrPageToken = errors.New("invalid page token")

// PageTokenError rejects a page token that is malformed, belongs to another
// listing, or was issued by another Snapshot (Stale): tokens cannot be
// reused after a refresh, because offsets into another member list would
// skip or repeat sources.
type PageTokenError struct {
	Reason string
	Stale  bool
}

func (e *PageTokenError) Error() string { return "invalid page token: " + e.Reason }

// Is makes errors.Is(err, ErrPageToken) hold.
func (e *PageTokenError) Is(target error) bool { return target == ErrPageToken }

// Page sizes of the listing calls.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// pageToken is the decoded form of an opaque page token: the Snapshot and
// listing it belongs to and the offset of the next item.
type pageToken struct {
	Snapshot string `json:"s"`
	Listing  string `json:"l"`
	Offset   int    `json:"o"`
}

func (s *Snapshot) encodeToken(listing string, offset int) string {
	b, _ := json.Marshal(pageToken{Snapshot: s.ID, Listing: listing, Offset: offset}) // cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken returns the offset a token resumes at ("" starts at 0),
// rejecting tokens of other Snapshots or listings and offsets outside
// [0, total).
func (s *Snapshot) decodeToken(token, listing string, total int) (int, error) {
	if token == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, &PageTokenError{Reason: "not a token issued by pchronicle"}
	}
	var t pageToken
	if err := json.Unmarshal(raw, &t); err != nil || t.Snapshot == "" {
		return 0, &PageTokenError{Reason: "not a token issued by pchronicle"}
	}
	if t.Snapshot != s.ID {
		return 0, &PageTokenError{Stale: true, Reason: fmt.Sprintf("issued by Snapshot %s, not %s; restart the listing", t.Snapshot, s.ID)}
	}
	if t.Listing != listing {
		return 0, &PageTokenError{Reason: fmt.Sprintf("issued for listing %q, not %q", t.Listing, listing)}
	}
	if t.Offset <= 0 || t.Offset >= total {
		return 0, &PageTokenError{Reason: fmt.Sprintf("offset %d out of range", t.Offset)}
	}
	return t.Offset, nil
}

// page cuts [offset, offset+size) out of n items and returns the bounds and
// the next token ("" on the last page).
func (s *Snapshot) page(listing string, n, pageSize int, token string) (lo, hi int, next string, err error) {
	lo, err = s.decodeToken(token, listing, n)
	if err != nil {
		return 0, 0, "", err
	}
	switch {
	case pageSize <= 0:
		pageSize = DefaultPageSize
	case pageSize > MaxPageSize:
		pageSize = MaxPageSize
	}
	hi = min(lo+pageSize, n)
	if hi < n {
		next = s.encodeToken(listing, hi)
	}
	return lo, hi, next, nil
}

// ListNamespaces pages through the namespace paths of the mounted Datasets
// ("team/prod"), in byte order. pageSize <= 0 means DefaultPageSize; more
// than MaxPageSize is capped.
func (s *Snapshot) ListNamespaces(pageSize int, pageToken string) (items []string, next string, err error) {
	all := make([]string, len(s.Datasets))
	for i, d := range s.Datasets {
		all[i] = d.Mount.NamespacePath()
	}
	sort.Strings(all)
	lo, hi, next, err := s.page("namespaces", len(all), pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	return all[lo:hi], next, nil
}

// ListSources pages through one Dataset's sources in the Snapshot's stable
// source order. dataset is a namespace path or a SQL alias.
func (s *Snapshot) ListSources(dataset string, pageSize int, pageToken string) ([]model.SourceRow, string, error) {
	d, err := s.lookupDataset(dataset)
	if err != nil {
		return nil, "", err
	}
	lo, hi, next, err := s.page("sources:"+d.Mount.NamespacePath(), len(d.Sources), pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	return d.SourceRows()[lo:hi], next, nil
}

// DescribeSource returns the sources row of one source.
func (s *Snapshot) DescribeSource(dataset, file string) (model.SourceRow, error) {
	d, err := s.lookupDataset(dataset)
	if err != nil {
		return model.SourceRow{}, err
	}
	for i, r := range d.SourceRows() {
		if d.Sources[i].File == file {
			return r, nil
		}
	}
	return model.SourceRow{}, fmt.Errorf("Dataset %s: source %q: %w", d.Mount.NamespacePath(), file, ErrNotFound)
}

// lookupDataset finds a Dataset by namespace path, else by SQL alias (the
// two are separate fields; the namespace wins if both could match).
func (s *Snapshot) lookupDataset(name string) (*Dataset, error) {
	for _, d := range s.Datasets {
		if d.Mount.NamespacePath() == name {
			return d, nil
		}
	}
	if d, ok := s.Dataset(name); ok {
		return d, nil
	}
	return nil, fmt.Errorf("Dataset %q: %w", name, ErrNotFound)
}

// LookupSource finds a source by Dataset (namespace path or alias) and
// _file_.
func (s *Snapshot) LookupSource(dataset, file string) (*Source, error) {
	d, err := s.lookupDataset(dataset)
	if err != nil {
		return nil, err
	}
	for _, src := range d.Sources {
		if src.File == file {
			return src, nil
		}
	}
	return nil, fmt.Errorf("Dataset %s: source %q: %w", d.Mount.NamespacePath(), file, ErrNotFound)
}

// LoadStoryline reads exactly one Storyline — its runs, steps and tool_calls
// rows — through the pinned source. Its _file_ columns hold the source's
// Dataset-relative path, as in SQL. Warnings raised while normalizing are
// not stored with the rows, so the result has none.
func (s *Snapshot) LoadStoryline(ctx context.Context, dataset, file, sessionID string) (*model.Storyline, error) {
	var found []*model.Storyline
	err := s.EachStoryline(ctx, dataset, file, StorylineFilter{Sessions: []string{sessionID}}, func(sl *model.Storyline) error {
		found = append(found, sl)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("Storyline (%s, %s, %s): %w", dataset, file, sessionID, ErrNotFound)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("Storyline (%s, %s, %s) is ambiguous: the store holds %d Storylines with that session_id (imported from different files)",
		dataset, file, sessionID, len(found))
}

// LoadEvents returns the canonical events of one session of a canonical
// events source, in seq order, read from the pinned revision. Only
// canonical events sources have events: they are never forged from a
// Storyline (spec invariant 6).
func (s *Snapshot) LoadEvents(ctx context.Context, dataset, file, sessionID string) ([]model.Event, error) {
	src, err := s.eventsSource(dataset, file)
	if err != nil {
		return nil, err
	}
	var out []model.Event
	want := map[string]bool{sessionID: true}
	rev, err := src.pinnedEvents(ctx, want) // remote.go: local revision, or the remote segments that may hold it
	if err != nil {
		return nil, err
	}
	err = rev.ScanSessions(ctx, map[string]bool{sessionID: true}, func(_ string, evs []model.Event) error {
		out = append(out, evs...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", file, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("session %q in events source %s: %w", sessionID, file, ErrNotFound)
	}
	for i := range out {
		out[i].File = src.File
	}
	return out, nil
}

// CanonicalEventURI returns where a Storyline of a canonical events source
// physically lives: the store's absolute path plus "#session=<id>" (the id
// query-escaped). It does not check that the session has events yet, so a
// writer can use it for a new session.
func (s *Snapshot) CanonicalEventURI(dataset, file, sessionID string) (string, error) {
	if sessionID == "" {
		return "", errors.New("empty session_id")
	}
	src, err := s.eventsSource(dataset, file)
	if err != nil {
		return "", err
	}
	return src.Path + "#session=" + url.QueryEscape(sessionID), nil
}

// eventsSource finds a ready canonical events source.
func (s *Snapshot) eventsSource(dataset, file string) (*Source, error) {
	src, err := s.LookupSource(dataset, file)
	if err != nil {
		return nil, err
	}
	if src.Kind != KindEvents && src.Kind != KindCompact {
		return nil, fmt.Errorf("source %s is a %s source: canonical events exist only in events stores (events.lance) and compact sources", file, src.Kind)
	}
	if src.Err != nil {
		return nil, fmt.Errorf("source %s: %w", file, src.Err)
	}
	return src, nil
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

// EachStoryline calls fn with every Storyline of one source that f selects,
// in session_id order, reading the source's resolved Parquet files in a
// private sandboxed DuckDB. Rows stream: only the current Storyline is held
// in memory. The _file_ columns hold the source's Dataset-relative path.
func (s *Snapshot) EachStoryline(ctx context.Context, dataset, file string, f StorylineFilter, fn func(*model.Storyline) error) error {
	src, err := s.LookupSource(dataset, file)
	if err != nil {
		return err
	}
	res, err := src.Resolve(ctx, model.RelRuns)
	if err != nil {
		return err
	}
	db, cleanup, err := s.openReader(ctx, res.Dirs)
	if err != nil {
		return fmt.Errorf("source %s: %w", file, err)
	}
	defer cleanup()
	where, args := f.where()
	if res.Owners != nil {
		// Files shared with other sources (Snapshot.ResolveFiles): rows of
		// file sources carry their own _file_.
		where += " AND _file_ = ?"
		args = append(args, src.File)
	}
	runs, err := openCursor(ctx, db, model.RelRuns, res, where, args, runKey)
	if err != nil {
		return fmt.Errorf("source %s: %w", file, err)
	}
	defer runs.close()
	steps, err := openCursor(ctx, db, model.RelSteps, res, where, args, stepKey)
	if err != nil {
		return fmt.Errorf("source %s: %w", file, err)
	}
	defer steps.close()
	calls, err := openCursor(ctx, db, model.RelToolCalls, res, where, args, callKey)
	if err != nil {
		return fmt.Errorf("source %s: %w", file, err)
	}
	defer calls.close()
	for runs.row != nil {
		sl := &model.Storyline{Run: *runs.row}
		k := runKey(runs.row)
		if err := steps.take(k, func(r *model.Step) { sl.Steps = append(sl.Steps, *r) }); err != nil {
			return fmt.Errorf("source %s: %w", file, err)
		}
		if err := calls.take(k, func(r *model.ToolCall) { sl.ToolCalls = append(sl.ToolCalls, *r) }); err != nil {
			return fmt.Errorf("source %s: %w", file, err)
		}
		setFile(sl, src.File)
		if err := fn(sl); err != nil {
			return err
		}
		if err := runs.advance(); err != nil {
			return fmt.Errorf("source %s: %w", file, err)
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

// openReader opens a private in-memory DuckDB that may read only dirs (and
// spill to a scratch directory of the Snapshot), with the Snapshot's memory
// and thread limits and a locked configuration: the same walls as the query
// engine, for a reader that never runs user SQL.
func (s *Snapshot) openReader(ctx context.Context, dirs []string) (*sql.DB, func(), error) {
	spill := s.SpillDir()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		db.Close()
		os.RemoveAll(spill)
	}
	setup := append(s.Options.SandboxSettings(spill, dirs), LockConfiguration)
	for _, stmt := range setup {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("preparing reader: %s: %w", stmt, err)
		}
	}
	return db, cleanup, nil
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

// cursor streams one relation's rows in Storyline-key order, decoded into
// the model struct whose fields are the relation's columns in order.
type cursor[T any] struct {
	rows *sql.Rows
	row  *T // current row; nil at the end
	key  func(*T) storyKey
}

// orderBy lists each relation's sort columns: the Storyline key, then the
// row's position in its Storyline.
var orderBy = map[string]string{
	model.RelRuns:      "session_id, _file_",
	model.RelSteps:     "session_id, _file_, step_index",
	model.RelToolCalls: "session_id, _file_, call_index",
}

func openCursor[T any](ctx context.Context, db *sql.DB, rel string, res *Resolved, where string, args []any, key func(*T) storyKey) (*cursor[T], error) {
	c := &cursor[T]{key: key}
	files := res.Files[rel]
	if len(files) == 0 {
		return c, nil
	}
	cols := make([]string, 0, len(model.Schemas[rel]))
	for _, col := range model.Schemas[rel] {
		cols = append(cols, res.Select(col))
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = SQLString(f)
	}
	// ORDER BY uses DuckDB's default binary collation, the same byte order
	// as storyKey.compare, so the three cursors merge correctly.
	q := fmt.Sprintf("SELECT %s FROM read_parquet([%s]) WHERE %s ORDER BY %s",
		strings.Join(cols, ", "), strings.Join(quoted, ", "), where, orderBy[rel])
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
		switch d := c.key(c.row).compare(k); {
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

var timeType = reflect.TypeOf(time.Time{})

// scanStruct scans the current row into dst's fields in order: NULL leaves
// a pointer nil, timestamps become UTC, integers of any width convert.
func scanStruct(rows *sql.Rows, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	vals := make([]any, v.NumField())
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	for i, val := range vals {
		if val == nil {
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.Pointer {
			p := reflect.New(f.Type().Elem())
			f.Set(p)
			f = p.Elem()
		}
		if err := setValue(f, val); err != nil {
			return fmt.Errorf("column %d (%s): %w", i, v.Type().Field(i).Name, err)
		}
	}
	return nil
}

func setValue(f reflect.Value, val any) error {
	if t, ok := val.(time.Time); ok && f.Type() == timeType {
		f.Set(reflect.ValueOf(t.UTC()))
		return nil
	}
	rv := reflect.ValueOf(val)
	switch {
	case rv.Type() == f.Type():
		f.Set(rv)
	case rv.CanInt() && f.CanInt():
		f.SetInt(rv.Int())
	case rv.CanFloat() && f.CanFloat():
		f.SetFloat(rv.Float())
	case f.Kind() == reflect.String:
		if b, ok := val.([]byte); ok {
			f.SetString(string(b))
			return nil
		}
		return fmt.Errorf("cannot store %T in %s", val, f.Type())
	default:
		return fmt.Errorf("cannot store %T in %s", val, f.Type())
	}
	return nil
}
