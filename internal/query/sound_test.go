package query

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The property tests check pruning against DuckDB itself: a source that
// Analyze says cannot match must never contribute a row.

var propFiles = []string{"a.json", "b.json", "a/b.json", "x_y", "x%y", "é.json", "A.json", "2026/08/x.json"}

var propLits = append(slices.Clone(propFiles), "c.json", "", "a")

var propPatterns = []string{"a%", "%json", "_.json", "%/%", "x!%y", `x\%y`, "%", "", "é%", "__", "a_%", "%_", "x_y", "2026/__/%"}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// genPred builds a random predicate over _file_ (optionally qualified by
// col) and the NULL-free business columns n and s.
func genPred(r *rand.Rand, depth int, col string) string {
	if depth > 0 && r.IntN(3) > 0 {
		switch r.IntN(3) {
		case 0:
			return "(" + genPred(r, depth-1, col) + " AND " + genPred(r, depth-1, col) + ")"
		case 1:
			return "(" + genPred(r, depth-1, col) + " OR " + genPred(r, depth-1, col) + ")"
		default:
			return "NOT (" + genPred(r, depth-1, col) + ")"
		}
	}
	lit := func() string { return quote(propLits[r.IntN(len(propLits))]) }
	list := func() string {
		var items []string
		for i := 0; i <= r.IntN(3); i++ {
			if r.IntN(5) == 0 {
				items = append(items, "NULL")
			} else {
				items = append(items, lit())
			}
		}
		return "(" + strings.Join(items, ", ") + ")"
	}
	pat := func() string { return quote(propPatterns[r.IntN(len(propPatterns))]) }
	atoms := []func() string{
		func() string { return col + " = " + lit() },
		func() string { return lit() + " = " + col },
		func() string { return col + " <> " + lit() },
		func() string { return col + " IN " + list() },
		func() string { return col + " NOT IN " + list() },
		func() string { return col + " LIKE " + pat() },
		func() string { return col + " NOT LIKE " + pat() },
		func() string { return col + " LIKE " + pat() + " ESCAPE '!'" },
		func() string { return col + " NOT LIKE " + pat() + " ESCAPE '!'" },
		func() string { return col + " = NULL" },
		func() string { return col + " IS NOT DISTINCT FROM " + lit() },
		func() string { return col + " IS DISTINCT FROM " + lit() },
		func() string { return col + " IS NOT DISTINCT FROM NULL" },
		func() string { return col + " ILIKE " + pat() },
		func() string { return "upper(" + col + ") = 'A.JSON'" },
		func() string { return col + " > " + lit() },
		func() string { return col + " IS NULL" },
		func() string { return fmt.Sprintf("n = %d", r.IntN(3)) },
		func() string { return fmt.Sprintf("n > %d", r.IntN(3)) },
		func() string { return "s LIKE 'p%'" },
		func() string { return "NULL" },
		func() string { return "TRUE" },
	}
	return atoms[r.IntN(len(atoms))]()
}

