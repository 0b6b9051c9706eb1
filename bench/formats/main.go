// Command formats benchmarks pchronicle on real trajectory shapes against
// DuckDB's read_json over the same files with the same threads. For each
// shape (internal/benchcorpus: Codex rollouts, ATIF documents, OpenHands
// output, Inspect logs, one big chat JSONL, ATOF streams, generated Claude
// Code sessions) it builds a corpus of about -size MB and times, as whole
// processes:
//
//   - the first `pchronicle query` (the real binary, a fresh process, no
//     state kept between runs) of `count(*)` over tool_calls, and of a wide
//     aggregate over steps;
//   - DuckDB (duckdb-go, in a child process of this program) running the
//     nearest equivalent read_json query over the same files;
//   - normalization alone (every file through its adapter, rows dropped), as
//     MB per CPU-second;
//   - with -warm (the default), the second query: both queries again in new
//     processes over a normalization cache an earlier process filled,
//     against the same read_json and against DuckDB read_parquet over the
//     cache's own Parquet files (the same SQL, "FROM relation" replaced).
//
// Sides alternate, each measurement is repeated -runs times and medians are
// compared; peak RSS is the child's max RSS. Results go to stdout as a table
// with the ratios (ours / DuckDB: below 1 is faster), see
// docs/performance.md.
//
//	go run ./bench/formats -size 100 -threads 2 -runs 5
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/gcfloor"
	"github.com/pchronicle/pchronicle/internal/hugeheap"
)

// The two queries every shape runs.
const (
	countSQL = "SELECT count(*) FROM tool_calls"
	wideSQL  = "SELECT source, count(*) AS steps, count(DISTINCT session_id) AS sessions, sum(length(message_value)) AS text_chars, " +
		"sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens, min(timestamp) AS first_ts, max(timestamp) AS last_ts " +
		"FROM steps GROUP BY source ORDER BY source"
)

// measure is one child process run.
type measure struct {
	Wall, CPU float64 // seconds
	RSSMB     float64
	Out       string // the query's result, for checking the two sides agree
}

