// Package engine runs read-only SQL over a Snapshot (docs/sql.md). Per
// query it validates the SQL, prunes sources by their constant _file_,
// resolves only the candidates, and builds a fresh sandboxed in-memory DuckDB
// whose Dataset schemas hold the six relations as views over exactly the
// resolved Parquet files. The user's SQL runs unchanged, so pruning can make
// a query faster but never change its result.
package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/errlist"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/query"
)

// Engine answers queries over one Snapshot. Constructing it resolves
// nothing. It is safe for concurrent use.
type Engine struct {
	snap   *catalog.Snapshot
	parser *query.Parser
	cfg    Config
	// NoPruning resolves every source that can provide a referenced
	// relation. Results must be identical either way; tests compare them.
	NoPruning bool
	// NoLean normalizes peripheral files whole even for a query that reads
	// none of a relation's free-text columns (catalog.LeanPart). Results
	// must be identical either way; tests compare them.
	NoLean bool

	// spare is the next query's instance, prepared in the background
	// (instance.go); nil when none is being prepared.
	spare   *pending
	idle    []*instance // instances handed back for reuse (instance.go)
	worker  *Worker     // started before the engine, until an instance takes it
	mu      sync.Mutex  // guards spare, idle, worker, closed, analyses and plans
	closed  bool
	closing sync.WaitGroup // used instances being closed in the background

	readable []string // Snapshot.ReadableDirs

	// analyses caches the analysis of recent SQL texts: it depends only on
	// the text and the mounted aliases, which are fixed for the Engine.
	// plans caches their resolved plans (see planFor).
	analyses map[string]*query.Analysis
	plans    map[*query.Analysis]*plan
	// recent are the texts of the latest queries planned without a
	// restriction, oldest first (Warm).
	recent []string
}

// Config sets up an Engine.
type Config struct {
	// Positional mounts the single Dataset as the default schema
	// "dataset": unqualified relation names resolve to it.
	Positional bool
	// Limits are the defaults of every query (QueryOptions overrides).
	Limits Limits
	// Gate, when set, bounds how many DuckDB instances run queries at once
	// across every Engine that shares it.
	Gate *Gate
	// Worker, when set, is a worker started before the engine (StartWorker);
	// the engine's first instance runs in it if it has the engine's Limits,
	// and the engine closes it either way.
	Worker *Worker
}

// New returns an engine over snap. parser may be shared between engines;
// with none, each query's SQL is parsed on the DuckDB instance that runs it
// (Stream), which suits a one-shot command. It starts preparing an instance
// in the background but resolves nothing.
func New(snap *catalog.Snapshot, parser *query.Parser, cfg Config) *Engine {
	e := &Engine{snap: snap, parser: parser, cfg: cfg, worker: cfg.Worker, readable: snap.ReadableDirs(), analyses: map[string]*query.Analysis{}, plans: map[*query.Analysis]*plan{}}
	e.prepare(nil) // the first query's instance starts while it is analyzed and resolved
	return e
}

// Snapshot returns the Snapshot the engine queries.
func (e *Engine) Snapshot() *catalog.Snapshot { return e.snap }

// Limits returns the engine's default query limits.
func (e *Engine) Limits() Limits { return e.cfg.Limits }

// Analyze validates sqlText for this engine's Datasets, as a query would,
// reusing the analysis of an identical text.
func (e *Engine) Analyze(ctx context.Context, sqlText string) (*query.Analysis, error) {
	return e.analyze(ctx, nil, sqlText)
}

// maxCachedAnalyses bounds Engine.analyses (it is emptied when full).
const maxCachedAnalyses = 256

// analyze validates sqlText (see query.Parser.Analyze), reusing the
// analysis of an identical text. An engine without a parser parses on inst,
// the query's instance, or else on an instance it then hands back.
func (e *Engine) analyze(ctx context.Context, inst *instance, sqlText string) (*query.Analysis, error) {
	e.mu.Lock()
	an := e.analyses[sqlText]
	e.mu.Unlock()
	if an != nil {
		return an, nil
	}
	aliases := make([]string, len(e.snap.Datasets))
	for i, d := range e.snap.Datasets {
		aliases[i] = d.Mount.Alias
	}
	opts := query.AnalyzeOptions{Datasets: aliases, Default: e.cfg.Positional}
	var err error
	switch {
	case e.parser != nil:
		an, err = e.parser.Analyze(ctx, sqlText, opts)
	case inst != nil:
		an, err = query.AnalyzeOn(ctx, inst.conn, sqlText, opts)
	default:
		if inst, err = e.fresh(ctx, nil, e.cfg.Limits); err != nil {
			return nil, err
		}
		an, err = query.AnalyzeOn(ctx, inst.conn, sqlText, opts)
		var rejected *query.ValidationError
		e.release(inst, err == nil || errors.As(err, &rejected)) // parsing changed nothing
	}
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if len(e.analyses) >= maxCachedAnalyses {
		clear(e.analyses)
		clear(e.plans)
	}
	e.analyses[sqlText] = an
	e.mu.Unlock()
	return an, nil
}

