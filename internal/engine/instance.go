package engine

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// instance is a fresh in-memory DuckDB and its one connection, prepared
// with everything that does not depend on the query: limits, a spill
// directory of its own, file access confined to the Snapshot's pinned data
// (Snapshot.ReadableDirs), every mounted Dataset's schema with its six
// relations, and a locked configuration. A query then only points any view
// that differs at its own sources and fills the metadata tables it
// references (Engine.open): every statement costs DuckDB a fraction of a
// millisecond (allowed_directories several), so they are done ahead.
type instance struct {
	db    *sql.DB
	conn  *sql.Conn
	spill string
	views map[relKey]string // the body of every row relation's view
}

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
// views has none).
func (e *Engine) newInstance(ctx context.Context, views map[relKey]string, limits Limits) (*instance, error) {
	db := openWorkerDB(limits) // DuckDB runs in a process of its own (worker.go)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	inst := &instance{db: db, conn: conn, spill: e.snap.SpillDir(), views: map[relKey]string{}}
	setup := limits.instanceSettings(inst.spill)
	for _, d := range e.snap.Datasets {
		for _, rel := range rowRelations {
			k := relKey{d.Mount.Alias, rel}
			inst.views[k] = cmp.Or(views[k], emptyScan(rel))
		}
		setup = append(setup, schemaDDL(d.Mount.Alias, inst.views)...)
	}
	if e.cfg.Positional {
		setup = append(setup, "USE "+Ident(catalog.DefaultAlias))
	}
	// Locking comes last but before the query's own statements: those only
	// create views and fill tables, which a locked configuration allows.
	setup = append(setup, accessSettings(inst.spill, e.readable)...)
	setup = append(setup, lockConfiguration)
	if err := inst.exec(ctx, setup); err != nil {
		inst.close()
		return nil, err
	}
	return inst, nil
}

func (inst *instance) exec(ctx context.Context, stmts []string) error {
	for _, stmt := range stmts {
		if _, err := inst.conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("preparing query engine: %s: %w", firstLine(stmt), err)
		}
	}
	return nil
}

func (inst *instance) close() {
	inst.conn.Close()
	inst.db.Close()
	os.RemoveAll(inst.spill) // DuckDB removes it too; this covers a failed close
}

// fresh returns an instance with the given limits that no query has used:
// the spare when it has them (waiting for it when it is still being
// prepared, which is never slower than preparing another), or a new one
// with the given views.
func (e *Engine) fresh(ctx context.Context, views map[relKey]string, limits Limits) (*instance, error) {
	if limits != e.cfg.Limits {
		return e.newInstance(ctx, views, limits)
	}
	e.mu.Lock()
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

// release closes a used instance and, after a query that ran, prepares
// the next query's instance with the same views, so that a repeated query
// runs no set-up statement at all. Both happen in the background: the
// result has already been read.
func (e *Engine) release(inst *instance, prepare bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		inst.close()
		return
	}
	e.closing.Add(1)
	go func() {
		defer e.closing.Done()
		inst.close()
	}()
	if prepare {
		e.prepareLocked(inst.views)
	}
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

// Close closes the spare (when it is ready; otherwise its preparer does)
// and waits for used instances to close.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	p := e.spare
	e.spare = nil
	e.mu.Unlock()
	if p != nil {
		e.abandon(p)
	}
	e.closing.Wait()
}
