// Package engine runs read-only SQL over a Snapshot (DECISIONS §2). Per
// query it validates the SQL, prunes sources by their constant _file_,
// resolves only the candidates, and builds a fresh sandboxed in-memory DuckDB
// whose Dataset schemas hold the six relations as views over exactly the
// resolved Parquet files. The user's SQL runs unchanged, so pruning can make
// a query faster but never change its result.
package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/query"
)

// Engine answers queries over one Snapshot. Constructing it resolves
// nothing.
type Engine struct {
	snap   *catalog.Snapshot
	parser *query.Parser
	// positional mounts the single Dataset as the default schema "dataset".
	positional bool
	// NoPruning resolves every source that can provide a referenced
	// relation. Results must be identical either way; tests compare them.
	NoPruning bool

	// spare holds one fresh, never-configured DuckDB instance opened in the
	// background after a query, so the next query does not wait for an
	// instance to start (about 20 ms). It is exactly as fresh as one
	// opened on demand.
	spare  chan *sql.DB
	mu     sync.Mutex // guards closed against the background opener
	closed bool
}

// New returns an engine over snap. parser may be shared between engines.
func New(snap *catalog.Snapshot, parser *query.Parser, positional bool) *Engine {
	return &Engine{snap: snap, parser: parser, positional: positional, spare: make(chan *sql.DB, 1)}
}

// Close releases the spare instance. It does not wait for a background
// open: that instance is closed by its opener.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	select {
	case db := <-e.spare:
		db.Close()
	default:
	}
}

// freshDB returns a new in-memory DuckDB instance (the spare when one is
// ready) and starts opening the next spare.
func (e *Engine) freshDB() (*sql.DB, error) {
	var db *sql.DB
	select {
	case db = <-e.spare:
	default:
		var err error
		if db, err = sql.Open("duckdb", ""); err != nil {
			return nil, err
		}
	}
	go func() {
		next, err := sql.Open("duckdb", "")
		if err != nil {
			return
		}
		if c, err := next.Conn(context.Background()); err == nil {
			c.Close() // the instance and an idle connection are ready
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		select {
		case e.spare <- next:
			if !e.closed {
				return
			}
			<-e.spare
		default:
		}
		next.Close()
	}()
	return db, nil
}

// Result is a fully read query result.
type Result struct {
	Columns []string
	Types   []string
	Rows    [][]any
	Pruning []RelationReport
}

// RelationReport says, for one Dataset relation a query referenced, how many
// sources could provide it, how many pruning skipped and which were resolved.
type RelationReport struct {
	Dataset    string
	Relation   string
	Considered int
	Skipped    int
	Resolved   []string
}

// ErrTooManyRows is returned when a result exceeds max_output_rows.
var ErrTooManyRows = errors.New("result exceeds max_output_rows")

// Query runs one read-only statement.
func (e *Engine) Query(ctx context.Context, sqlText string) (*Result, error) {
	opts := e.snap.Options
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	aliases := make([]string, len(e.snap.Datasets))
	for i, d := range e.snap.Datasets {
		aliases[i] = d.Mount.Alias
	}
	an, err := e.parser.Analyze(ctx, sqlText, query.AnalyzeOptions{Datasets: aliases, Default: e.positional})
	if err != nil {
		return nil, err
	}
	plan := e.plan(an)
	if err := e.resolve(ctx, plan); err != nil {
		return nil, err
	}
	db, conn, err := e.open(ctx, plan)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	res, err := run(ctx, conn, sqlText, opts.MaxOutputRows)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("query stopped: %w", ctx.Err())
		}
		return nil, err
	}
	res.Pruning = plan.report()
	return res, nil
}

// plan is the set of sources each Dataset relation reads in one query.
type plan struct {
	rels map[relKey]*relPlan
	meta map[relKey]bool // referenced metadata relations (sources, projections)
}

type relKey struct{ dataset, relation string }

type relPlan struct {
	considered int
	sources    []*catalog.Source
	resolved   []*catalog.Resolved
	// sessions bounds the session ids every reference to the relation can
	// read (nil: unbounded), for directed canonical-event fallbacks.
	sessions []string
}

