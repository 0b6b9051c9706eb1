package route

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

var parser *query.Parser

func TestMain(m *testing.M) { testutil.MainWithParser(m, &parser) }

// fixture: n files; file i holds sessions s<i>-0 and s<i>-1 with model
// m<i%3>, and (for i > 0) session s<i-1>-1 again with model m9: a
// session_id shared by two sources, a model shared by all but one. (Chat
// JSONL records are their own runs: run_id = session_id.)
func fixture(t testing.TB, n int) string {
	t.Helper()
	root := t.TempDir()
	line := func(session, model string) string {
		return fmt.Sprintf(`{"session_id":%q,"model":%q,"messages":[{"role":"user","content":"hi %s"},{"role":"assistant","content":"ok"}]}`,
			session, model, session) + "\n"
	}
	for i := 0; i < n; i++ {
		body := line(fmt.Sprintf("s%d-0", i), fmt.Sprintf("m%d", i%3)) + line(fmt.Sprintf("s%d-1", i), fmt.Sprintf("m%d", i%3))
		if i > 0 {
			body += line(fmt.Sprintf("s%d-1", i-1), "m9")
		}
		p := filepath.Join(root, fmt.Sprintf("part%d", i%3), fmt.Sprintf("f%03d.jsonl", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type env struct {
	snap *catalog.Snapshot
	eng  *engine.Engine
	ix   *Index
}

func open(t testing.TB, root string, limits Limits) *env {
	t.Helper()
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)})
	t.Cleanup(func() { eng.Close(); snap.Close() })
	return &env{snap, eng, New(snap, eng, limits)}
}

// run routes sql (unless off) and returns its sorted rows and the decision.
func (e *env) run(t testing.TB, sql string, routed bool) ([]string, Decision) {
	t.Helper()
	an, err := e.eng.Analyze(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var d Decision
	opts := engine.QueryOptions{MaxRows: -1}
	if routed {
		d = e.ix.Route(context.Background(), an)
		if d.Outcome == Applied {
			opts.Restrict = d.Restrict
		}
	}
	res, err := e.eng.Query(context.Background(), sql, opts)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = fmt.Sprint(r...)
	}
	sort.Strings(out)
	return out, d
}

// Routing never changes a result: 200 random routable statements give the
// same rows with the index on and off, and most of them are routed.
func TestRoutedAndUnroutedResultsAreIdentical(t *testing.T) {
	e := open(t, fixture(t, 24), Limits{})
	rng := rand.New(rand.NewPCG(7, 11))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	val := func(col string) string {
		switch col {
		case "session_id":
			return fmt.Sprintf("'s%d-%d'", rng.IntN(26), rng.IntN(3))
		case "run_id":
			return fmt.Sprintf("'s%d-%d'", rng.IntN(26), rng.IntN(3))
		case "agent_model_name":
			return fmt.Sprintf("'m%d'", rng.IntN(4)+6*rng.IntN(2))
		}
		return "'nobody'"
	}
	pred := func(rel string) string {
		cols := []string{"session_id", "run_id"}
		if rel == "runs" {
			cols = append(cols, "agent_model_name", "agent_id")
		}
		col := pick(cols...)
		if rng.IntN(2) == 0 {
			return col + " = " + val(col)
		}
		return fmt.Sprintf("%s IN (%s, %s)", col, val(col), val(col))
	}
	applied := 0
	n := 200
	if testing.Short() {
		n = 60
	}
	for i := 0; i < n; i++ {
		rel := pick("runs", "steps", "tool_calls")
		conds := []string{pred(rel)}
		for rng.IntN(2) == 0 {
			conds = append(conds, pred(rel))
		}
		if rng.IntN(4) == 0 {
			conds = append(conds, pick("step_index >= 1", "length(session_id) > 3", "run_id <> 'x'"))
		}
		sel := pick("*", "_file_, session_id", "count(*)", "run_id, count(*)")
		sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s", sel, rel, strings.Join(conds, " AND "))
		if strings.Contains(sel, "count(*)") && strings.Contains(sel, ",") {
			sql += " GROUP BY 1"
		}
		if rel != "steps" && strings.Contains(sql, "step_index") {
			sql = strings.ReplaceAll(sql, "step_index >= 1", "true")
		}
		want, _ := e.run(t, sql, false)
		got, d := e.run(t, sql, true)
		if !slices.Equal(got, want) {
			t.Fatalf("%s\nrouted (%s, %d sources): %v\nunrouted: %v", sql, d.Outcome, d.Sources, got, want)
		}
		if d.Outcome == Applied {
			applied++
		}
	}
	if applied < n/2 {
		t.Fatalf("only %d of %d routable statements were routed", applied, n)
	}
}

func TestRoutingDecisions(t *testing.T) {
	e := open(t, fixture(t, 10), Limits{MaxCandidates: 4})
	for _, tt := range []struct {
		sql     string
		outcome string
		files   string // the routed sources, when applied
	}{
		// One source holds s3-0: the statement reads only it.
		{"SELECT * FROM runs WHERE session_id = 's3-0'", Applied, "part0/f003.jsonl"},
		// s3-1 is in f003 and (as a shared session) in f004.
		{"SELECT * FROM steps WHERE session_id = 's3-1'", Applied, "part0/f003.jsonl part1/f004.jsonl"},
		// Several predicates intersect: s3-1 is in f003 and f004, s5-0 in
		// f005; model m0 in f000, f003, f006 and f009.
		{"SELECT * FROM runs WHERE session_id IN ('s3-1', 's5-0') AND agent_model_name = 'm0'", Applied, "part0/f003.jsonl"},
		{"SELECT * FROM tool_calls WHERE run_id = 's7-0' AND session_id = 's7-0'", Applied, "part1/f007.jsonl"},
		{"SELECT * FROM runs WHERE session_id IN ('s1-0', 's8-0')", Applied, "part1/f001.jsonl part2/f008.jsonl"},
		// A value no source holds: nothing to read.
		{"SELECT * FROM runs WHERE session_id = 'nope'", Applied, ""},
		// model m9 is in 9 files: more than 4 candidates.
		{"SELECT * FROM runs WHERE agent_model_name = 'm9'", NotSelective, ""},
		{"SELECT * FROM runs WHERE _file_ = 'part0/f000.jsonl' AND session_id = 's0-0'", AlreadyPruned, ""},
		{"SELECT * FROM runs WHERE session_id = 's1-0' OR session_id = 's2-0'", NotApplicable, ""},
		{"SELECT * FROM runs", NotApplicable, ""},
		// agent_model_name is not a column of steps: never routed there.
		{"SELECT * FROM steps WHERE model_name = 'm0'", NotApplicable, ""},
		{"SELECT r.* FROM runs r JOIN steps s ON r._file_ = s._file_ AND r.session_id = s.session_id WHERE r.session_id = 's1-0'", NotApplicable, ""},
	} {
		an, err := e.eng.Analyze(context.Background(), tt.sql)
		if err != nil {
			t.Fatal(err)
		}
		d := e.ix.Route(context.Background(), an)
		if d.Outcome != tt.outcome {
			t.Errorf("%s: outcome %s (%s), want %s", tt.sql, d.Outcome, d.Reason, tt.outcome)
			continue
		}
		if d.Outcome == Applied {
			files := d.Restrict[engine.RelationKey{Dataset: catalog.DefaultAlias, Relation: an.Refs[0].Relation}]
			if got := strings.Join(files, " "); got != tt.files {
				t.Errorf("%s: routed to %q, want %q", tt.sql, got, tt.files)
			}
		}
	}
	built, failed := e.ix.State()
	if len(built) != 1 || built[0].Layer != "runs" || built[0].Sources != 10 || len(failed) != 0 {
		t.Fatalf("index state %+v / %+v: want the runs layer over all 10 sources", built, failed)
	}
}

// A layer over its caps is dropped, not published half built: statements
// keep their original plan, and the failure is remembered.
func TestLayerOverItsCapsFallsBack(t *testing.T) {
	for _, lim := range []Limits{{MaxRows: 5}, {MaxDistinct: 5}} {
		e := open(t, fixture(t, 6), lim)
		sql := "SELECT session_id FROM runs WHERE session_id = 's2-0'"
		want, _ := e.run(t, sql, false)
		got, d := e.run(t, sql, true)
		if d.Outcome != Unavailable || !slices.Equal(got, want) {
			t.Fatalf("limits %+v: outcome %s, rows %v (want %v)", lim, d.Outcome, got, want)
		}
		if _, failed := e.ix.State(); len(failed) != 1 || !strings.Contains(failed[0].Error, "over the index caps") {
			t.Fatalf("limits %+v: cached failure %+v", lim, failed)
		}
		resolves := e.snap.Resolves()
		if _, d := e.run(t, sql, true); d.Outcome != Unavailable || e.snap.Resolves() != resolves {
			t.Fatalf("the failed layer is rebuilt instead of remembered")
		}
	}
}

// Concurrent first routable statements build the layer once.
func TestLayerBuildIsSingleFlight(t *testing.T) {
	e := open(t, fixture(t, 8), Limits{})
	an, err := e.eng.Analyze(context.Background(), "SELECT * FROM runs WHERE session_id = 's1-0'")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Decision, 8)
	for range 8 {
		go func() { done <- e.ix.Route(context.Background(), an) }()
	}
	for range 8 {
		if d := <-done; d.Outcome != Applied || d.Sources != 1 {
			t.Fatalf("decision %+v", d)
		}
	}
	if n := e.snap.Resolves(); n != 8 {
		t.Fatalf("%d resolutions, want each of the 8 sources once", n)
	}
}
