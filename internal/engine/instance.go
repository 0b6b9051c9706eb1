package engine

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// instance is an in-memory DuckDB and its one connection, prepared with
// everything that does not depend on the query: limits, a spill directory
// of its own, file access confined to the Snapshot's pinned data
// (Snapshot.ReadableDirs), every mounted Dataset's schema with its six
// relations, and a locked configuration. A query then only points any view
// that differs at its own sources and fills the metadata tables it
// references (Engine.open): every statement costs DuckDB a fraction of a
// millisecond (allowed_directories several), so they are done ahead.
//
// Opening an instance costs DuckDB about 24 ms of CPU, which a server
// answering point queries in a few milliseconds cannot pay per query. So a
// query that ended cleanly hands its instance back (Engine.release) and a
// later query of the same Engine reuses it: the SQL that reaches it is one
// validated read-only statement, the configuration is locked and external
// access off, so no query can leave anything behind for the next but the
// views and metadata rows that every query sets for itself. An instance
// that saw an error, or served maxUses queries, is closed instead.
type instance struct {
	db    *sql.DB
	conn  *sql.Conn
	spill string
	views map[relKey]string // the body of every row relation's view
	// schema are set-up statements not run yet: the Dataset schemas of an
	// instance a query parses its SQL on before it makes them (newInstance).
	schema []string
	limits Limits
	uses   int
}

// maxUses bounds the queries one instance serves before it is replaced.
const maxUses = 1000

// pending is an instance being prepared in the background.
type pending struct {
	ready     chan struct{} // closed once inst is set (nil on failure)
	inst      *instance     // guarded by Engine.mu
	abandoned bool          // guarded by Engine.mu: close inst when ready
}

// abandon gives up a pending instance: whoever sees it last closes it.
func (e *Engine) abandon(p *pending) {
	e.mu.Lock()
	p.abandoned = true
	inst := p.inst
	e.mu.Unlock()
	if inst != nil {
		inst.close()
	}
}

// newInstance opens and prepares an instance with the given limits whose
// row relations are views with the given bodies (an empty typed scan where
// views has none). The sandbox comes first and is locked before anything
// else, so that the instance's parser may take user SQL while the schemas
// are still to be made: an engine without a parser of its own leaves them
// to the query that parses on it (inst.schema, Engine.Stream).
func (e *Engine) newInstance(ctx context.Context, views map[relKey]string, limits Limits) (*instance, error) {
	db, conn, err := e.connect(ctx, limits)
	if err != nil {
		return nil, err
	}
	inst := &instance{db: db, conn: conn, spill: e.snap.SpillDir(), views: map[relKey]string{}, limits: limits}
	setup := limits.instanceSettings(inst.spill)
	setup = append(setup, accessSettings(inst.spill, e.readable)...)
	setup = append(setup, lockConfiguration)
	var schema []string
	for _, d := range e.snap.Datasets {
		for _, rel := range rowRelations {
			k := relKey{d.Mount.Alias, rel}
			inst.views[k] = cmp.Or(views[k], emptyScan(rel))
		}
		schema = append(schema, schemaDDL(d.Mount.Alias, inst.views)...)
	}
	if e.cfg.Positional {
		schema = append(schema, "USE "+Ident(catalog.DefaultAlias))
	}
	if e.parser != nil {
		setup = append(setup, schema...)
	} else {
		inst.schema = schema
	}
	if err := inst.exec(ctx, setup); err != nil {
		inst.close()
		return nil, err
	}
	return inst, nil
}

// finish runs the set-up statements the instance still has to run.
func (inst *instance) finish(ctx context.Context) error {
	stmts := inst.schema
	inst.schema = nil
	return inst.exec(ctx, stmts)
}

// connect returns a worker's connection with the given limits: the one
// started before the engine when it has them, else a new one. DuckDB runs in
// a process of its own (worker.go).
func (e *Engine) connect(ctx context.Context, limits Limits) (*sql.DB, *sql.Conn, error) {
	e.mu.Lock()
	w := e.worker
	if w != nil && w.limits == limits {
		e.worker = nil
	} else {
		w = nil
	}
	e.mu.Unlock()
	if w != nil {
		select {
		case <-w.ready:
			w.stop() // releases the context; the connection outlives it
			if w.err == nil {
				return w.db, w.conn, nil
			}
			w.Close() // it failed to start: try once more
		case <-ctx.Done():
			w.Close()
			return nil, nil, ctx.Err()
		}
	}
	db := openWorkerDB(limits)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, conn, nil
}

// A Worker is a query worker started before the engine that will use it
// exists. A one-shot command starts it first, so that the worker's process
// start and DuckDB open — most of a short query's fixed cost — overlap the
// discovery of the Snapshot and the analysis of the SQL instead of
// following them (docs/performance.md, "Normalization cache").
type Worker struct {
	limits Limits
	ready  chan struct{} // closed once db and conn (or err) are set
	db     *sql.DB
	conn   *sql.Conn
	err    error
	stop   context.CancelFunc // kills a worker still starting
	once   sync.Once
}

