package engine

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// QueryOptions are the per-query settings; zero values take the Engine's
// Limits.
type QueryOptions struct {
	// MaxRows caps the rows read (0: Limits.MaxOutputRows; negative: no
	// cap). One more row is an error (ErrTooManyRows) unless Truncate is
	// set, in which case reading stops and Rows.Truncated says so.
	MaxRows  int64
	Truncate bool
	Timeout  time.Duration // 0: Limits.Timeout; negative: none
	// MemoryLimit and Threads override the instance limits; a query with
	// its own cannot use the instance prepared ahead.
	MemoryLimit string
	Threads     int
	// Restrict narrows the sources read (source routing).
	Restrict Restriction
}

func (e *Engine) effective(o QueryOptions) (Limits, QueryOptions) {
	l := e.cfg.Limits
	if o.MemoryLimit != "" {
		l.MemoryLimit = o.MemoryLimit
	}
	if o.Threads > 0 {
		l.Threads = o.Threads
	}
	if o.MaxRows == 0 {
		o.MaxRows = l.MaxOutputRows
	}
	if o.Timeout == 0 {
		o.Timeout = l.Timeout
	}
	return l, o
}

// ErrTooManyRows is returned when a result exceeds its row cap.
var ErrTooManyRows = errors.New("result exceeds max_output_rows")

// RelationReport says, for one Dataset relation a query referenced, how many
// sources could provide it, how many pruning skipped and which were resolved,
// and whether the query reads none of its free-text columns (Lean: its
// peripheral files are normalized without them).
type RelationReport struct {
	Dataset    string   `json:"dataset"`
	Relation   string   `json:"relation"`
	Considered int      `json:"considered"`
	Skipped    int      `json:"skipped"`
	Resolved   []string `json:"resolved"`
	Lean       bool     `json:"lean,omitempty"`
}

// Result is a fully read query result.
type Result struct {
	Columns   []string
	Types     []string
	Rows      [][]any
	Pruning   []RelationReport
	Warnings  []string
	Truncated bool
}

