package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

var parser *query.Parser

func TestMain(m *testing.M) { testutil.MainWithParser(m, &parser) }

// chatLine is one OpenAI chat conversation with n tool calls, tagged so
// business predicates can select it.
func chatLine(tag string, n int) string {
	msgs := []string{`{"role":"system","content":"sys"}`, fmt.Sprintf(`{"role":"user","content":"task %s"}`, tag)}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"%s","type":"function","function":{"name":"tool_%d","arguments":"{}"}}]}`, id, i%3),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"%s","content":"out %s %d"}`, id, tag, i))
	}
	msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":"done %s"}`, tag))
	return `{"messages":[` + strings.Join(msgs, ",") + "]}\n"
}

// fixture writes a Dataset of n chat JSONL files under dirs a/ and b/.
func fixture(t testing.TB, n int) string {
	t.Helper()
	root := t.TempDir()
	for i := 0; i < n; i++ {
		dir := "a"
		if i%2 == 1 {
			dir = "b"
		}
		path := filepath.Join(root, dir, fmt.Sprintf("f%03d.jsonl", i))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		content := chatLine(fmt.Sprintf("t%d", i), i%4) + chatLine(fmt.Sprintf("u%d", i), 1)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func open(t testing.TB, root string, opts catalog.Options) (*catalog.Snapshot, *Engine) {
	t.Helper()
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := New(snap, parser, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
	t.Cleanup(func() { e.Close(); snap.Close() })
	return snap, e
}

func mustQuery(t testing.TB, e *Engine, sql string) *Result {
	t.Helper()
	res, err := e.Query(context.Background(), sql, QueryOptions{})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

func TestZeroResolvesAfterSnapshotAndEngineConstruction(t *testing.T) {
	snap, e := open(t, fixture(t, 6), catalog.DefaultOptions())
	_ = e
	if n := snap.Resolves(); n != 0 {
		t.Fatalf("resolves after construction = %d, want 0", n)
	}
	mustQuery(t, e, "SELECT count(*) FROM sources")
	mustQuery(t, e, "DESCRIBE runs")
	mustQuery(t, e, "SELECT table_name FROM information_schema.tables")
	if n := snap.Resolves(); n != 0 {
		t.Fatalf("metadata queries resolved %d sources", n)
	}
}

func TestFilePredicateResolvesOnlyHits(t *testing.T) {
	snap, e := open(t, fixture(t, 10), catalog.DefaultOptions())
	res := mustQuery(t, e, "SELECT count(*) FROM steps WHERE _file_ IN ('a/f000.jsonl', 'b/f003.jsonl') AND source = 'tool'")
	if got := res.Rows[0][0]; got != int64(0+3+1+1) {
		t.Fatalf("tool steps = %v, want 5", got)
	}
	if n := snap.Resolves(); n != 2 {
		t.Fatalf("resolved %d sources, want 2", n)
	}
	r := res.Pruning[0]
	if r.Considered != 10 || r.Skipped != 8 || strings.Join(r.Resolved, ",") != "a/f000.jsonl,b/f003.jsonl" {
		t.Fatalf("pruning report %+v", r)
	}
	// Resolution is cached for the Snapshot: the same relation of the same
	// sources is not resolved again.
	mustQuery(t, e, "SELECT count(*) FROM steps WHERE _file_ = 'a/f000.jsonl'")
	if n := snap.Resolves(); n != 2 {
		t.Fatalf("re-resolved: %d", n)
	}
	// Another relation of a resolved source is resolved once more, for
	// that relation only (the steps query did not write runs).
	mustQuery(t, e, "SELECT count(*) FROM runs WHERE _file_ = 'a/f000.jsonl'")
	if n := snap.Resolves(); n != 3 {
		t.Fatalf("runs of a/f000.jsonl: %d resolutions in total, want 3", n)
	}
	// The runs of all five b/ sources, b/f003.jsonl's included.
	mustQuery(t, e, "SELECT count(*) FROM runs WHERE _file_ LIKE 'b/%'")
	if n := snap.Resolves(); n != 3+5 {
		t.Fatalf("LIKE 'b/%%' resolved %d in total, want 8", n)
	}
}

func TestSingleSourceHitHasNoUnionInPlan(t *testing.T) {
	_, e := open(t, fixture(t, 4), catalog.DefaultOptions())
	plan := planText(t, mustQuery(t, e, "EXPLAIN SELECT * FROM runs WHERE _file_ = 'a/f002.jsonl'"))
	if strings.Contains(strings.ToUpper(plan), "UNION") {
		t.Fatalf("single-source plan has a UNION:\n%s", plan)
	}
	// Normalized file sources share one Parquet scan, so even several of
	// them need no UNION.
	plan = planText(t, mustQuery(t, e, "EXPLAIN SELECT * FROM runs"))
	if strings.Contains(strings.ToUpper(plan), "UNION") {
		t.Fatalf("file sources should share one scan:\n%s", plan)
	}
}

func planText(t testing.TB, res *Result) string {
	var b strings.Builder
	for _, r := range res.Rows {
		for _, v := range r {
			fmt.Fprint(&b, v, "\n")
		}
	}
	return b.String()
}

func TestEmptyDatasetHasSixTypedRelations(t *testing.T) {
	_, e := open(t, t.TempDir(), catalog.DefaultOptions())
	res := mustQuery(t, e, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'dataset' ORDER BY 1")
	var names []string
	for _, r := range res.Rows {
		names = append(names, r[0].(string))
	}
	if strings.Join(names, ",") != "events,projections,runs,sources,steps,tool_calls" {
		t.Fatalf("relations: %v", names)
	}
	for _, rel := range names {
		if n := mustQuery(t, e, "SELECT count(*) FROM "+rel).Rows[0][0]; n != int64(0) {
			t.Fatalf("%s has %v rows", rel, n)
		}
	}
	cols := mustQuery(t, e, "SELECT session_id, step_count, started_at FROM runs")
	if strings.Join(cols.Types, ",") != "VARCHAR,BIGINT,TIMESTAMPTZ" {
		t.Fatalf("empty runs types: %v", cols.Types)
	}
}

func TestLateErrorIsNotSkippedUnderReport(t *testing.T) {
	root := fixture(t, 2)
	if err := os.WriteFile(filepath.Join(root, "a", "bad.jsonl"), []byte("{\"messages\": [{\"role\":\"user\",\"content\":\"x\"}]}\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := catalog.DefaultOptions()
	opts.Errors = catalog.ErrorsReport
	_, e := open(t, root, opts)
	_, err := e.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{})
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl") {
		t.Fatalf("a parse error at scan time must fail the query, naming the file: %v", err)
	}
	// A query that prunes the bad source away still works.
	mustQuery(t, e, "SELECT count(*) FROM runs WHERE _file_ <> 'a/bad.jsonl'")
}

func TestStrictAndReportPolicies(t *testing.T) {
	root := fixture(t, 2)
	store := filepath.Join(root, "broken-store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "CURRENT"), []byte("gen-000009\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mount := []catalog.DatasetMount{{Alias: "d", URI: root}}
	if _, err := catalog.Build(context.Background(), mount, catalog.DefaultOptions()); err == nil || !strings.Contains(err.Error(), "broken-store") {
		t.Fatalf("strict build must fail naming the source: %v", err)
	}
	opts := catalog.DefaultOptions()
	opts.Errors = catalog.ErrorsReport
	snap, err := catalog.Build(context.Background(), mount, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	e := New(snap, parser, Config{Limits: LimitsFrom(snap.Options)})
	res := mustQuery(t, e, "SELECT _file_, status, error IS NOT NULL FROM d.sources ORDER BY 1")
	if len(res.Rows) != 3 || res.Rows[2][0] != "broken-store" || res.Rows[2][1] != "error" || res.Rows[2][2] != true {
		t.Fatalf("sources: %v", res.Rows)
	}
	if n := mustQuery(t, e, "SELECT count(*) FROM d.runs").Rows[0][0]; n != int64(4) {
		t.Fatalf("runs from ready sources = %v, want 4", n)
	}
	// The table is refilled for each query (a reused instance held the
	// last one's rows), from a file that is gone once the table holds them.
	for range 2 {
		if n := mustQuery(t, e, "SELECT count(*) FROM d.sources").Rows[0][0]; n != int64(3) {
			t.Fatalf("sources = %v rows, want 3", n)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(snap.TempDir, "sources-*")); len(left) > 0 {
		t.Fatalf("the sources table's files are left behind: %v", left)
	}
}

func TestChangedFileFailsTheQuery(t *testing.T) {
	root := fixture(t, 2)
	_, e := open(t, root, catalog.DefaultOptions())
	path := filepath.Join(root, "a", "f000.jsonl")
	if err := os.WriteFile(path, []byte(chatLine("changed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(path, future, future)
	_, err := e.Query(context.Background(), "SELECT * FROM runs", QueryOptions{})
	var changed *catalog.ErrSourceChanged
	if !errors.As(err, &changed) {
		t.Fatalf("want ErrSourceChanged, got %v", err)
	}
}

func TestUserSQLCannotEscapeTheSandbox(t *testing.T) {
	root := fixture(t, 1)
	_, e := open(t, root, catalog.DefaultOptions())
	secret := filepath.Join(t.TempDir(), "secret.csv")
	os.WriteFile(secret, []byte("a\n1\n"), 0o644)
	for _, sql := range []string{
		"SELECT * FROM read_text('/etc/passwd')",
		fmt.Sprintf("SELECT * FROM read_csv('%s')", secret),
		fmt.Sprintf("SELECT * FROM '%s'", secret),
		"SELECT 1; COPY (SELECT 1) TO '/tmp/pchronicle-escape.csv'",
		"COPY runs TO '/tmp/pchronicle-escape.csv'",
		"ATTACH '/tmp/x.db' AS x",
		"INSTALL httpfs",
		"LOAD httpfs",
		"SET enable_external_access=true",
		"PRAGMA version",
		"SELECT 1 /* ; */ ; ATTACH '/tmp/y.db'",
		"SELECT getenv('HOME')",
		"CREATE TABLE t AS SELECT 1",
		"SELECT * FROM glob('/etc/*')",
		"SELECT * FROM ｒｅａｄ_text('/etc/passwd')",
	} {
		if _, err := e.Query(context.Background(), sql, QueryOptions{}); err == nil {
			t.Errorf("accepted: %s", sql)
		}
	}
	if _, err := os.Stat("/tmp/pchronicle-escape.csv"); err == nil {
		t.Fatal("a COPY escaped the sandbox")
	}
}

func TestCrossDatasetJoinAllowedSameDatasetJoinNeedsFile(t *testing.T) {
	a, b := fixture(t, 2), fixture(t, 3)
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "a", URI: a}, {Alias: "b", URI: b}}, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	e := New(snap, parser, Config{Limits: LimitsFrom(snap.Options)})
	res := mustQuery(t, e, "SELECT count(*) FROM a.runs x JOIN b.runs y ON x.session_id = y.session_id")
	// Every file holds sessions line-1 and line-2: each of a's 4 runs meets b's 3 of the same id.
	if res.Rows[0][0] != int64(4*3) {
		t.Fatalf("cross-Dataset join rows = %v, want 12", res.Rows[0][0])
	}
	if _, err := e.Query(context.Background(), "SELECT count(*) FROM a.runs x JOIN a.steps y ON x.session_id = y.session_id", QueryOptions{}); err == nil {
		t.Fatal("same-Dataset join without _file_ accepted")
	}
	mustQuery(t, e, "SELECT count(*) FROM a.runs x JOIN a.steps y ON x._file_ = y._file_ AND x.session_id = y.session_id")
	if _, err := e.Query(context.Background(), "SELECT * FROM runs", QueryOptions{}); err == nil {
		t.Fatal("unqualified name accepted with only mounts")
	}
}

func TestMaxOutputRows(t *testing.T) {
	opts := catalog.DefaultOptions()
	opts.MaxOutputRows = 3
	_, e := open(t, fixture(t, 4), opts)
	if _, err := e.Query(context.Background(), "SELECT * FROM runs", QueryOptions{}); !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("want ErrTooManyRows, got %v", err)
	}
	mustQuery(t, e, "SELECT * FROM runs LIMIT 3")
}

// TestInstanceReadsOnlyPinnedData checks the second wall on its own: below
// SQL validation, a query's DuckDB instance cannot read a non-source file
// inside the Dataset root or anything outside the Snapshot, nor change its
// configuration, while its views still read the resolved data.
func TestInstanceReadsOnlyPinnedData(t *testing.T) {
	root := fixture(t, 2)
	notes := filepath.Join(root, "a", "notes.csv")
	if err := os.WriteFile(notes, []byte("a\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, e := open(t, root, catalog.DefaultOptions())
	ctx := context.Background()
	mustQuery(t, e, "SELECT count(*) FROM steps") // the spare now holds these views
	an, err := e.analyze(ctx, nil, "SELECT count(*) FROM steps")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.planFor(ctx, an, nil)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := e.open(ctx, p, e.cfg.Limits)
	if err != nil {
		t.Fatal(err)
	}
	defer e.release(inst, false)
	var n int64
	if err := inst.conn.QueryRowContext(ctx, "SELECT count(*) FROM steps").Scan(&n); err != nil || n == 0 {
		t.Fatalf("views over the resolved data: n=%d, err=%v", n, err)
	}
	for _, q := range []string{
		fmt.Sprintf("SELECT * FROM read_csv('%s')", notes),
		fmt.Sprintf("SELECT * FROM read_text('%s')", filepath.Join(root, "a", "f000.jsonl")),
		"SELECT * FROM read_text('/etc/passwd')",
		"SET allowed_directories=['/']",
		"SET enable_external_access=true",
	} {
		if _, err := inst.conn.ExecContext(ctx, q); err == nil {
			t.Errorf("the instance accepted %s", q)
		}
	}
}

// TestPreparedInstanceMatchesItsQuery runs queries whose views differ one
// after another on one engine, so each runs in an instance prepared with the
// previous query's views: every result must equal that of a new engine.
func TestPreparedInstanceMatchesItsQuery(t *testing.T) {
	root := fixture(t, 6)
	_, e := open(t, root, catalog.DefaultOptions())
	queries := []string{
		"SELECT _file_, count(*) FROM steps WHERE _file_ = 'a/f000.jsonl' GROUP BY 1",
		"SELECT _file_, count(*) FROM steps WHERE _file_ = 'b/f001.jsonl' GROUP BY 1",
		"SELECT count(*) FROM tool_calls",
		"SELECT _file_, count(*) FROM steps GROUP BY 1",
		"SELECT _file_, count(*) FROM steps WHERE _file_ = 'a/f000.jsonl' GROUP BY 1",
		"SELECT count(*) FROM sources",
		"SELECT count(*) FROM runs WHERE _file_ LIKE 'b/%'",
	}
	for _, q := range queries {
		got := canonicalRows(mustQuery(t, e, q))
		_, fresh := open(t, root, catalog.DefaultOptions())
		want := canonicalRows(mustQuery(t, fresh, q))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: got %v, want %v", q, got, want)
		}
	}
}

// testConfig is an Engine configuration with the default limits.
func testConfig(positional bool) Config {
	return Config{Positional: positional, Limits: LimitsFrom(catalog.DefaultOptions())}
}

// TestWarmPreparesThePredecessorsQueries: an engine warmed with another's
// recent queries (as a refresh does before it publishes) has resolved their
// sources and keeps an instance with the latest one's views, so that query
// then resolves nothing and runs no view set-up, with the same rows.
func TestWarmPreparesThePredecessorsQueries(t *testing.T) {
	root := fixture(t, 6)
	_, old := open(t, root, catalog.DefaultOptions())
	const count = "SELECT count(*) FROM tool_calls"
	const wide = "SELECT _file_, count(*) AS n FROM steps GROUP BY ALL ORDER BY ALL"
	mustQuery(t, old, count)
	want := mustQuery(t, old, wide)
	mustQuery(t, old, count) // the latest again
	if got := old.Recent(); !slices.Equal(got, []string{wide, count}) {
		t.Fatalf("recent queries %q, want %q", got, []string{wide, count})
	}

	snap, e := open(t, root, catalog.DefaultOptions())
	e.Warm(context.Background(), append(old.Recent(), "SELECT nothing FROM nowhere"))
	resolved := snap.Resolves()
	if resolved == 0 {
		t.Fatal("warming resolved no source")
	}
	an, err := e.analyze(context.Background(), nil, count)
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	p := e.plans[an]
	idle := slices.Clone(e.idle)
	e.mu.Unlock()
	if p == nil || len(idle) != 1 || !maps.Equal(idle[0].views, p.views) {
		t.Fatalf("after warming: plan %v, %d idle instances; want the latest query's plan and one instance with its views", p != nil, len(idle))
	}
	if got := mustQuery(t, e, wide); !reflect.DeepEqual(got.Rows, want.Rows) {
		t.Fatalf("warmed engine: %v, want %v", got.Rows, want.Rows)
	}
	mustQuery(t, e, count)
	if n := snap.Resolves(); n != resolved {
		t.Fatalf("the warmed queries resolved %d more sources", n-resolved)
	}
}
