// Package route is the server's source-routing index: a rebuildable,
// in-memory acceleration structure that belongs to one generation. For the
// identity columns of each Dataset relation it maps every value to the
// sources holding it, so that a point query such as `session_id = '…'`
// over 10,000 sources reads only the one that holds it — as if the query
// had said `_file_ = '…'`.
//
// The index never changes a result. It is built from the generation's own
// relations, on the first query that could use it, and applies only the
// facts the routing rule extracts (query.RouteFacts); an uncertain build
// (over its caps, failed) falls back to the original query, and a hash
// collision only widens the candidate set, which the query's own predicates
// still filter.
package route

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/query"
)

// Outcomes of routing one statement (the source_routing field).
const (
	Applied       = "applied"           // the statement reads only the routed sources
	AlreadyPruned = "already_pruned"    // it has its own _file_ predicate
	NotApplicable = "not_applicable"    // its shape or predicates allow no routing
	NotSelective  = "not_selective"     // too many sources hold the values to gain anything
	Unavailable   = "index_unavailable" // the index layer could not be built (caps, failure)
)

// Limits bound every layer of the index.
type Limits struct {
	MaxRows     int64 // rows a layer may read (default 1,000,000)
	MaxDistinct int   // distinct values a layer may hold (default 1,000,000)
	// MaxCandidates is the most sources a routed statement may read; more
	// is not selective (default 64).
	MaxCandidates int
}

func (l Limits) withDefaults() Limits {
	if l.MaxRows <= 0 {
		l.MaxRows = 1_000_000
	}
	if l.MaxDistinct <= 0 {
		l.MaxDistinct = 1_000_000
	}
	if l.MaxCandidates <= 0 {
		l.MaxCandidates = 64
	}
	return l
}

// layer groups columns that are indexed together from one relation: each
// is built from one scan of that relation, when a statement first routes
// on one of its columns.
type layer struct {
	name     string
	relation string
	columns  []string
}

// The layers, per the routing design: runs (run_id, session_id, agent_id,
// agent_model_name → sources) serves every Storyline relation; events has
// two lazy layers, the identity layer (event_id, trace_id) and the partition
// layer (session_id, agent_id), so listing projects never pays for event
// identities.
var layers = []layer{
	{"runs", model.RelRuns, []string{"run_id", "session_id", "agent_id", "agent_model_name"}},
	{"events_identity", model.RelEvents, []string{"event_id", "trace_id"}},
	{"events_partition", model.RelEvents, []string{"session_id", "agent_id"}},
}

// routable lists, per relation, the columns a statement may route on, with
// the layer that indexes each. Only columns the relation itself has: a
// name it lacks could bind to a select-list alias instead.
var routable = map[string]map[string]*layer{
	model.RelRuns:      {"run_id": &layers[0], "session_id": &layers[0], "agent_id": &layers[0], "agent_model_name": &layers[0]},
	model.RelSteps:     {"run_id": &layers[0], "session_id": &layers[0]},
	model.RelToolCalls: {"run_id": &layers[0], "session_id": &layers[0]},
	model.RelEvents:    {"event_id": &layers[1], "trace_id": &layers[1], "session_id": &layers[2], "agent_id": &layers[2]},
}

// Querier runs the index's own scans.
type Querier interface {
	Stream(ctx context.Context, sql string, opts engine.QueryOptions) (*engine.Rows, error)
}

// Index is one generation's routing index. It is safe for concurrent use.
type Index struct {
	snap   *catalog.Snapshot
	q      Querier
	limits Limits
	seed   uint64 // keys are fingerprints keyed per generation

	mu    sync.Mutex
	built map[layerKey]*built // finished layers (ok or failed)
	wait  map[layerKey]chan struct{}
}

type layerKey struct{ dataset, layer string }

// built is one finished layer of one Dataset.
type built struct {
	// post maps a key to a source id (>= 0), or to -(i+1) for multi[i]
	// when several sources hold it: a single-source hit costs no slice.
	post  map[uint64]int32
	multi [][]int32
	rows  int64
	err   error // the layer is unavailable for the generation's life
}