// Query runs one read-only statement and reads its whole result.
func (e *Engine) Query(ctx context.Context, sqlText string, opts QueryOptions) (*Result, error) {
	rows, err := e.Stream(ctx, sqlText, opts)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := &Result{Columns: rows.Columns, Types: rows.Types, Pruning: rows.Pruning, Warnings: rows.Warnings}
	for rows.Next() {
		res.Rows = append(res.Rows, rows.Values())
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	res.Truncated = rows.Truncated()
	return res, nil
}

// Rows is a streamed query result: rows are read from DuckDB as the caller
// asks for them. It holds a DuckDB instance (and a Gate slot) until Close.
type Rows struct {
	Columns []string
	Types   []string
	Pruning []RelationReport
	// Warnings say what the query's sources skipped or left out (files
	// that are not trajectories, still being written, skipped unreadable),
	// summarized by reason.
	Warnings []string

	e         *Engine
	inst      *instance
	rows      *sql.Rows
	ctx       context.Context
	cancel    context.CancelFunc
	release   func()
	limits    Limits
	maxRows   int64
	truncate  bool
	n         int64
	vals      []any
	err       error
	truncated bool
	closed    bool
}

// Stream runs one read-only statement and returns its rows unread. The
// caller must Close them.
//
// An engine without a parser of its own parses the SQL on the instance that
// will run it, which its preparation locked down first (newInstance), and
// makes the instance's schemas while the query's sources resolve: a
// one-shot command then opens one DuckDB, not two.
func (e *Engine) Stream(ctx context.Context, sqlText string, opts QueryOptions) (_ *Rows, err error) {
	limits, opts := e.effective(opts)
	var cancel context.CancelFunc = func() {}
	if opts.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
	}
	release := func() {} // the Gate slot
	var inst *instance
	defer func() {
		if err != nil {
			if inst != nil {
				e.release(inst, false)
			}
			release()
			err = stopped(ctx, err, limits)
			cancel()
		}
	}()
	take := func(views map[relKey]string) error { // the Gate slot, then an instance
		slot, err := e.cfg.Gate.acquire(ctx)
		if err != nil {
			return err
		}
		release = slot
		inst, err = e.fresh(ctx, views, limits)
		return err
	}
	stopPrefetch := func(bool) {}
	defer func() { stopPrefetch(err != nil) }()
	if e.parser == nil {
		if opts.Restrict == nil {
			stopPrefetch = e.prefetch(ctx, sqlText)
		}
		if err = take(nil); err != nil {
			return nil, err
		}
	}
	an, err := e.analyze(ctx, inst, sqlText)
	if err != nil {
		return nil, err
	}
	var made chan error // the instance's schemas, made while the plan resolves
	if inst != nil && inst.schema != nil {
		made = make(chan error, 1)
		go func() { made <- inst.finish(ctx) }()
	}
	plan, err := e.planFor(ctx, an, opts.Restrict)
	if made != nil {
		err = cmp.Or(err, <-made)
	}
	if err != nil {
		return nil, err
	}
	if opts.Restrict == nil {
		e.remember(sqlText)
	}
	if inst == nil {
		if err = take(plan.views); err != nil {
			return nil, err
		}
	}
	if err = e.point(ctx, inst, plan); err != nil {
		return nil, err
	}
	sqlRows, err := inst.conn.QueryContext(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	cols, err := sqlRows.ColumnTypes()
	if err != nil {
		sqlRows.Close()
		return nil, err
	}
	r := &Rows{Pruning: plan.report(), Warnings: plan.warnings(), e: e, inst: inst, rows: sqlRows, ctx: ctx, cancel: cancel, release: release,
		limits: limits, maxRows: opts.MaxRows, truncate: opts.Truncate, vals: make([]any, len(cols))}
	for _, c := range cols {
		r.Columns = append(r.Columns, c.Name())
		r.Types = append(r.Types, c.DatabaseTypeName())
	}
	return r, nil
}

// stopped says that a query ended because its context did (the timeout or
// the caller), rather than with DuckDB's own message for an interrupt, and
// classifies DuckDB's other errors.
func stopped(ctx context.Context, err error, l Limits) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("query stopped: %w", ctx.Err())
	}
	return classify(err, l)
}

// Next reads the next row; false at the end, at the row cap, or on error.
func (r *Rows) Next() bool {
	if r.closed || r.err != nil || r.truncated {
		return false
	}
	if !r.rows.Next() {
		r.err = r.rows.Err()
		if r.err != nil {
			r.err = stopped(r.ctx, r.err, r.limits)
		}
		return false
	}
	if r.maxRows > 0 && r.n >= r.maxRows {
		if r.truncate {
			r.truncated = true
		} else {
			r.err = fmt.Errorf("%w (%d); add a LIMIT or raise the limit", ErrTooManyRows, r.maxRows)
		}
		return false
	}
	ptrs := make([]any, len(r.vals))
	vals := make([]any, len(r.vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := r.rows.Scan(ptrs...); err != nil {
		r.err = stopped(r.ctx, err, r.limits)
		return false
	}
	for i, v := range vals {
		vals[i] = plainValue(v)
	}
	r.vals = vals
	r.n++
	return true
}

// Values returns the current row, as JSON-friendly Go values. The slice is
// the caller's: a later Next does not reuse it.
func (r *Rows) Values() []any { return r.vals }

// Err returns the error that ended reading, if any.
func (r *Rows) Err() error { return r.err }

// Truncated reports whether reading stopped at the row cap with rows left.
func (r *Rows) Truncated() bool { return r.truncated }

// Close releases the instance and the Gate slot. It is safe to call twice.
func (r *Rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.rows.Close()
	r.cancel()
	r.e.release(r.inst, r.err == nil)
	r.release()
	return err
}