func main() {
	sizeMB := flag.Int64("size", 100, "corpus size per shape in MB")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "pchronicle-formats"), "work directory: corpora (reused when present) and the binary")
	samples := flag.String("samples", "", "the shared samples directory (default: ../shared/samples beside the repository)")
	shapes := flag.String("shapes", strings.Join(benchcorpus.Shapes(), ","), "shapes to run")
	threads := flag.Int("threads", runtime.NumCPU(), "threads for both sides")
	runs := flag.Int("runs", 5, "runs per measurement (medians are reported)")
	bin := flag.String("bin", "", "pchronicle binary (default: built from ./cmd/pchronicle into -dir)")
	warm := flag.Bool("warm", true, "also time the second query, over a warm normalization cache")
	child := flag.String("child", "", "internal: run one side (duck-count|duck-wide|duck-sql|normalize)")
	childSQL := flag.String("sql", "", "internal: the query of a duck-sql child")
	corpusDir := flag.String("corpus", "", "internal: the corpus of a child")
	cpuProfile := flag.String("cpuprofile", "", "with -child: write the child's CPU profile to this file (e.g. -child normalize -corpus DIR/codex/data -threads 1)")
	flag.Parse()

	if *child != "" {
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			check(err)
			check(pprof.StartCPUProfile(f))
			defer func() { pprof.StopCPUProfile(); check(f.Close()) }()
		}
		if *child == "duck-sql" {
			duckRun(*childSQL, *threads)
			return
		}
		runChild(*child, *corpusDir, *threads)
		return
	}
	check(os.MkdirAll(*dir, 0o755))
	if *samples == "" {
		*samples = filepath.Join(repoRoot(), "..", "shared", "samples")
	}
	if *bin == "" {
		*bin = filepath.Join(*dir, "pchronicle")
		fmt.Fprintln(os.Stderr, "building", *bin)
		cmd := exec.Command("go", "build", "-o", *bin, "./cmd/pchronicle")
		cmd.Dir, cmd.Stderr = repoRoot(), os.Stderr
		check(cmd.Run())
	}
	var loads []float64
	fmt.Printf("threads: %d, runs: %d (medians), load average at start: %s\n", *threads, *runs, loadavg())
	var rows, warmRows []string
	for _, shape := range strings.Split(*shapes, ",") {
		c, err := benchcorpus.Cached(*samples, filepath.Join(*dir, shape), shape, *sizeMB<<20)
		check(err)
		mb := float64(c.Bytes) / 1e6
		fmt.Printf("\n== %s: %d files, %.1f MB (%d copies)\n", shape, len(c.Files), mb, c.Copies)
		var oc, dc, ow, dw, norm []measure
		for r := 0; r < *runs; r++ {
			loads = append(loads, load1())
			alternating(r,
				func() { oc = append(oc, ours(*bin, c.Dir, countSQL, *threads)) },
				func() { dc = append(dc, spawn("duck-count", c.Dir, *threads)) },
				func() { ow = append(ow, ours(*bin, c.Dir, wideSQL, *threads)) },
				func() { dw = append(dw, spawn("duck-wide", c.Dir, *threads)) },
				func() { norm = append(norm, spawn("normalize", c.Dir, *threads)) },
			)
		}
		o, d := median(oc), median(dc)
		fmt.Printf("count(*) tool_calls: pchronicle %s = %s | duckdb %s = %s\n", strings.TrimSpace(o.Out), show(o), strings.TrimSpace(d.Out), show(d))
		wo, wd := median(ow), median(dw)
		fmt.Printf("wide steps aggregate: pchronicle %s | duckdb %s\n", show(wo), show(wd))
		fmt.Printf("  pchronicle:\n%s  duckdb:\n%s", indent(wo.Out), indent(wd.Out))
		n := median(norm)
		fmt.Printf("normalize alone: %s, %.0f MB/s per core (duckdb count: %.0f MB/s per core)\n", show(n), mb/n.CPU, mb/d.CPU)
		rows = append(rows, fmt.Sprintf("| %s | %.0f MB, %d files | %.2f s / %.0f MB | %.2f s / %.0f MB | **%.2f×** | %.2f s | %.2f s | **%.2f×** | %.0f | %.0f |",
			shape, mb, len(c.Files), o.Wall, o.RSSMB, d.Wall, d.RSSMB, o.Wall/d.Wall, wo.Wall, wd.Wall, wo.Wall/wd.Wall, mb/n.CPU, mb/d.CPU))
		if *warm {
			hc, hw, pc, pw := second(*bin, c.Dir, *threads, *runs, o.Out, wo.Out)
			fmt.Printf("second count(*): pchronicle %s | duckdb read_parquet %s\n", show(hc), show(pc))
			fmt.Printf("second wide aggregate: pchronicle %s | duckdb read_parquet %s\n", show(hw), show(pw))
			warmRows = append(warmRows, fmt.Sprintf("| %s | %.0f ms / %.0f MB | %.0f ms | %.0f ms | **%.2f×** | **%.2f×** | %.0f ms | %.0f ms | %.0f ms | **%.2f×** | **%.2f×** |",
				shape, hc.Wall*1e3, hc.RSSMB, d.Wall*1e3, pc.Wall*1e3, hc.Wall/d.Wall, hc.Wall/pc.Wall,
				hw.Wall*1e3, wd.Wall*1e3, pw.Wall*1e3, hw.Wall/wd.Wall, hw.Wall/pw.Wall))
		}
	}
	sort.Float64s(loads)
	fmt.Printf("\nload average (1 min) during the runs: %.1f–%.1f, median %.1f\n\n", loads[0], loads[len(loads)-1], loads[len(loads)/2])
	fmt.Println("| shape | corpus | count(*) tool_calls: pchronicle wall / peak RSS | DuckDB read_json | ratio | wide steps aggregate: pchronicle | DuckDB | ratio | normalize MB/s per core | DuckDB MB/s per core |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(r)
	}
	if len(warmRows) > 0 {
		fmt.Println("\nSecond query, warm normalization cache (read_json: the first table's DuckDB side):")
		fmt.Println()
		fmt.Println("| shape | count(*): pchronicle / peak RSS | DuckDB read_json | DuckDB read_parquet | vs read_json | vs read_parquet | wide: pchronicle | read_json | read_parquet | vs read_json | vs read_parquet |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
		for _, r := range warmRows {
			fmt.Println(r)
		}
	}
}