// plan prunes: for every referenced Dataset relation, the sources that can
// provide it and whose constant _file_ may satisfy some reference's filter.
// Nothing is opened to decide (spec invariant 11). DESCRIBE needs only the
// fixed schemas, so it reads no source.
func (e *Engine) plan(an *query.Analysis) *plan {
	p := &plan{rels: map[relKey]*relPlan{}, meta: map[relKey]bool{}}
	for _, ref := range an.Refs {
		k := relKey{ref.Dataset, ref.Relation}
		if !isRowRelation(ref.Relation) {
			p.meta[k] = true
			continue
		}
		if _, done := p.rels[k]; done {
			continue
		}
		rp := &relPlan{sessions: an.SessionBound(ref.Dataset, ref.Relation)}
		p.rels[k] = rp
		ds, ok := e.snap.Dataset(ref.Dataset)
		if !ok || an.Kind == query.KindDescribe {
			continue
		}
		for _, src := range ds.Sources {
			if !src.Provides(ref.Relation) {
				continue
			}
			rp.considered++
			if e.NoPruning || an.MayRead(ref.Dataset, ref.Relation, src.File) {
				rp.sources = append(rp.sources, src)
			}
		}
	}
	return p
}

func isRowRelation(rel string) bool {
	switch rel {
	case model.RelRuns, model.RelSteps, model.RelToolCalls, model.RelEvents:
		return true
	}
	return false
}

// resolve resolves every planned source in stable order, at most
// max_concurrent_sources at a time. Any error fails the query: a source that
// is ready in the Snapshot is never silently dropped (spec §8).
func (e *Engine) resolve(ctx context.Context, p *plan) error {
	type job struct {
		rel string
		rp  *relPlan
		i   int
	}
	// Unresolved peripheral files are normalized together into shared
	// scratch files first, one batch per Dataset (_file_ is unique only
	// within a Dataset); the per-source calls below then hit the cache.
	files := map[string][]*catalog.Source{}
	seen := map[*catalog.Source]bool{}
	for _, k := range p.keys() {
		if k.relation == model.RelEvents {
			continue
		}
		for _, src := range p.rels[k].sources {
			if src.Kind == catalog.KindFile && !seen[src] {
				seen[src] = true
				files[k.dataset] = append(files[k.dataset], src)
			}
		}
	}
	for _, srcs := range files {
		if len(srcs) < 2 {
			continue
		}
		if err := e.snap.ResolveFiles(ctx, srcs); err != nil && ctx.Err() != nil {
			return err
		}
	}
	var jobs []job
	for _, k := range p.keys() {
		rp := p.rels[k]
		rp.resolved = make([]*catalog.Resolved, len(rp.sources))
		for i := range rp.sources {
			jobs = append(jobs, job{k.relation, rp, i})
		}
	}
	sem := make(chan struct{}, e.snap.Options.MaxConcurrentSources)
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for n, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			j.rp.resolved[j.i], errs[n] = j.rp.sources[j.i].ResolveSessions(ctx, j.rel, j.rp.sessions)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *plan) keys() []relKey {
	keys := make([]relKey, 0, len(p.rels))
	for k := range p.rels {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].dataset != keys[j].dataset {
			return keys[i].dataset < keys[j].dataset
		}
		return keys[i].relation < keys[j].relation
	})
	return keys
}

func (p *plan) report() []RelationReport {
	var out []RelationReport
	for _, k := range p.keys() {
		rp := p.rels[k]
		r := RelationReport{Dataset: k.dataset, Relation: k.relation, Considered: rp.considered, Skipped: rp.considered - len(rp.sources)}
		for _, s := range rp.sources {
			r.Resolved = append(r.Resolved, s.File)
		}
		out = append(out, r)
	}
	return out
}

// quote returns s as a SQL string literal.
func quote(s string) string { return catalog.SQLString(s) }

// Ident returns s as a quoted SQL identifier.
func Ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