// New returns an empty index over a generation's Snapshot, querying
// through q. Nothing is built until a statement routes.
func New(snap *catalog.Snapshot, q Querier, limits Limits) *Index {
	return &Index{snap: snap, q: q, limits: limits.withDefaults(), seed: rand.Uint64(),
		built: map[layerKey]*built{}, wait: map[layerKey]chan struct{}{}}
}

// Decision is the routing outcome of one statement.
type Decision struct {
	Outcome  string
	Restrict engine.Restriction // set when Outcome is Applied
	// Sources is the number of sources the statement will read when
	// applied.
	Sources int
	Reason  string `json:",omitempty"` // for unavailable and not-selective outcomes
}

// Route decides for one analyzed statement. It may build the layers the
// statement needs (once per generation; concurrent callers wait for one
// build).
func (ix *Index) Route(ctx context.Context, an *query.Analysis) Decision {
	f := an.Route
	if f == nil {
		return Decision{Outcome: NotApplicable}
	}
	if f.FilePredicate {
		return Decision{Outcome: AlreadyPruned}
	}
	cols := routable[f.Relation]
	ds, ok := ix.snap.Dataset(f.Dataset)
	if !ok {
		return Decision{Outcome: NotApplicable}
	}
	var candidates map[int32]bool
	used := false
	for _, col := range sortedKeys(f.Equal) {
		l := cols[col]
		if l == nil {
			continue
		}
		b := ix.layer(ctx, ds, l)
		if b.err != nil {
			return Decision{Outcome: Unavailable, Reason: b.err.Error()}
		}
		ids := map[int32]bool{}
		for _, v := range f.Equal[col] {
			for _, id := range b.lookup(ix.key(col, v)) {
				ids[id] = true
			}
		}
		if !used {
			candidates, used = ids, true
			continue
		}
		for id := range candidates {
			if !ids[id] {
				delete(candidates, id)
			}
		}
	}
	if !used {
		return Decision{Outcome: NotApplicable}
	}
	if len(candidates) > ix.limits.MaxCandidates {
		return Decision{Outcome: NotSelective, Reason: fmt.Sprintf("%d sources hold the values (the limit is %d)", len(candidates), ix.limits.MaxCandidates)}
	}
	files := make([]string, 0, len(candidates))
	for id := range candidates {
		files = append(files, ds.Sources[id].File)
	}
	sort.Strings(files)
	return Decision{Outcome: Applied, Sources: len(files),
		Restrict: engine.Restriction{{Dataset: f.Dataset, Relation: f.Relation}: files}}
}

// key is the fingerprint of one column value, keyed per generation.
func (ix *Index) key(col, value string) uint64 {
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], ix.seed)
	h := xxh3.New()
	h.Write(seed[:])
	h.WriteString(col)
	h.Write([]byte{0})
	h.WriteString(value)
	return h.Sum64()
}

func (b *built) lookup(k uint64) []int32 {
	v, ok := b.post[k]
	switch {
	case !ok:
		return nil
	case v >= 0:
		return []int32{v}
	}
	return b.multi[-v-1]
}

// layer returns the finished layer, building it on first use.
func (ix *Index) layer(ctx context.Context, ds *catalog.Dataset, l *layer) *built {
	k := layerKey{ds.Mount.Alias, l.name}
	for {
		ix.mu.Lock()
		if b := ix.built[k]; b != nil {
			ix.mu.Unlock()
			return b
		}
		if ch := ix.wait[k]; ch != nil {
			ix.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return &built{err: ctx.Err()}
			}
		}
		ch := make(chan struct{})
		ix.wait[k] = ch
		ix.mu.Unlock()
		// Built detached from the request: the layer serves every later one.
		b := ix.build(context.WithoutCancel(ctx), ds, l)
		ix.mu.Lock()
		delete(ix.wait, k)
		if b.err == nil || !errors.Is(b.err, context.Canceled) {
			ix.built[k] = b
		}
		ix.mu.Unlock()
		close(ch)
		return b
	}
}