// maxRecent bounds Engine.recent.
const maxRecent = 4

// remember records sqlText as the latest query planned.
func (e *Engine) remember(sqlText string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recent = slices.DeleteFunc(e.recent, func(t string) bool { return t == sqlText })
	if len(e.recent) == maxRecent {
		e.recent = e.recent[1:]
	}
	e.recent = append(e.recent, sqlText)
}

// Recent returns the texts of the engine's latest queries, oldest first.
func (e *Engine) Recent() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.recent)
}

// Warm plans texts on this engine — resolving their sources in its
// Snapshot, which carries over what did not change — and leaves an
// instance idle with the views of the last of them, so that an engine
// published after a refresh answers the queries its predecessor was
// answering as fast as its predecessor did, with nothing left to set up. A
// text that fails here is left for its query to report.
func (e *Engine) Warm(ctx context.Context, texts []string) {
	var last *plan
	for _, t := range texts {
		an, err := e.analyze(ctx, nil, t)
		if err != nil {
			continue
		}
		p, err := e.planFor(ctx, an, nil)
		if err != nil {
			continue
		}
		e.remember(t)
		last = p
	}
	if last == nil {
		return
	}
	if inst, err := e.open(ctx, last, e.cfg.Limits); err == nil {
		e.release(inst, true)
	}
}

// prefetch starts resolving, while a parserless engine's instance is still
// starting, what the SQL text shows its plan will resolve: the plan cannot
// start before that instance has parsed the SQL. The relations are those
// whose names the text holds (a relation the query reads is named in it;
// one named only in a string costs some extra work, never a wrong row),
// lean unless the text may read their free text.
// When nothing in the text can narrow the sources (no _file_, no
// session_id) and the statement reads rows, every file source's relations
// are resolved — normalized, or served from the cache — which is what the
// plan will do; otherwise only what the normalization cache holds is
// served. A text already analyzed needs none. stop waits for it to end,
// cancelling it first when the query will not run (its SQL was rejected).
func (e *Engine) prefetch(ctx context.Context, sqlText string) (stop func(cancel bool)) {
	e.mu.Lock()
	analyzed := e.analyses[sqlText] != nil
	e.mu.Unlock()
	if analyzed {
		return func(bool) {}
	}
	lower := strings.ToLower(sqlText)
	var rels []string
	starless := !strings.Contains(strings.ReplaceAll(lower, "count(*)", ""), "*")
	for _, rel := range []string{model.RelRuns, model.RelSteps, model.RelToolCalls} {
		if !strings.Contains(lower, rel) {
			continue
		}
		// Lean when the text names none of its free-text columns: a
		// wrong guess costs normalizing again whole, never a wrong row
		// (the plan decides from the analysis, and whole files answer a
		// lean part too).
		if !e.NoLean && starless && !slices.ContainsFunc(model.FreeTextColumns(rel), func(c string) bool { return strings.Contains(lower, c) }) {
			rel = catalog.LeanPart(rel)
		}
		rels = append(rels, rel)
	}
	if len(rels) == 0 {
		return func(bool) {}
	}
	head := strings.TrimLeft(lower, " \t\r\n(")
	whole := !strings.Contains(lower, "_file_") && !strings.Contains(lower, "session_id") &&
		(strings.HasPrefix(head, "select") || strings.HasPrefix(head, "with") || strings.HasPrefix(head, "from"))
	ctx, cancel := context.WithCancel(documentBudget(ctx, e.snap.Options))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, d := range e.snap.Datasets {
			var reqs []catalog.FileRequest
			for _, src := range d.Sources {
				if src.Kind == catalog.KindFile {
					reqs = append(reqs, catalog.FileRequest{Source: src, Relations: rels})
				}
			}
			if whole {
				e.snap.ResolveFiles(ctx, reqs) // errors are cached per source; the plan reports them
			} else {
				e.snap.ResolveCached(reqs)
			}
		}
	}()
	return func(c bool) {
		if c {
			cancel()
		}
		<-done
		cancel()
	}
}