// second times both queries over a warm normalization cache: one process
// fills a cache of its own (its rows must be the first query's, first and
// wide), then warm processes alternate with DuckDB read_parquet over the
// cache's files. It returns the medians: ours count, ours wide, DuckDB's
// count, DuckDB's wide.
func second(bin, dir string, threads, runs int, first, firstWide string) (oc, ow, dc, dw measure) {
	cache, err := os.MkdirTemp("", "pchronicle-formats-warm-")
	check(err)
	defer os.RemoveAll(cache)
	for _, q := range []struct{ sql, want string }{{countSQL, first}, {wideSQL, firstWide}} {
		for range 2 { // the process that fills, and one that hits
			if got := oursIn(bin, dir, q.sql, threads, cache).Out; got != q.want {
				check(fmt.Errorf("%s: over the cache the rows differ from the first query's:\n%s\n%s", q.sql, got, q.want))
			}
		}
	}
	countParquet, err := benchcorpus.ReadCachedParquet(countSQL, "tool_calls", cache)
	check(err)
	wideParquet, err := benchcorpus.ReadCachedParquet(wideSQL, "steps", cache)
	check(err)
	var ocs, ows, dcs, dws []measure
	for r := 0; r < runs; r++ {
		alternating(r,
			func() { ocs = append(ocs, oursIn(bin, dir, countSQL, threads, cache)) },
			func() { dcs = append(dcs, duckSQL(countParquet, threads)) },
			func() { ows = append(ows, oursIn(bin, dir, wideSQL, threads, cache)) },
			func() { dws = append(dws, duckSQL(wideParquet, threads)) },
		)
	}
	return median(ocs), median(ows), median(dcs), median(dws)
}

// alternating runs the sides of run r in order: pairs of ours and DuckDB's
// (the first four), then any others. In every odd run each pair goes the
// other way round, so neither side always meets a warmer page cache or a
// quieter machine.
func alternating(r int, sides ...func()) {
	if r%2 == 1 {
		sides[0], sides[1], sides[2], sides[3] = sides[1], sides[0], sides[3], sides[2]
	}
	for _, side := range sides {
		side()
	}
}

func show(m measure) string {
	return fmt.Sprintf("%.2f s wall, %.2f CPU-s, %.0f MB peak RSS", m.Wall, m.CPU, m.RSSMB)
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// median returns the run with the median wall time, with the median CPU
// and RSS of all runs.
func median(ms []measure) measure {
	byWall := slices.Clone(ms)
	sort.Slice(byWall, func(i, j int) bool { return byWall[i].Wall < byWall[j].Wall })
	m := byWall[len(byWall)/2]
	cpu, rss := make([]float64, len(ms)), make([]float64, len(ms))
	for i, x := range ms {
		cpu[i], rss[i] = x.CPU, x.RSSMB
	}
	sort.Float64s(cpu)
	sort.Float64s(rss)
	m.CPU, m.RSSMB = cpu[len(cpu)/2], rss[len(rss)/2]
	return m
}

// ours runs the real binary once, as a user's first query would: with an
// empty normalization cache of its own, which it fills (bench/cache times
// the queries after it).
func ours(bin, dir, sqlText string, threads int) measure {
	cache, err := os.MkdirTemp("", "pchronicle-formats-cache-")
	check(err)
	defer os.RemoveAll(cache)
	return oursIn(bin, dir, sqlText, threads, cache)
}

// oursIn runs the real binary once with the normalization cache in cache.
func oursIn(bin, dir, sqlText string, threads int, cache string) measure {
	cmd := exec.Command(bin, "query", dir, sqlText, "--format", "csv", "--threads", fmt.Sprint(threads), "--cache-dir", cache)
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", threads))
	return run(cmd)
}

func spawn(side, corpusDir string, threads int) measure {
	return run(exec.Command(os.Args[0], "-child", side, "-corpus", corpusDir, "-threads", fmt.Sprint(threads)))
}

// duckSQL runs one query in DuckDB in a child process.
func duckSQL(query string, threads int) measure {
	return run(exec.Command(os.Args[0], "-child", "duck-sql", "-sql", query, "-threads", fmt.Sprint(threads)))
}

func run(cmd *exec.Cmd) measure {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		check(fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args[:min(len(cmd.Args), 4)], " "), err, errb.String()))
	}
	m := measure{Wall: time.Since(start).Seconds(), Out: out.String()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		m.RSSMB = float64(ru.Maxrss) / 1024
	}
	return m
}