// errCap says a layer crossed a cap: the unpublished layer is dropped.
var errCap = errors.New("over the index caps")

// build scans one relation of a Dataset and indexes the layer's columns.
func (ix *Index) build(ctx context.Context, ds *catalog.Dataset, l *layer) *built {
	ids := make(map[string]int32, len(ds.Sources))
	for i, s := range ds.Sources {
		ids[s.File] = int32(i)
	}
	cols := append([]string{"_file_"}, l.columns...)
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = engine.Ident(c)
	}
	sql := fmt.Sprintf("SELECT DISTINCT %s FROM %s.%s", strings.Join(quoted, ", "), engine.Ident(ds.Mount.Alias), engine.Ident(l.relation))
	rows, err := ix.q.Stream(ctx, sql, engine.QueryOptions{MaxRows: ix.limits.MaxRows, Truncate: true, Timeout: -1})
	if err != nil {
		return &built{err: fmt.Errorf("building the %s index of %s: %w", l.name, ds.Mount.Alias, err)}
	}
	defer rows.Close()
	b := &built{post: map[uint64]int32{}}
	for rows.Next() {
		v := rows.Values()
		file, _ := v[0].(string)
		id, ok := ids[file]
		if !ok {
			continue
		}
		b.rows++
		for i, col := range l.columns {
			s, ok := v[i+1].(string)
			if !ok {
				continue // NULL never equals a string
			}
			b.add(ix.key(col, s), id)
		}
		if len(b.post) > ix.limits.MaxDistinct {
			return &built{err: fmt.Errorf("the %s index of %s: more than %d distinct values: %w", l.name, ds.Mount.Alias, ix.limits.MaxDistinct, errCap)}
		}
	}
	if err := rows.Err(); err != nil {
		return &built{err: fmt.Errorf("building the %s index of %s: %w", l.name, ds.Mount.Alias, err)}
	}
	if rows.Truncated() {
		return &built{err: fmt.Errorf("the %s index of %s: more than %d rows: %w", l.name, ds.Mount.Alias, ix.limits.MaxRows, errCap)}
	}
	return b
}

func (b *built) add(k uint64, id int32) {
	v, ok := b.post[k]
	switch {
	case !ok:
		b.post[k] = id
	case v >= 0:
		if v != id {
			b.multi = append(b.multi, []int32{v, id})
			b.post[k] = -int32(len(b.multi))
		}
	default:
		m := &b.multi[-v-1]
		if !slices.Contains(*m, id) {
			*m = append(*m, id)
		}
	}
}

// LayerState is one built (or failed) layer, for the catalog route.
type LayerState struct {
	Dataset  string `json:"dataset"`
	Layer    string `json:"layer"`
	Rows     int64  `json:"rows"`
	Distinct int    `json:"distinct_values"`
	Sources  int    `json:"sources"`
	Error    string `json:"error,omitempty"`
}

// State lists the layers built so far and the cached failures.
func (ix *Index) State() (layersBuilt []LayerState, failed []LayerState) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for k, b := range ix.built {
		st := LayerState{Dataset: k.dataset, Layer: k.layer}
		if b.err != nil {
			st.Error = b.err.Error()
			failed = append(failed, st)
			continue
		}
		st.Rows, st.Distinct = b.rows, len(b.post)
		srcs := map[int32]bool{}
		for _, v := range b.post {
			if v >= 0 {
				srcs[v] = true
			}
		}
		for _, m := range b.multi {
			for _, id := range m {
				srcs[id] = true
			}
		}
		st.Sources = len(srcs)
		layersBuilt = append(layersBuilt, st)
	}
	order := func(s []LayerState) {
		sort.Slice(s, func(i, j int) bool { return s[i].Dataset+"/"+s[i].Layer < s[j].Dataset+"/"+s[j].Layer })
	}
	order(layersBuilt)
	order(failed)
	return layersBuilt, failed
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