// StartWorker starts a worker with the given limits in the background.
// Pass it in Config.Worker, or Close it when no engine is made.
func StartWorker(limits Limits) *Worker {
	ctx, stop := context.WithCancel(context.Background())
	w := &Worker{limits: limits, ready: make(chan struct{}), stop: stop}
	go func() {
		defer close(w.ready)
		w.db = openWorkerDB(limits)
		if w.conn, w.err = w.db.Conn(ctx); w.err != nil {
			w.db.Close()
			w.db = nil
		}
	}()
	return w
}

// Close stops the worker, without waiting for a worker still starting to
// open DuckDB: a command that fails before its query ends at once.
func (w *Worker) Close() {
	w.once.Do(func() {
		w.stop()
		<-w.ready
		if w.db != nil {
			w.conn.Close()
			w.db.Close()
		}
	})
}

// exec runs set-up statements in order, all in one round trip to the
// worker: one each cost a millisecond of waiting on the pipe, more than
// DuckDB takes to run most of them.
func (inst *instance) exec(ctx context.Context, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	err := inst.conn.Raw(func(conn any) error {
		w, ok := conn.(*worker)
		if !ok {
			return fmt.Errorf("an instance's connection is a %T, not a query worker", conn)
		}
		return w.execAll(ctx, stmts)
	})
	var se *statementError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("preparing query engine: %s: %w", firstLine(stmts[se.index]), se.err)
	case err != nil:
		return fmt.Errorf("preparing query engine: %w", err)
	}
	return nil
}

func (inst *instance) close() {
	inst.conn.Close()
	inst.db.Close()
	os.RemoveAll(inst.spill) // DuckDB removes it too; this covers a failed close
}

// fresh returns an instance with the given limits: an idle one a query
// handed back, else the spare when it has them (waiting for it when it is
// still being prepared, which is never slower than preparing another), or a
// new one with the given views.
func (e *Engine) fresh(ctx context.Context, views map[relKey]string, limits Limits) (*instance, error) {
	if limits != e.cfg.Limits {
		return e.newInstance(ctx, views, limits)
	}
	e.mu.Lock()
	if n := len(e.idle); n > 0 {
		inst := e.idle[n-1]
		e.idle = e.idle[:n-1]
		e.mu.Unlock()
		return inst, nil
	}
	p := e.spare
	e.spare = nil
	e.mu.Unlock()
	if p != nil {
		select {
		case <-p.ready:
			e.mu.Lock()
			inst := p.inst
			e.mu.Unlock()
			if inst != nil {
				return inst, nil
			}
		case <-ctx.Done():
			e.abandon(p)
			return nil, ctx.Err()
		}
	}
	return e.newInstance(ctx, views, limits)
}

// release takes an instance back after its query. One whose query ran to
// its end, with the engine's own limits, is kept idle for the next query
// (see instance); any other is closed in the background and, after a query
// that ran, the next query's instance is prepared with the same views, so
// that a repeated query runs no set-up statement at all.
func (e *Engine) release(inst *instance, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	inst.uses++
	if e.closed {
		inst.close()
		return
	}
	if ok && inst.limits == e.cfg.Limits && inst.uses < maxUses && len(e.idle) < e.maxIdle() {
		e.idle = append(e.idle, inst)
		return
	}
	e.closing.Add(1)
	go func() {
		defer e.closing.Done()
		inst.close()
	}()
	if ok {
		e.prepareLocked(inst.views)
	}
}

// maxIdle is how many instances the engine keeps for reuse: one per query
// the gate lets run at once.
func (e *Engine) maxIdle() int {
	if e.cfg.Gate != nil {
		return cap(e.cfg.Gate.slots)
	}
	return 1
}

// prepare starts preparing the next query's instance with the given views
// (nil: all empty) unless one is already being prepared.
func (e *Engine) prepare(views map[relKey]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prepareLocked(views)
}

func (e *Engine) prepareLocked(views map[relKey]string) {
	if e.closed || e.spare != nil {
		return
	}
	p := &pending{ready: make(chan struct{})}
	e.spare = p
	go func() {
		next, _ := e.newInstance(context.Background(), views, e.cfg.Limits) // on failure the query prepares its own
		e.mu.Lock()
		p.inst = next
		abandoned := p.abandoned
		e.mu.Unlock()
		close(p.ready)
		if abandoned && next != nil {
			next.close()
		}
	}()
}

// WaitPrepared waits until the instance the engine prepares ahead is ready
// (or ctx ends), so that a runtime can publish an engine whose first query
// does not wait for DuckDB to open.
func (e *Engine) WaitPrepared(ctx context.Context) {
	e.mu.Lock()
	p := e.spare
	e.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
	}
}

// Close closes the idle instances and the spare (when it is ready;
// otherwise its preparer does) and waits for used instances to close.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	p := e.spare
	e.spare = nil
	idle := e.idle
	e.idle = nil
	w := e.worker
	e.worker = nil
	e.mu.Unlock()
	if w != nil {
		w.Close()
	}
	for _, inst := range idle {
		inst.close()
	}
	if p != nil {
		e.abandon(p)
	}
	e.closing.Wait()
}