func runChild(side, corpusDir string, threads int) {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(corpusDir), "corpus.json"))
	check(err)
	var c benchcorpus.ShapeCorpus
	check(json.Unmarshal(b, &c))
	switch side {
	case "duck-count", "duck-wide":
		duck(&c, side == "duck-count", threads)
	case "normalize":
		normalize(c.Files, threads)
	default:
		check(fmt.Errorf("unknown side %q", side))
	}
}

// normalize runs every file through its adapter and drops the rows.
func normalize(files []string, threads int) {
	gcfloor.Start(gcfloor.DefaultFloor) // as the pchronicle binary does,
	hugeheap.Allow()                    // and as its one-shot commands do
	n, err := benchcorpus.Normalize(context.Background(), files, threads)
	check(err)
	fmt.Printf("%d Storylines, %d steps, %d tool calls\n", n.Storylines, n.Steps, n.ToolCalls)
}

// duck runs the nearest read_json equivalent of the count or the wide
// query over the corpus, as a user of DuckDB would write it.
func duck(c *benchcorpus.ShapeCorpus, count bool, threads int) {
	q := duckQueries(c)
	text := q.wide
	if count {
		text = q.count
	}
	duckRun(q.with+text, threads)
}

// duckRun runs query in a new in-memory DuckDB and prints its rows as CSV.
func duckRun(query string, threads int) {
	db, err := sql.Open("duckdb", "")
	check(err)
	defer db.Close()
	_, err = db.Exec(fmt.Sprintf("SET threads=%d", threads))
	check(err)
	rows, err := db.Query(query)
	check(err)
	defer rows.Close()
	cols, err := rows.Columns()
	check(err)
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	fmt.Println(strings.Join(cols, ","))
	for rows.Next() {
		check(rows.Scan(ptrs...))
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = ""
			} else {
				parts[i] = fmt.Sprint(v)
			}
		}
		fmt.Println(strings.Join(parts, ","))
	}
	check(rows.Err())
}

type queries struct{ with, count, wide string }

