// Command cache measures a query over unchanged peripheral files served by
// the normalization cache (docs/performance.md, "Normalization cache"),
// whole processes against DuckDB:
//
//   - pchronicle query DIR SQL with a warm cache (files normalized by an
//     earlier process), vs
//   - DuckDB read_json doing the nearest equivalent over the raw files, and
//   - DuckDB read_parquet over the normalized files (the cache's own), the
//     same SQL.
//
// The corpus is copies of the real Codex rollout in ../shared/samples, each
// with its own session id; with -small N, also N one-conversation chat
// files in directories of -perdir (1,000; 1 is a tree of one run per
// directory), where the Snapshot's sources rather than their bytes are the
// work. Every measurement is a new process (DuckDB in a
// child of this program, with the same threads); the sides alternate and
// medians are compared, because the machine is shared.
//
//	go run ./bench/cache [-copies 500] [-rounds 7] [-small 50000 [-perdir 1000]]
package main

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
)

var (
	copies  = flag.Int("copies", 500, "copies of the Codex rollout in the corpus")
	rounds  = flag.Int("rounds", 7, "measurements of each side (alternating)")
	threads = flag.Int("threads", runtime.NumCPU(), "threads of every side")
	work    = flag.String("dir", filepath.Join(os.TempDir(), "pchronicle-bench-cache"), "work directory (the corpus is reused)")
	sample  = flag.String("sample", "../shared/samples/openai/codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl", "the Codex rollout to copy")
	small   = flag.Int("small", 0, "also measure a corpus of this many one-conversation chat files (0: none)")
	perDir  = flag.Int("perdir", 1000, "files per directory of the -small corpus")
	child   = flag.String("child", "", "internal: run SQL in DuckDB and print the rows")
)

// sampleSession is the session id of the sample, replaced in each copy.
const sampleSession = "019c8a4d-8f45-7010-8b5d-7fad920aa6f9"

// shape is one query: ours over the Dataset, DuckDB's nearest equivalent
// over the raw JSON lines (%s: the files' glob), and ours again over the
// normalized Parquet of relation. A count must equal DuckDB's.
type shape struct {
	name, ours, json, relation string
	count                      bool
}

var codexShapes = []shape{
	{
		name:     "count(*) of tool_calls",
		count:    true,
		ours:     `SELECT count(*) FROM tool_calls`,
		json:     `SELECT count(*) FROM read_json(%s, format='newline_delimited', columns={type: 'VARCHAR', payload: 'JSON'}) WHERE type = 'response_item' AND (payload->>'type') = 'function_call'`,
		relation: "tool_calls",
	},
	{
		name: "wide aggregate over steps",
		ours: `SELECT source, count(*), count(DISTINCT session_id), sum(length(message_value)), sum(length(reasoning)) FROM steps GROUP BY ALL ORDER BY ALL`,
		json: `SELECT (payload->>'type') AS t, count(*), count(DISTINCT filename), sum(length(payload->>'content')), sum(length(payload->>'summary')) ` +
			`FROM read_json(%s, format='newline_delimited', columns={type: 'VARCHAR', payload: 'JSON'}, filename=true) WHERE type = 'response_item' GROUP BY ALL ORDER BY ALL`,
		relation: "steps",
	},
}

var smallShapes = []shape{{
	name:     "count(*) of runs",
	count:    true,
	ours:     `SELECT count(*) FROM runs`,
	json:     `SELECT count(*) FROM read_json(%s, format='newline_delimited', columns={messages: 'JSON[]'})`,
	relation: "runs",
}}

