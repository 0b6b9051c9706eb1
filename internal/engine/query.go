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
	*running
	Columns []string
	Types   []string

	rows *sql.Rows
	vals []any
}

// Stream runs one read-only statement and returns its rows unread. The
// caller must Close them.
func (e *Engine) Stream(ctx context.Context, sqlText string, opts QueryOptions) (*Rows, error) {
	var r *Rows
	err := e.run(ctx, sqlText, opts, func(q *running) error {
		sqlRows, err := q.inst.conn.QueryContext(q.ctx, sqlText)
		if err != nil {
			return err
		}
		cols, err := sqlRows.ColumnTypes()
		if err != nil {
			sqlRows.Close()
			return err
		}
		r = &Rows{running: q, rows: sqlRows, vals: make([]any, len(cols))}
		for _, c := range cols {
			r.Columns = append(r.Columns, c.Name())
			r.Types = append(r.Types, c.DatabaseTypeName())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// running is a query started on its instance: what its result, in rows
// (Rows) or Arrow record batches (ArrowRows), holds until Close, and the
// row cap both apply the same way.
type running struct {
	Pruning []RelationReport
	// Warnings say what the query's sources skipped or left out (files
	// that are not trajectories, still being written, skipped unreadable),
	// summarized by reason.
	Warnings []string

	e         *Engine
	inst      *instance
	ctx       context.Context
	cancel    context.CancelFunc
	release   func()
	limits    Limits
	maxRows   int64
	truncate  bool
	n         int64
	err       error
	truncated bool
	closed    bool
}

// run prepares sqlText's query — its analysis, plan and instance — and
// calls start to run it there. An engine without a parser of its own parses
// the SQL on the instance that will run it, which its preparation locked
// down first (newInstance), and makes the instance's schemas while the
// query's sources resolve: a one-shot command then opens one DuckDB, not
// two. If run fails, what it took is released.
func (e *Engine) run(ctx context.Context, sqlText string, opts QueryOptions, start func(*running) error) (err error) {
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
			return err
		}
	}
	an, err := e.analyze(ctx, inst, sqlText)
	if err != nil {
		return err
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
		return err
	}
	if opts.Restrict == nil {
		e.remember(sqlText)
	}
	if inst == nil {
		if err = take(plan.views); err != nil {
			return err
		}
	}
	if err = e.point(ctx, inst, plan); err != nil {
		return err
	}
	return start(&running{Pruning: plan.report(), Warnings: plan.warnings(), e: e, inst: inst, ctx: ctx, cancel: cancel, release: release,
		limits: limits, maxRows: opts.MaxRows, truncate: opts.Truncate})
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
	if r.capped() {
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

// Close releases the instance and the Gate slot. It is safe to call twice.
func (r *Rows) Close() error {
	if r.closed {
		return nil
	}
	err := r.rows.Close()
	r.end()
	return err
}

// capped reports whether the row cap ends reading before one more row:
// the result is truncated, or over its cap (an error).
func (q *running) capped() bool {
	if q.maxRows <= 0 || q.n < q.maxRows {
		return false
	}
	if q.truncate {
		q.truncated = true
	} else {
		q.err = fmt.Errorf("%w (%d); add a LIMIT or raise the limit", ErrTooManyRows, q.maxRows)
	}
	return true
}

// Err returns the error that ended reading, if any.
func (q *running) Err() error { return q.err }

// Truncated reports whether reading stopped at the row cap with rows left.
func (q *running) Truncated() bool { return q.truncated }

// end releases the instance (for reuse if the query ended cleanly) and the
// Gate slot, once the result is closed.
func (q *running) end() {
	q.closed = true
	q.cancel()
	q.e.release(q.inst, q.err == nil)
	q.release()
}
