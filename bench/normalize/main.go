// Command normalize benchmarks pchronicle's format normalization against
// DuckDB's read_json on the same generated corpus, in one run, with the same
// number of threads. Each side runs in its own child process so that peak
// memory (max RSS) is measured separately.
//
//	go run ./bench/normalize -size 200 -threads 2
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
)

type result struct {
	Seconds    float64 `json:"seconds"`
	Storylines int64   `json:"storylines"`
	Steps      int64   `json:"steps"`
	Rows       int64   `json:"rows"`
	MaxRSSMB   float64 `json:"max_rss_mb"`
}

func main() {
	sizeMB := flag.Int64("size", 200, "corpus size in MB")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "pchronicle-bench-corpus"), "corpus directory (reused when present)")
	threads := flag.Int("threads", runtime.NumCPU(), "threads for both sides")
	child := flag.String("child", "", "internal: run one side (ours|duckdb)")
	flag.Parse()

	if *child != "" {
		runChild(*child, *dir, *threads)
		return
	}
	c, err := corpus(*dir, *sizeMB<<20)
	check(err)
	fmt.Printf("corpus: %s, %d files (%d OpenAI chat JSONL, %d ATIF-JSONL), %.1f MB, %d Storylines, %d steps\n",
		c.Dir, len(c.Files()), len(c.OpenAI), len(c.ATIF), float64(c.Bytes)/1e6, c.Storylines, c.Steps)
	ours := spawn("ours", *dir, *threads)
	duck := spawn("duckdb", *dir, *threads)
	mb := float64(c.Bytes) / 1e6
	fmt.Printf("threads: %d\n", *threads)
	fmt.Printf("%-26s %8s %10s %12s %10s\n", "side", "seconds", "MB/s", "rows", "peak RSS")
	fmt.Printf("%-26s %8.2f %10.1f %12d %8.0fMB\n", "pchronicle normalize", ours.Seconds, mb/ours.Seconds, ours.Steps, ours.MaxRSSMB)
	fmt.Printf("%-26s %8.2f %10.1f %12d %8.0fMB\n", "duckdb read_json", duck.Seconds, mb/duck.Seconds, duck.Rows, duck.MaxRSSMB)
	fmt.Printf("ratio (pchronicle throughput / duckdb throughput): %.2fx\n", duck.Seconds/ours.Seconds)
	if ours.Storylines != c.Storylines {
		fmt.Printf("MISMATCH: normalized %d Storylines, corpus has %d\n", ours.Storylines, c.Storylines)
		os.Exit(1)
	}
}

// corpus reuses a generated corpus of the requested size or makes one.
func corpus(dir string, size int64) (*benchcorpus.Corpus, error) {
	marker := filepath.Join(dir, "corpus.json")
	if b, err := os.ReadFile(marker); err == nil {
		var c benchcorpus.Corpus
		if json.Unmarshal(b, &c) == nil && c.Bytes >= size && c.Bytes < size+size/5 {
			return &c, nil
		}
	}
	os.RemoveAll(dir)
	fmt.Printf("generating %d MB corpus in %s ...\n", size>>20, dir)
	c, err := benchcorpus.Generate(dir, size, 42)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(c)
	return c, os.WriteFile(marker, b, 0o644)
}

func spawn(side, dir string, threads int) result {
	cmd := exec.Command(os.Args[0], "-child", side, "-dir", dir, "-threads", fmt.Sprint(threads))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	check(err)
	var r result
	check(json.Unmarshal(out, &r))
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSMB = float64(ru.Maxrss) / 1024
	}
	return r
}

func runChild(side, dir string, threads int) {
	b, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	check(err)
	var c benchcorpus.Corpus
	check(json.Unmarshal(b, &c))
	var r result
	start := time.Now()
	switch side {
	case "ours":
		r = normalize(c.Files(), threads)
	case "duckdb":
		r = duckRead(&c, threads)
	default:
		check(fmt.Errorf("unknown side %q", side))
	}
	r.Seconds = time.Since(start).Seconds()
	check(json.NewEncoder(os.Stdout).Encode(r))
}

func normalize(files []string, threads int) result {
	n, err := benchcorpus.Normalize(context.Background(), files, threads)
	check(err)
	return result{Storylines: n.Storylines, Steps: n.Steps}
}

// duckRead materializes every file with read_json: the chat files as one
// table, the ATIF-JSONL files (header + step lines) as another.
func duckRead(c *benchcorpus.Corpus, threads int) result {
	db, err := sql.Open("duckdb", "")
	check(err)
	defer db.Close()
	_, err = db.Exec(fmt.Sprintf("SET threads=%d; SET preserve_insertion_order=false", threads))
	check(err)
	var rows int64
	for name, files := range map[string][]string{"chats": c.OpenAI, "atif": c.ATIF} {
		q := fmt.Sprintf(`CREATE TABLE %s AS SELECT * FROM read_json([%s], format='newline_delimited', union_by_name=true, maximum_object_size=268435456)`,
			name, quoteList(files))
		_, err := db.Exec(q)
		check(err)
		var n int64
		check(db.QueryRow("SELECT count(*) FROM " + name).Scan(&n))
		rows += n
	}
	return result{Rows: rows}
}

func quoteList(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	return strings.Join(q, ",")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "normalize bench:", err)
		os.Exit(1)
	}
}
