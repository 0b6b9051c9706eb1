package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// queryGen generates random queries over the fixture Dataset: _file_
// predicates mixed with business predicates under AND/OR/NOT, joins with
// _file_ equality, IN-subqueries, and outer joins.
type queryGen struct {
	rng   *rand.Rand
	files []string
}

func (g *queryGen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

func (g *queryGen) file() string {
	if g.rng.IntN(6) == 0 {
		return "'no/such.jsonl'"
	}
	return "'" + g.files[g.rng.IntN(len(g.files))] + "'"
}

func (g *queryGen) filePred(col string) string {
	switch g.rng.IntN(7) {
	case 0:
		return col + " = " + g.file()
	case 1:
		return col + " <> " + g.file()
	case 2:
		return fmt.Sprintf("%s IN (%s, %s)", col, g.file(), g.file())
	case 3:
		return fmt.Sprintf("%s NOT IN (%s)", col, g.file())
	case 4:
		return col + " LIKE " + g.pick("'a/%'", "'b/f00%'", "'%3.jsonl'", "'_/f01_.jsonl'")
	case 5:
		return col + " NOT LIKE " + g.pick("'a/%'", "'%5.jsonl'")
	default:
		return col + " ILIKE 'A/%'" // not understood by the evaluator: must stay "unknown"
	}
}

func (g *queryGen) pred(alias string, business []string, depth int) string {
	col := "_file_"
	if alias != "" {
		col = alias + "._file_"
	}
	if depth > 2 || g.rng.IntN(3) == 0 {
		if g.rng.IntN(3) == 0 {
			b := business[g.rng.IntN(len(business))]
			if alias != "" {
				b = alias + "." + b
			}
			return b
		}
		return g.filePred(col)
	}
	l, r := g.pred(alias, business, depth+1), g.pred(alias, business, depth+1)
	switch g.rng.IntN(3) {
	case 0:
		return "(" + l + " AND " + r + ")"
	case 1:
		return "(" + l + " OR " + r + ")"
	default:
		return "NOT (" + l + ")"
	}
}

var (
	stepPreds = []string{"source = 'tool'", "step_index > 2", "message_value LIKE '%t1%'", "reasoning IS NULL"}
	runPreds  = []string{"step_count > 4", "tool_call_count = 0", "session_id = 'line-1'"}
	callPreds = []string{"function_name = 'tool_1'", "result_status = 'ok'", "call_index < 2"}
)

func (g *queryGen) query() (sql string, single bool) {
	switch g.rng.IntN(6) {
	case 0:
		return "SELECT _file_, session_id, step_id, source FROM steps WHERE " + g.pred("", stepPreds, 0), true
	case 1:
		return "SELECT _file_, session_id, step_count FROM runs WHERE " + g.pred("", runPreds, 0), true
	case 2:
		return "SELECT r._file_, r.session_id, s.step_id FROM runs r JOIN steps s ON r._file_ = s._file_ AND r.session_id = s.session_id WHERE " +
			g.pred("r", runPreds, 1) + " AND " + g.pred("s", stepPreds, 1), false
	case 3:
		return "SELECT _file_, session_id, tool_call_id FROM tool_calls WHERE _file_ IN (SELECT _file_ FROM runs WHERE " +
			g.pred("", runPreds, 1) + ") AND " + g.pred("", callPreds, 1), false
	case 4:
		return "SELECT r._file_, r.session_id, t.tool_call_id FROM runs r LEFT JOIN tool_calls t ON r._file_ = t._file_ AND r.session_id = t.session_id AND " +
			g.pred("t", callPreds, 1) + " WHERE " + g.pred("r", runPreds, 1), false
	default:
		return "SELECT count(*), count(DISTINCT _file_) FROM steps WHERE " + g.pred("", stepPreds, 0) +
			" UNION ALL SELECT count(*), 0 FROM tool_calls WHERE " + g.pred("", callPreds, 0), false
	}
}

func canonicalRows(res *Result) []string {
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = fmt.Sprint(r...)
	}
	sort.Strings(out)
	return out
}

// TestPruningNeverChangesResults: for many generated queries, results with
// pruning equal results with pruning disabled, and the resolved sources of a
// single-table query include every source that contributes a row.
func TestPruningNeverChangesResults(t *testing.T) {
	root := fixture(t, 16)
	_, pruned := open(t, root, catalog.DefaultOptions())
	_, full := open(t, root, catalog.DefaultOptions())
	full.NoPruning = true
	var files []string
	for _, r := range mustQuery(t, full, "SELECT _file_ FROM sources ORDER BY 1").Rows {
		files = append(files, r[0].(string))
	}
	g := &queryGen{rng: rand.New(rand.NewPCG(1, 2)), files: files}
	n := 200
	if testing.Short() {
		n = 60
	}
	for i := 0; i < n; i++ {
		sql, single := g.query()
		want, err := full.Query(context.Background(), sql, QueryOptions{})
		if err != nil {
			t.Fatalf("unpruned %s: %v", sql, err)
		}
		got, err := pruned.Query(context.Background(), sql, QueryOptions{})
		if err != nil {
			t.Fatalf("pruned %s: %v", sql, err)
		}
		if a, b := strings.Join(canonicalRows(got), "\n"), strings.Join(canonicalRows(want), "\n"); a != b {
			t.Fatalf("results differ for\n%s\npruned (%d rows) vs full (%d rows)", sql, len(got.Rows), len(want.Rows))
		}
		if single {
			resolved := map[string]bool{}
			for _, f := range got.Pruning[0].Resolved {
				resolved[f] = true
			}
			for _, r := range got.Rows {
				if !resolved[r[0].(string)] {
					t.Fatalf("%s: row from %s, which pruning did not resolve", sql, r[0])
				}
			}
		}
	}
}

