package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
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