func main() {
	flag.Parse()
	if *perDir < 1 {
		check(fmt.Errorf("-perdir %d: a directory holds at least one file", *perDir))
	}
	if *child != "" {
		runDuckDB(*child)
		return
	}
	bin := build()
	cacheDir := filepath.Join(*work, "cache")
	check(os.RemoveAll(cacheDir))
	codex := corpus()
	fmt.Printf("corpus: %d copies of the Codex rollout, %.1f MB; %d threads; medians of %d whole processes, sides alternating\n\n",
		*copies, float64(dirBytes(codex))/1e6, *threads, *rounds)
	fmt.Println("| query | pchronicle, no cache | pchronicle, warm cache | DuckDB read_json, raw files | DuckDB read_parquet, normalized files | warm vs read_json | warm vs read_parquet |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var floor []time.Duration
	for _, sh := range codexShapes {
		floor = append(floor, measure(bin, cacheDir, codex, "'"+filepath.Join(codex, "*.jsonl")+"'", sh)...)
	}
	if *small > 0 {
		dir := smallCorpus(*small)
		fmt.Printf("| %d one-conversation chat files, %.1f MB, %d per directory: | | | | | | |\n", *small, float64(*small*len(smallLine(0)))/1e6, *perDir)
		for _, sh := range smallShapes {
			measure(bin, cacheDir, dir, "'"+filepath.Join(dir, "*", "*.jsonl")+"'", sh)
		}
	}
	fmt.Printf("\nfloor: pchronicle query DIR \"SELECT 1\" (reads no source), median %s\n", ms(median(floor)))
	stats, _ := run(bin, "cache", "stats", "--cache-dir", cacheDir, "--format", "csv")
	fmt.Printf("\ncache:\n%s", stats)
}

// measure prints the row of one shape over the corpus in dir (glob: its
// files, for DuckDB), and returns the times of "SELECT 1" it took beside.
func measure(bin, cacheDir, dir, glob string, sh shape) (floor []time.Duration) {
	query := func(sql string, extra ...string) []string {
		return append([]string{"query", dir, sql, "--format", "csv", "--threads", fmt.Sprint(*threads), "--cache-dir", cacheDir}, extra...)
	}
	// The first process normalizes and fills the cache; the rows of a
	// warm one must be those of a process without the cache.
	cold, _ := run(bin, query(sh.ours)...)
	uncached, _ := run(bin, query(sh.ours, "--no-cache")...)
	if cold != uncached {
		panic(fmt.Sprintf("%s: with and without the cache the rows differ:\n%s\n%s", sh.name, cold, uncached))
	}
	parquetSQL, err := benchcorpus.ReadCachedParquet(sh.ours, sh.relation, cacheDir)
	check(err)
	jsonSQL := fmt.Sprintf(sh.json, glob)
	if sh.count {
		want, _ := run(os.Args[0], "-child", jsonSQL, "-threads", fmt.Sprint(*threads))
		if got := strings.TrimPrefix(cold, "count_star()\n"); strings.TrimSpace(got) != strings.TrimSpace(want) {
			panic(fmt.Sprintf("%s: pchronicle counts %q, DuckDB %q", sh.name, got, want))
		}
	}
	var none, ours, js, pq []time.Duration
	for r := 0; r < *rounds; r++ {
		sides := []func(){
			func() { _, d := run(bin, query(sh.ours)...); ours = append(ours, d) },
			func() { _, d := run(bin, query("SELECT 1")...); floor = append(floor, d) },
			func() {
				_, d := run(os.Args[0], "-child", jsonSQL, "-threads", fmt.Sprint(*threads))
				js = append(js, d)
			},
			func() {
				_, d := run(os.Args[0], "-child", parquetSQL, "-threads", fmt.Sprint(*threads))
				pq = append(pq, d)
			},
		}
		if r < 3 { // each normalizes the whole corpus: fewer rounds
			sides = append(sides, func() { _, d := run(bin, query(sh.ours, "--no-cache")...); none = append(none, d) })
		}
		for i := range sides {
			sides[(i+r)%len(sides)]()
		}
	}
	mn, mo, mj, mp := median(none), median(ours), median(js), median(pq)
	fmt.Printf("| %s | %s | %s | %s | %s | **%.2f×** | **%.2f×** |\n", sh.name, ms(mn), ms(mo), ms(mj), ms(mp), float64(mo)/float64(mj), float64(mo)/float64(mp))
	return floor
}

// build compiles cmd/pchronicle into the work directory.
func build() string {
	check(os.MkdirAll(*work, 0o755))
	bin := filepath.Join(*work, "pchronicle")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/pchronicle")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	check(cmd.Run())
	return bin
}

// corpus writes the copies (reused when present) and waits until they are
// older than the cache's racy window, so the first query keeps them.
func corpus() string {
	dir := filepath.Join(*work, fmt.Sprintf("codex-%d", *copies))
	done := filepath.Join(dir, ".done")
	if _, err := os.Stat(done); err != nil {
		data, err := os.ReadFile(*sample)
		check(err)
		check(os.RemoveAll(dir))
		check(os.MkdirAll(dir, 0o755))
		for i := 0; i < *copies; i++ {
			session := fmt.Sprintf("%s%012d", sampleSession[:len(sampleSession)-12], i)
			body := bytes.ReplaceAll(data, []byte(sampleSession), []byte(session))
			check(os.WriteFile(filepath.Join(dir, fmt.Sprintf("rollout-%s.jsonl", session)), body, 0o644))
		}
		check(os.WriteFile(done, nil, 0o644))
	}
	fi, err := os.Stat(done)
	check(err)
	time.Sleep(time.Until(fi.ModTime().Add(2500 * time.Millisecond)))
	return dir
}

// smallLine is the one conversation of small file i.
func smallLine(i int) string {
	return fmt.Sprintf(`{"messages":[{"role":"user","content":"question %06d"},{"role":"assistant","content":"answer"}]}`+"\n", i)
}

// smallCorpus writes n one-conversation chat files in directories of -perdir
// (reused when present), then waits as corpus does.
func smallCorpus(n int) string {
	name := fmt.Sprintf("small-%d", n)
	if *perDir != 1000 {
		name += fmt.Sprintf("-per-%d", *perDir)
	}
	dir := filepath.Join(*work, name)
	done := filepath.Join(dir, ".done")
	if _, err := os.Stat(done); err != nil {
		check(os.RemoveAll(dir))
		for i := 0; i < n; i++ {
			sub := filepath.Join(dir, fmt.Sprintf("d%06d", i / *perDir))
			if i%*perDir == 0 {
				check(os.MkdirAll(sub, 0o755))
			}
			check(os.WriteFile(filepath.Join(sub, fmt.Sprintf("c%06d.jsonl", i)), []byte(smallLine(i)), 0o644))
		}
		check(os.WriteFile(done, nil, 0o644))
	}
	fi, err := os.Stat(done)
	check(err)
	time.Sleep(time.Until(fi.ModTime().Add(2500 * time.Millisecond)))
	return dir
}

// run starts a process and returns its stdout and wall time.
func run(name string, args ...string) (string, time.Duration) {
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		panic(fmt.Sprintf("%s %v: %v\n%s", name, args, err, errb.String()))
	}
	return out.String(), time.Since(start)
}

// runDuckDB is a child: a new in-memory DuckDB runs one query.
func runDuckDB(query string) {
	db, err := sql.Open("duckdb", "")
	check(err)
	defer db.Close()
	ctx := context.Background()
	_, err = db.ExecContext(ctx, fmt.Sprintf("SET threads=%d", *threads))
	check(err)
	rows, err := db.QueryContext(ctx, query)
	check(err)
	defer rows.Close()
	cols, err := rows.Columns()
	check(err)
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		check(rows.Scan(ptrs...))
		fmt.Println(fmt.Sprint(vals...))
	}
	check(rows.Err())
}

func dirBytes(dir string) int64 {
	var n int64
	entries, err := os.ReadDir(dir)
	check(err)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func check(err error) {
	if err != nil {
		panic(err)
	}
}