// leanQueries read free text in every way a query can reach it, and none.
var leanQueries = []string{
	"SELECT count(*) FROM tool_calls",
	"SELECT function_name, count(*) FROM tool_calls GROUP BY ALL ORDER BY ALL",
	"SELECT count(*), count(arguments), max(length(result)), count(extra) FROM tool_calls",
	"SELECT _file_, tool_call_id FROM tool_calls WHERE result IS NOT NULL OR arguments LIKE '%1%'",
	"SELECT _file_, step_id FROM steps WHERE message_value LIKE '%t1%' ORDER BY ALL",
	"SELECT _file_, step_id FROM steps ORDER BY message_value, _file_, step_id",
	"SELECT * FROM tool_calls",
	"SELECT * EXCLUDE (arguments) FROM tool_calls",
	"SELECT COLUMNS('mess.*') FROM steps",
	"SELECT #9 FROM steps",
	"SELECT to_json(t) FROM tool_calls t",
	"SELECT s FROM steps s",
	"WITH c AS (SELECT * FROM steps) SELECT c.message_value FROM c",
	"SELECT count(*) FROM steps s JOIN tool_calls c USING (_file_, session_id, step_id) WHERE c.arguments IS NOT NULL",
	"SELECT count(*) FROM steps JOIN tool_calls USING (_file_, session_id, extra)",
	"SELECT count(*) FROM steps NATURAL JOIN tool_calls",
	"SELECT count(*), sum(step_count), sum(tool_call_count) FROM runs WHERE extra IS NULL",
	"SELECT r.session_id, count(*) FROM runs r JOIN steps s ON r._file_ = s._file_ AND r.session_id = s.session_id GROUP BY 1 ORDER BY 1",
}

// TestLeanNeverChangesResults: queries answered from lean files (free-text
// columns NULL, for queries that read none) give exactly the rows of whole
// files, for generated queries and for every way of reaching free text.
// Each query runs in a Snapshot of its own: one that an earlier query
// normalized whole would answer from whole files.
func TestLeanNeverChangesResults(t *testing.T) {
	root := fixture(t, 16)
	_, whole := open(t, root, catalog.DefaultOptions())
	whole.NoLean = true
	var files []string
	for _, r := range mustQuery(t, whole, "SELECT _file_ FROM sources ORDER BY 1").Rows {
		files = append(files, r[0].(string))
	}
	queries := slices.Clone(leanQueries)
	g := &queryGen{rng: rand.New(rand.NewPCG(3, 4)), files: files}
	for range 60 {
		sql, _ := g.query()
		queries = append(queries, sql)
	}
	for _, sql := range queries {
		want := mustQuery(t, whole, sql)
		snap, lean := open(t, root, catalog.DefaultOptions())
		got := mustQuery(t, lean, sql)
		lean.Close()
		snap.Close()
		if a, b := strings.Join(canonicalRows(got), "\n"), strings.Join(canonicalRows(want), "\n"); a != b {
			t.Errorf("results differ for\n%s\nlean:\n%s\nwhole:\n%s", sql, a, b)
		}
	}
}

// TestLeanThenWhole: a query that reads no free text normalizes lean; one
// that then reads it normalizes the files again, whole; after that neither
// kind normalizes anything. Files normalized whole first are never
// normalized again lean.
func TestLeanThenWhole(t *testing.T) {
	root := fixture(t, 4)
	const leanSQL, wholeSQL = "SELECT count(*) FROM tool_calls", "SELECT count(arguments) FROM tool_calls"
	snap, e := open(t, root, catalog.DefaultOptions())
	if p := mustQuery(t, e, leanSQL).Pruning; len(p) != 1 || !p[0].Lean {
		t.Fatalf("%s: pruning report %+v, want tool_calls lean", leanSQL, p)
	}
	first := snap.Resolves()
	if first == 0 {
		t.Fatal("the first query resolved nothing")
	}
	got := mustQuery(t, e, wholeSQL)
	if p := got.Pruning; len(p) != 1 || p[0].Lean {
		t.Fatalf("%s: pruning report %+v, want tool_calls whole", wholeSQL, p)
	}
	if snap.Resolves() == first {
		t.Fatalf("a query reading arguments after a lean one normalized nothing again (%d resolutions)", first)
	}
	want := mustQuery(t, e, "SELECT count(*) FROM tool_calls WHERE arguments IS NOT NULL")
	if fmt.Sprint(got.Rows) != fmt.Sprint(want.Rows) || fmt.Sprint(got.Rows) == "[[0]]" {
		t.Fatalf("count(arguments) = %v, want %v (and not 0)", got.Rows, want.Rows)
	}
	after := snap.Resolves()
	mustQuery(t, e, leanSQL+" WHERE call_index >= 0")
	mustQuery(t, e, wholeSQL+" WHERE call_index >= 0")
	if snap.Resolves() != after {
		t.Errorf("resolutions went from %d to %d once the files were whole", after, snap.Resolves())
	}

	snap, e = open(t, root, catalog.DefaultOptions())
	mustQuery(t, e, wholeSQL)
	before := snap.Resolves()
	mustQuery(t, e, leanSQL)
	if snap.Resolves() != before {
		t.Errorf("a lean query after a whole one resolved again: %d resolutions, then %d", before, snap.Resolves())
	}
}