func openDuck(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestPruningSound: for random _file_ predicates, every file DuckDB returns
// for `WHERE pred` over a table holding all files is admitted by MayMatch.
func TestPruningSound(t *testing.T) {
	p := testParser(t)
	db := openDuck(t)
	mustExec(t, db, "CREATE TABLE t (_file_ VARCHAR, n INTEGER, s VARCHAR)")
	for _, f := range propFiles {
		for n := 0; n < 3; n++ {
			for _, s := range []string{"p1", "q"} {
				mustExec(t, db, fmt.Sprintf("INSERT INTO t VALUES (%s, %d, %s)", quote(f), n, quote(s)))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	iters, pruned := 3000, 0
	if testing.Short() {
		iters = 300
	}
	for i := 0; i < iters; i++ {
		col := []string{"_file_", "r._file_"}[r.IntN(2)]
		pred := genPred(r, 3, col)
		res, err := p.Analyze(context.Background(), "SELECT * FROM ds.runs r WHERE "+pred, AnalyzeOptions{Datasets: []string{"ds"}})
		if err != nil {
			t.Fatalf("analyze %q: %v", pred, err)
		}
		filter := res.Refs[0].Candidates
		got, err := queryStrings(db, "SELECT DISTINCT _file_ FROM t r WHERE "+pred)
		if err != nil {
			continue // DuckDB rejects the predicate (e.g. bad ESCAPE); nothing to compare
		}
		for _, f := range got {
			if !filter.MayMatch(f) {
				t.Fatalf("unsound: %q matches file %q in DuckDB but filter %s rejects it", pred, f, filter)
			}
		}
		for _, f := range propFiles {
			if !filter.MayMatch(f) {
				pruned++
			}
		}
	}
	// The property is vacuous if nothing is ever pruned.
	if pruned < iters {
		t.Fatalf("only %d files pruned over %d predicates", pruned, iters)
	}
	t.Logf("%d predicates, %d (file, predicate) pairs pruned", iters, pruned)
}

func queryStrings(db *sql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprint(vals...))
	}
	slices.Sort(out)
	return out, rows.Err()
}

// joinTemplates exercise the context rules: inner/outer/semi/anti joins,
// comma joins, derived tables, correlated subqueries and unions. %[1]s is a
// predicate on r, %[2]s on s, %[3]s mixed.
var joinTemplates = []string{
	"SELECT * FROM ds.runs r WHERE %[1]s",
	"SELECT r.*, s.m FROM ds.runs r JOIN ds.steps s ON r._file_ = s._file_ AND r.session_id = s.session_id AND %[2]s WHERE %[1]s",
	"SELECT r.*, s.m FROM ds.runs r LEFT JOIN ds.steps s ON r._file_ = s._file_ AND r.session_id = s.session_id AND %[2]s WHERE %[3]s",
	"SELECT r.*, s.m FROM ds.runs r RIGHT JOIN ds.steps s ON r._file_ = s._file_ AND r.session_id = s.session_id AND %[1]s WHERE %[3]s",
	"SELECT r.*, s.m FROM ds.runs r FULL JOIN ds.steps s ON r._file_ = s._file_ AND r.session_id = s.session_id AND %[2]s WHERE %[3]s",
	"SELECT * FROM ds.runs r SEMI JOIN ds.steps s ON r._file_ = s._file_ AND r.session_id = s.session_id AND %[3]s WHERE %[1]s",
	"SELECT * FROM ds.runs r ANTI JOIN ds.steps s ON r._file_ = s._file_ AND r.session_id = s.session_id AND %[3]s WHERE %[1]s",
	"SELECT * FROM ds.runs r JOIN ds.steps s USING (_file_, session_id) WHERE %[3]s",
	"SELECT * FROM ds.runs r LEFT JOIN ds.steps s USING (_file_, session_id) WHERE %[3]s",
	"SELECT r.*, s.m FROM ds.runs r, ds.steps s WHERE r._file_ = s._file_ AND r.session_id = s.session_id AND %[3]s",
	"SELECT * FROM ds.runs r WHERE %[1]s AND EXISTS (SELECT 1 FROM ds.steps s WHERE s._file_ = r._file_ AND s.session_id = r.session_id AND %[2]s)",
	"SELECT * FROM ds.runs r WHERE %[1]s AND NOT EXISTS (SELECT 1 FROM ds.steps s WHERE s._file_ = r._file_ AND %[2]s)",
	"SELECT * FROM (SELECT * FROM ds.runs r WHERE %[1]s) t LEFT JOIN ds.steps s ON t._file_ = s._file_ AND %[2]s",
	"SELECT count(*), sum(n) FROM ds.runs r WHERE %[1]s",
	"SELECT r._file_ FROM ds.runs r WHERE %[1]s UNION SELECT s._file_ FROM ds.steps s WHERE %[2]s",
	"SELECT r.*, s.m FROM ds.runs r LEFT JOIN (ds.steps s JOIN ds.runs r2 ON r2._file_ = s._file_ AND %[2]s) ON r._file_ = s._file_ WHERE %[1]s",
	"SELECT r.n, s.m FROM ds.runs r ASOF JOIN ds.steps s ON r._file_ = s._file_ AND r.n >= s.m WHERE %[3]s",
}

// TestPruningPreservesResults is the differential test of the context
// rules: running a query over tables holding only the rows of admitted
// sources (the union over references) gives the same rows as over all rows.
func TestPruningPreservesResults(t *testing.T) {
	p := testParser(t)
	db := openDuck(t)
	r := rand.New(rand.NewPCG(3, 4))
	mustExec(t, db, "CREATE SCHEMA full_data")
	mustExec(t, db, "CREATE SCHEMA ds")
	mustExec(t, db, "CREATE TABLE full_data.runs (_file_ VARCHAR, session_id VARCHAR, n INTEGER, s VARCHAR)")
	mustExec(t, db, "CREATE TABLE full_data.steps (_file_ VARCHAR, session_id VARCHAR, m INTEGER, s VARCHAR)")
	for _, f := range propFiles {
		for i := 0; i < 3; i++ {
			sess := fmt.Sprintf("s%d", r.IntN(3))
			mustExec(t, db, fmt.Sprintf("INSERT INTO full_data.runs VALUES (%s, %s, %d, %s)", quote(f), quote(sess), r.IntN(3), quote([]string{"p1", "q"}[r.IntN(2)])))
			mustExec(t, db, fmt.Sprintf("INSERT INTO full_data.steps VALUES (%s, %s, %d, %s)", quote(f), quote(sess), r.IntN(3), quote([]string{"p1", "q"}[r.IntN(2)])))
		}
	}
	iters := 1000
	if testing.Short() {
		iters = 150
	}
	compared, effective := 0, 0
	for i := 0; i < iters; i++ {
		tpl := joinTemplates[r.IntN(len(joinTemplates))]
		mixed := genPred(r, 2, "r._file_")
		if r.IntN(2) == 0 {
			mixed = "(" + mixed + " " + []string{"AND", "OR"}[r.IntN(2)] + " " + genPred(r, 2, "s._file_") + ")"
		}
		q := fmt.Sprintf(tpl, genPred(r, 2, "r._file_"), genPred(r, 2, "s._file_"), mixed)
		res, err := p.Analyze(context.Background(), q, AnalyzeOptions{Datasets: []string{"ds"}})
		if err != nil {
			t.Fatalf("analyze %q: %v", q, err)
		}
		full, errFull := runOver(t, db, q, nil)
		pruned, errPruned := runOver(t, db, q, res)
		if (errFull != nil) != (errPruned != nil) {
			t.Fatalf("%q: error with full data %v, with pruned data %v", q, errFull, errPruned)
		}
		if errFull != nil {
			continue
		}
		compared++
		if prunesSomething(res) {
			effective++
		}
		if !slices.Equal(full, pruned) {
			t.Fatalf("pruning changed the result of\n%s\nrefs: %s\nfull:   %v\npruned: %v", q, describeRefs(res.Refs), full, pruned)
		}
	}
	if compared < iters/2 || effective < compared/4 {
		t.Fatalf("only %d of %d queries ran, %d with pruning", compared, iters, effective)
	}
	t.Logf("%d queries compared, %d of them pruned some source", compared, effective)
}

func prunesSomething(res *Analysis) bool {
	for _, ref := range res.Refs {
		for _, f := range propFiles {
			if !res.MayRead(ref.Dataset, ref.Relation, f) {
				return true
			}
		}
	}
	return false
}

// runOver fills ds.runs/ds.steps with the admitted rows (all rows when res
// is nil) and runs q.
func runOver(t *testing.T, db *sql.DB, q string, res *Analysis) ([]string, error) {
	t.Helper()
	for _, rel := range []string{"runs", "steps"} {
		keep := "TRUE"
		if res != nil {
			var files []string
			for _, f := range propFiles {
				if res.MayRead("ds", rel, f) {
					files = append(files, quote(f))
				}
			}
			keep = "FALSE"
			if len(files) > 0 {
				keep = "_file_ IN (" + strings.Join(files, ", ") + ")"
			}
		}
		mustExec(t, db, fmt.Sprintf("CREATE OR REPLACE TABLE ds.%s AS SELECT * FROM full_data.%s WHERE %s", rel, rel, keep))
	}
	return queryStrings(db, q)
}