// planFor prunes and resolves the sources of an analysis. A plan whose
// sources all resolved is reused for the same analysis: every resolution,
// result or error, is fixed for the Snapshot's life, so the plan cannot
// change (on 2,000 sources, building it again cost about a millisecond). A
// restricted plan (routing) is built for its query alone.
func (e *Engine) planFor(ctx context.Context, an *query.Analysis, restrict Restriction) (*plan, error) {
	cacheable := restrict == nil
	if cacheable {
		e.mu.Lock()
		p := e.plans[an]
		e.mu.Unlock()
		if p != nil && p.noPruning == e.NoPruning && p.noLean == e.NoLean {
			return p, nil
		}
	}
	p := e.plan(an, restrict)
	if err := e.resolve(ctx, p); err != nil {
		return nil, err
	}
	p.views = e.views(p)
	if cacheable {
		e.mu.Lock()
		e.plans[an] = p
		e.mu.Unlock()
	}
	return p, nil
}

// plan is the set of sources each Dataset relation reads in one query. It
// is not changed once resolved.
type plan struct {
	rels      map[relKey]*relPlan
	meta      map[relKey]bool // referenced metadata relations (sources, projections)
	noPruning bool
	noLean    bool
	views     map[relKey]string // every row relation's view body (Engine.views)
}

type relKey struct{ dataset, relation string }

// RelationKey names one relation of one mounted Dataset (by SQL alias).
type RelationKey struct{ Dataset, Relation string }

// Restriction narrows the sources a query may read, per relation, to the
// listed _file_ values: exactly what adding `_file_ IN (...)` to every
// reference of that relation would do. The source-routing index computes
// it from facts that hold for every row the query can select, so it never
// changes a result; a relation it does not name is not narrowed.
type Restriction map[RelationKey][]string

type relPlan struct {
	// part is what the relation's peripheral files are normalized into:
	// the relation, or its lean part when the query reads none of its
	// free-text columns.
	part       string
	considered int
	sources    []*catalog.Source
	resolved   []*catalog.Resolved
	// sessions bounds the session ids every reference to the relation can
	// read (nil: unbounded), for directed canonical-event fallbacks.
	sessions []string
}

// plan prunes: for every referenced Dataset relation, the sources that can
// provide it and whose constant _file_ may satisfy some reference's filter
// (and, when restricted, that the restriction lists). Nothing is opened to
// decide (spec invariant 11). DESCRIBE needs only the fixed schemas, so it
// reads no source.
func (e *Engine) plan(an *query.Analysis, restrict Restriction) *plan {
	p := &plan{rels: map[relKey]*relPlan{}, meta: map[relKey]bool{}, noPruning: e.NoPruning, noLean: e.NoLean}
	for _, ref := range an.Refs {
		k := relKey{ref.Dataset, ref.Relation}
		if !isRowRelation(ref.Relation) {
			p.meta[k] = true
			continue
		}
		if _, done := p.rels[k]; done {
			continue
		}
		rp := &relPlan{part: ref.Relation, sessions: an.SessionBound(ref.Dataset, ref.Relation)}
		if !e.NoLean && ref.Relation != model.RelEvents && !an.ReadsFreeText(ref.Relation) {
			rp.part = catalog.LeanPart(ref.Relation)
		}
		p.rels[k] = rp
		ds, ok := e.snap.Dataset(ref.Dataset)
		if !ok || an.Kind == query.KindDescribe {
			continue
		}
		rp.considered = ds.Providers(ref.Relation)
		candidates := ds.Sources
		if files, ok := restrict[RelationKey{ref.Dataset, ref.Relation}]; ok {
			candidates = ds.SourcesOf(files)
		}
		for _, src := range candidates {
			if src.Provides(ref.Relation) && (e.NoPruning || an.MayRead(ref.Dataset, ref.Relation, src.File)) {
				rp.sources = append(rp.sources, src)
			}
		}
	}
	return p
}

// rowRelations are the relations whose rows come from sources (views);
// sources and projections are the Snapshot's metadata (tables).
var rowRelations = model.RowRelations

func isRowRelation(rel string) bool { return slices.Contains(rowRelations, rel) }

