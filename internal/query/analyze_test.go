package query

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cases live in testdata/*.cases. Format:
//
//	=== name
//	mounts: ds, other        (optional; default "ds")
//	default                  (optional: positional form, schema "dataset")
//	sql:                     (SQL lines follow, up to "expect:")
//	sqlq: "..."              (alternative: one Go-quoted SQL string)
//	expect: error SUBSTRING  | expect: ok KIND [explain] [analyze]
//	ref DATASET.RELATION [+file ...] [-file ...] [*]
//
// `+f` means MayMatch(f), `-f` means !MayMatch(f), `*` means Unconstrained.
// Refs are listed in source order and must match exactly.
type testCase struct {
	name, file string
	line       int
	sql        string
	opts       AnalyzeOptions
	expect     string
	refs       []string
}

func loadCases(t testing.TB) []testCase {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.cases")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test cases: %v", err)
	}
	var out []testCase
	for _, p := range paths {
		out = append(out, parseCases(t, p)...)
	}
	return out
}

func parseCases(t testing.TB, path string) []testCase {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		cases []testCase
		cur   *testCase
		inSQL bool
		sqlB  []string
	)
	flush := func() {
		if cur != nil {
			if cur.sql == "" {
				cur.sql = strings.Join(sqlB, "\n")
			}
			cases = append(cases, *cur)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "=== "):
			flush()
			cur = &testCase{name: strings.TrimPrefix(line, "=== "), file: filepath.Base(path), line: n,
				opts: AnalyzeOptions{Datasets: []string{"ds"}}}
			inSQL, sqlB = false, nil
		case cur == nil:
			// comments before the first case
		case inSQL && !strings.HasPrefix(line, "expect:"):
			sqlB = append(sqlB, line)
		case strings.HasPrefix(line, "expect:"):
			inSQL = false
			cur.expect = strings.TrimSpace(strings.TrimPrefix(line, "expect:"))
		case strings.HasPrefix(line, "mounts:"):
			cur.opts.Datasets = nil
			for _, d := range strings.Split(strings.TrimPrefix(line, "mounts:"), ",") {
				if d = strings.TrimSpace(d); d != "" {
					cur.opts.Datasets = append(cur.opts.Datasets, d)
				}
			}
		case line == "default":
			cur.opts.Default = true
		case line == "sql:":
			inSQL = true
		case strings.HasPrefix(line, "sqlq:"):
			s, err := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(line, "sqlq:")))
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			cur.sql = s
		case strings.HasPrefix(line, "ref "):
			cur.refs = append(cur.refs, strings.TrimSpace(strings.TrimPrefix(line, "ref ")))
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		default:
			t.Fatalf("%s:%d: unexpected line %q", path, n, line)
		}
	}
	flush()
	return cases
}

var (
	sharedParser     *Parser
	sharedParserErr  error
	sharedParserOnce sync.Once
)

func testParser(t testing.TB) *Parser {
	t.Helper()
	sharedParserOnce.Do(func() { sharedParser, sharedParserErr = NewParser() })
	if sharedParserErr != nil {
		t.Fatal(sharedParserErr)
	}
	return sharedParser
}

func TestAnalyzeCases(t *testing.T) {
	p := testParser(t)
	for _, tc := range loadCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			where := fmt.Sprintf("%s:%d", tc.file, tc.line)
			res, err := p.Analyze(context.Background(), tc.sql, tc.opts)
			if want, ok := strings.CutPrefix(tc.expect, "error "); ok {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("%s: want ValidationError containing %q, got %v (res %+v)", where, want, err, res)
				}
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: error %q does not contain %q", where, err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: unexpected error: %v", where, err)
			}
			checkOK(t, where, tc, res)
		})
	}
}

func checkOK(t *testing.T, where string, tc testCase, res *Analysis) {
	fields := strings.Fields(tc.expect)
	if len(fields) < 2 || fields[0] != "ok" {
		t.Fatalf("%s: bad expect line %q", where, tc.expect)
	}
	got := []string{"ok", string(res.Kind)}
	if res.Explain {
		got = append(got, "explain")
	}
	if res.Analyze {
		got = append(got, "analyze")
	}
	if strings.Join(got, " ") != strings.Join(fields, " ") {
		t.Errorf("%s: got %q, want %q", where, strings.Join(got, " "), tc.expect)
	}
	if len(res.Refs) != len(tc.refs) {
		t.Fatalf("%s: got %d refs %s, want %d", where, len(res.Refs), describeRefs(res.Refs), len(tc.refs))
	}
	for i, spec := range tc.refs {
		r := res.Refs[i]
		parts := strings.Fields(spec)
		if name := r.Dataset + "." + r.Relation; name != parts[0] {
			t.Errorf("%s: ref %d is %s, want %s", where, i, name, parts[0])
		}
		for _, probe := range parts[1:] {
			switch {
			case probe == "*":
				if !r.Candidates.Unconstrained() {
					t.Errorf("%s: ref %d (%s) filter %s, want unconstrained", where, i, parts[0], r.Candidates)
				}
			case probe[0] == '+' && !r.Candidates.MayMatch(probe[1:]):
				t.Errorf("%s: ref %d (%s) filter %s rejects %q", where, i, parts[0], r.Candidates, probe[1:])
			case probe[0] == '-' && r.Candidates.MayMatch(probe[1:]):
				t.Errorf("%s: ref %d (%s) filter %s admits %q", where, i, parts[0], r.Candidates, probe[1:])
			}
		}
	}
}

func describeRefs(refs []TableRef) string {
	var s []string
	for _, r := range refs {
		s = append(s, fmt.Sprintf("%s.%s[%s]", r.Dataset, r.Relation, r.Candidates))
	}
	return strings.Join(s, " ")
}

func TestMayReadUnionsReferences(t *testing.T) {
	res, err := testParser(t).Analyze(context.Background(),
		"SELECT * FROM ds.runs WHERE _file_ = 'a' UNION ALL SELECT * FROM ds.runs WHERE _file_ = 'b'",
		AnalyzeOptions{Datasets: []string{"ds"}})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if got := res.MayRead("ds", "runs", file); got != want {
			t.Errorf("MayRead(runs, %q) = %v, want %v", file, got, want)
		}
	}
	if res.MayRead("ds", "steps", "a") {
		t.Error("an unreferenced relation must read nothing")
	}
}

func TestParserLockedDown(t *testing.T) {
	p := testParser(t)
	for _, stmt := range []string{"SET enable_external_access=true", "SELECT * FROM read_text('/etc/hostname')"} {
		if _, err := p.db.Exec(stmt); err == nil {
			t.Errorf("parser instance accepted %q", stmt)
		}
	}
}

// TestAnalyzeWideJoinsStayFast guards against super-quadratic analysis:
// DuckDB's expression depth limit caps a FROM at about 1,000 tables, and
// such a query must not pin a CPU for long. It counts CPU time (about 1.3 s
// for the USING chain on an idle machine), which a loaded machine does not
// inflate the way it does wall time.
func TestAnalyzeWideJoinsStayFast(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 950
	var comma, conds []string
	using := "SELECT 1 FROM ds.runs t0"
	for i := 0; i < n; i++ {
		comma = append(comma, fmt.Sprintf("ds.runs t%d", i))
		conds = append(conds, fmt.Sprintf("t%d._file_ = 'x'", i))
		if i > 0 {
			using += fmt.Sprintf(" JOIN ds.runs t%d USING (_file_)", i)
		}
	}
	queries := []string{
		"SELECT 1 FROM " + strings.Join(comma, ", ") + " WHERE " + strings.Join(conds, " AND "),
		using + " WHERE _file_ = 'a'",
	}
	for _, q := range queries {
		start := cpuTime()
		res, err := testParser(t).Analyze(context.Background(), q, AnalyzeOptions{Datasets: []string{"ds"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Refs) != n || res.Refs[n-1].Candidates.MayMatch("b") {
			t.Fatalf("got %d refs, last %s", len(res.Refs), res.Refs[n-1].Candidates)
		}
		if d := cpuTime() - start; d > 5*time.Second {
			t.Errorf("analysis of a %d-table join took %v of CPU time", n, d)
		}
	}
}

func TestAnalyzeConcurrent(t *testing.T) {
	p := testParser(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			q := fmt.Sprintf("SELECT * FROM ds.runs WHERE _file_ = 'f%d'", i)
			res, err := p.Analyze(context.Background(), q, AnalyzeOptions{Datasets: []string{"ds"}})
			if err == nil && (!res.MayRead("ds", "runs", fmt.Sprintf("f%d", i)) || res.MayRead("ds", "runs", "other")) {
				err = fmt.Errorf("query %d: wrong candidates %s", i, res.Refs[0].Candidates)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRouteFacts(t *testing.T) {
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	opts := AnalyzeOptions{Datasets: []string{"prod"}, Default: true}
	for _, tt := range []struct {
		sql  string
		want string // "" for nil facts
	}{
		{"SELECT * FROM runs WHERE session_id = 's1'", "dataset.runs file=false session_id=[s1]"},
		{"SELECT * FROM runs r WHERE 's1' = r.session_id AND agent_id IN ('a', NULL, 'b') AND step_count > 3", "dataset.runs file=false agent_id=[a b] session_id=[s1]"},
		{"SELECT count(*) FROM prod.steps WHERE session_id IN ('a', 'b') AND session_id = 'b'", "prod.steps file=false session_id=[b]"},
		{"SELECT * FROM runs WHERE session_id = 's1' OR run_id = 'r'", "dataset.runs file=false"},
		{"SELECT * FROM runs WHERE _file_ = 'a.json' AND session_id = 's1'", "dataset.runs file=true"},
		{"SELECT * FROM runs WHERE session_id = 5", "dataset.runs file=false"},
		{"SELECT * FROM runs WHERE session_id IN (SELECT 'x')", ""},
		{"SELECT * FROM runs", "dataset.runs file=false"},
		{"WITH x AS (SELECT * FROM runs) SELECT * FROM x WHERE session_id = 's'", ""},
		{"SELECT * FROM runs r JOIN steps s ON r._file_ = s._file_ AND r.session_id = s.session_id WHERE r.session_id = 's'", ""},
		{"SELECT * FROM runs WHERE session_id = 's' UNION ALL SELECT * FROM runs", ""},
		{"SELECT * FROM runs WHERE other.session_id = 's'", "dataset.runs file=false"},
		{"EXPLAIN SELECT * FROM runs WHERE session_id = 's'", ""},
	} {
		an, err := p.Analyze(context.Background(), tt.sql, opts)
		if err != nil {
			if tt.want == "" {
				continue
			}
			t.Fatalf("%s: %v", tt.sql, err)
		}
		got := ""
		if f := an.Route; f != nil {
			got = fmt.Sprintf("%s.%s file=%v", f.Dataset, f.Relation, f.FilePredicate)
			keys := make([]string, 0, len(f.Equal))
			for k := range f.Equal {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				got += fmt.Sprintf(" %s=%v", k, f.Equal[k])
			}
		}
		if got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.sql, got, tt.want)
		}
	}
}