// duckQueries are, per shape, the read_json queries nearest to ours: the
// count of tool calls as the format records them, and the steps aggregate
// grouped by the record's role or kind (length of the message text, token
// sums where the format has them, first and last timestamps).
func duckQueries(c *benchcorpus.ShapeCorpus) queries {
	glob := func(pattern string) string { return sqlString(filepath.Join(c.Dir, pattern)) }
	const big = "maximum_object_size=1073741824"
	switch c.Shape {
	case benchcorpus.ShapeCodex:
		return queries{
			with: "WITH l AS (SELECT * FROM read_json(" + glob("**/*.jsonl") + ", format='newline_delimited', filename=true, " +
				"columns={timestamp: 'VARCHAR', type: 'VARCHAR', payload: 'JSON'})) ",
			count: "SELECT count(*) FROM l WHERE type = 'response_item' AND (payload->>'type') IN ('function_call', 'custom_tool_call', 'local_shell_call')",
			wide: "SELECT CASE WHEN type = 'response_item' THEN coalesce(payload->>'role', payload->>'type') ELSE type END AS source, count(*), " +
				"count(DISTINCT filename), sum(length(payload->>'content')), sum((payload->'info'->'last_token_usage'->>'input_tokens')::BIGINT), " +
				"sum((payload->'info'->'last_token_usage'->>'output_tokens')::BIGINT), min(timestamp), max(timestamp) FROM l GROUP BY 1 ORDER BY 1",
		}
	case benchcorpus.ShapeChat:
		return queries{
			with: "WITH m AS (SELECT conv, unnest(messages) AS m FROM (SELECT row_number() OVER () AS conv, messages FROM read_json(" + glob("*.jsonl") +
				", format='newline_delimited', columns={messages: 'JSON[]'}))) ",
			count: "SELECT sum(coalesce(json_array_length(m->'tool_calls'), 0)) FROM m",
			wide:  "SELECT m->>'role' AS source, count(*), count(DISTINCT conv), sum(length(m->>'content')), NULL, NULL, NULL, NULL FROM m GROUP BY 1 ORDER BY 1",
		}
	case benchcorpus.ShapeATIF:
		return queries{
			with: "WITH s AS (SELECT session_id, unnest(steps) AS s FROM read_json(" + glob("**/*.json") + ", format='auto', " + big +
				", columns={session_id: 'VARCHAR', steps: 'JSON[]'})) ",
			count: "SELECT sum(coalesce(json_array_length(s->'tool_calls'), 0)) FROM s",
			wide: "SELECT s->>'source' AS source, count(*), count(DISTINCT session_id), sum(length(s->>'message')), sum((s->'metrics'->>'prompt_tokens')::BIGINT), " +
				"sum((s->'metrics'->>'completion_tokens')::BIGINT), min(s->>'timestamp'), max(s->>'timestamp') FROM s GROUP BY 1 ORDER BY 1",
		}
	case benchcorpus.ShapeInspect:
		return queries{
			with: "WITH s AS (SELECT unnest(samples) AS s FROM read_json(" + glob("**/*.json") + ", format='auto', " + big + ", columns={samples: 'JSON[]'})), " +
				"m AS (SELECT (s->>'id') || '/' || (s->>'epoch') AS sample, unnest(CAST(s->'messages' AS JSON[])) AS m FROM s) ",
			count: "SELECT sum(coalesce(json_array_length(m->'tool_calls'), 0)) FROM m",
			wide:  "SELECT m->>'role' AS source, count(*), count(DISTINCT sample), sum(length(m->>'content')), NULL, NULL, NULL, NULL FROM m GROUP BY 1 ORDER BY 1",
		}
	case benchcorpus.ShapeOpenHands:
		return queries{
			with: "WITH h AS (SELECT instance_id, unnest(history) AS e FROM read_json(" + glob("**/*.jsonl") + ", format='newline_delimited', " + big +
				", columns={instance_id: 'VARCHAR', history: 'JSON[]'})) ",
			count: "SELECT count(*) FROM h WHERE (e->>'kind') = 'ActionEvent' OR (e->>'action') IN ('run', 'run_ipython', 'edit', 'read', 'write', 'browse', 'finish')",
			wide: "SELECT coalesce(e->>'source', e->>'kind', e->>'action') AS source, count(*), count(DISTINCT instance_id), sum(length(e->>'message')), " +
				"NULL, NULL, min(e->>'timestamp'), max(e->>'timestamp') FROM h GROUP BY 1 ORDER BY 1",
		}
	case benchcorpus.ShapeATOF:
		return queries{
			with: "WITH e AS (SELECT * FROM read_json(" + glob("**/*.jsonl") + ", format='newline_delimited', " +
				"columns={kind: 'VARCHAR', scope_type: 'VARCHAR', uuid: 'VARCHAR', parent_uuid: 'VARCHAR', timestamp: 'VARCHAR', name: 'VARCHAR', input: 'JSON', output: 'JSON'})) ",
			count: "SELECT count(*) FROM e WHERE scope_type = 'tool' AND kind = 'ScopeStart'",
			wide: "SELECT scope_type AS source, count(*), count(DISTINCT coalesce(parent_uuid, uuid)), sum(length(output::VARCHAR)), NULL, NULL, " +
				"min(timestamp), max(timestamp) FROM e WHERE kind = 'ScopeEnd' GROUP BY 1 ORDER BY 1",
		}
	case benchcorpus.ShapeClaude:
		return queries{
			with: "WITH l AS (SELECT * FROM read_json(" + glob("**/*.jsonl") + ", format='newline_delimited', " +
				"columns={type: 'VARCHAR', sessionId: 'VARCHAR', timestamp: 'VARCHAR', isSidechain: 'BOOLEAN', message: 'JSON'})) ",
			count: "SELECT count(*) FROM (SELECT unnest(CAST(message->'content' AS JSON[])) AS c FROM l WHERE type = 'assistant') WHERE (c->>'type') = 'tool_use'",
			wide: "SELECT type AS source, count(*), count(DISTINCT sessionId), sum(length(message->>'content')), sum((message->'usage'->>'input_tokens')::BIGINT), " +
				"sum((message->'usage'->>'output_tokens')::BIGINT), min(timestamp), max(timestamp) FROM l WHERE type IN ('user', 'assistant', 'system') GROUP BY 1 ORDER BY 1",
		}
	}
	check(fmt.Errorf("no DuckDB query for shape %q", c.Shape))
	return queries{}
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func repoRoot() string {
	wd, err := os.Getwd()
	check(err)
	root, err := fsx.Ancestor(wd, "go.mod")
	check(err)
	return root
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
}

func load1() float64 {
	var f float64
	fmt.Sscan(loadavg(), &f)
	return f
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "formats bench:", err)
		os.Exit(1)
	}
}