// resolve resolves every planned source in stable order, at most
// max_concurrent_sources at a time. Any error fails the query: a source that
// is ready in the Snapshot is never silently dropped (docs/cli.md, --errors).
func (e *Engine) resolve(ctx context.Context, p *plan) error {
	ctx = documentBudget(ctx, e.snap.Options)
	type job struct {
		rp *relPlan
		i  int
	}
	// Unresolved peripheral files are normalized first, each once for all
	// the relations the query reads from it (and only those are written),
	// together into shared scratch files, one batch per Dataset (_file_ is
	// unique only within a Dataset); the per-source calls below then hit
	// the cache. Errors are cached per source and reported by those calls.
	files := map[string][]catalog.FileRequest{}
	n := 0
	for _, rp := range p.rels {
		n += len(rp.sources)
	}
	at := make(map[*catalog.Source]int, n) // position in files[dataset]
	for _, k := range p.keys() {
		if k.relation == model.RelEvents {
			continue
		}
		for _, src := range p.rels[k].sources {
			if src.Kind != catalog.KindFile {
				continue
			}
			i, ok := at[src]
			if !ok {
				i = len(files[k.dataset])
				at[src] = i
				files[k.dataset] = append(files[k.dataset], catalog.FileRequest{Source: src})
			}
			files[k.dataset][i].Relations = append(files[k.dataset][i].Relations, p.rels[k].part)
		}
	}
	for _, reqs := range files {
		var err error
		if len(reqs) == 1 {
			_, err = reqs[0].Source.ResolveRelations(ctx, reqs[0].Relations...)
		} else {
			err = e.snap.ResolveFiles(ctx, reqs)
		}
		if err != nil && ctx.Err() != nil {
			return err
		}
	}
	var jobs []job
	for _, k := range p.keys() {
		rp := p.rels[k]
		rp.resolved = make([]*catalog.Resolved, len(rp.sources))
		for i := range rp.sources {
			jobs = append(jobs, job{rp, i})
		}
	}
	errs := make([]error, len(jobs))
	eachAtOnce(len(jobs), e.snap.Options.MaxConcurrentSources, func(n int) {
		j := jobs[n]
		j.rp.resolved[j.i], errs[n] = j.rp.sources[j.i].ResolveSessions(ctx, j.rp.part, j.rp.sessions)
	})
	if err := errlist.Join(errs...); err != nil {
		return err
	}
	return e.soloFew(ctx, p)
}

// eachAtOnce calls fn for every index of [0, n), at most workers at a time,
// on a fixed set of goroutines rather than one per index: resolving
// thousands of already resolved sources is then only map lookups.
func eachAtOnce(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// soloFew gives the sources a relation reads alone from a large shared
// batch their own small resolution (Source.ResolveSolo): a point query
// that reads 1 source of a batch of 10,000 then scans that source's rows,
// not the batch's.
func (e *Engine) soloFew(ctx context.Context, p *plan) error {
	const most = 16 // sources of one batch worth normalizing again
	for _, k := range p.keys() {
		rp := p.rels[k]
		hits := map[string][]int{} // a batch's first file → the plan's sources in it
		for i, res := range rp.resolved {
			if res.Owners != nil && len(res.Files[k.relation]) > 0 {
				first := res.Files[k.relation][0]
				hits[first] = append(hits[first], i)
			}
		}
		for _, idx := range hits {
			owners := len(rp.resolved[idx[0]].Owners)
			if len(idx) > most || len(idx)*4 > owners {
				continue
			}
			for _, i := range idx {
				res, err := rp.sources[i].ResolveSolo(ctx, rp.part)
				if err != nil {
					return err
				}
				rp.resolved[i] = res[0]
			}
		}
	}
	return nil
}

func (p *plan) keys() []relKey { return sortedRelKeys(p.rels) }

func sortedRelKeys[V any](m map[relKey]V) []relKey {
	keys := make([]relKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return cmp.Or(strings.Compare(keys[i].dataset, keys[j].dataset), strings.Compare(keys[i].relation, keys[j].relation)) < 0
	})
	return keys
}

// warnings are what resolving the plan's sources skipped or left out,
// summarized by reason (catalog.SummarizeWarnings): counts and a few
// examples, never a line per file.
func (p *plan) warnings() []string {
	var all []string
	for _, k := range p.keys() {
		for _, res := range p.rels[k].resolved {
			if res != nil {
				all = append(all, res.Warnings...)
			}
		}
	}
	return catalog.SummarizeWarnings(all)
}

func (p *plan) report() []RelationReport {
	var out []RelationReport
	for _, k := range p.keys() {
		rp := p.rels[k]
		r := RelationReport{Dataset: k.dataset, Relation: k.relation, Considered: rp.considered, Skipped: rp.considered - len(rp.sources), Lean: rp.part != k.relation}
		for _, s := range rp.sources {
			r.Resolved = append(r.Resolved, s.File)
		}
		out = append(out, r)
	}
	return out
}

// quote returns s as a SQL string literal.
func quote(s string) string { return sqlString(s) }
