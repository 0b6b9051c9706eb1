package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
	"github.com/pchronicle/pchronicle/internal/cli"
)

// BenchmarkImportVsDuckDB times `pchronicle import` of a generated 200 MB
// corpus (OpenAI chat JSONL + ATIF-JSONL) into a Storyline store against
// DuckDB's COPY (SELECT * FROM read_json(...)) TO '...parquet' (zstd) of
// the same files with the same number of threads, and reports the ratio of
// our time to DuckDB's (goal ≤ 1.5).
//
//	go test ./internal/cli -run '^$' -bench ImportVsDuckDB -benchtime 1x
func BenchmarkImportVsDuckDB(b *testing.B) {
	dir := b.TempDir()
	c, err := benchcorpus.Generate(filepath.Join(dir, "corpus"), 200<<20, 42)
	if err != nil {
		b.Fatal(err)
	}
	threads := runtime.GOMAXPROCS(0)
	var ours, duck time.Duration
	for i := range b.N {
		ours += timeImport(b, c, filepath.Join(dir, fmt.Sprintf("store-%d", i)))
		duck += timeDuckCopy(b, c, filepath.Join(dir, fmt.Sprintf("duck-%d", i)), threads)
	}
	mb := float64(c.Bytes) / 1e6
	b.ReportMetric(mb, "corpus-MB")
	b.ReportMetric(mb*float64(b.N)/ours.Seconds(), "import-MB/s")
	b.ReportMetric(mb*float64(b.N)/duck.Seconds(), "duckdb-MB/s")
	b.ReportMetric(ours.Seconds()/duck.Seconds(), "time-ratio")
	b.Logf("corpus %.0f MB, %d files, %d Storylines, %d steps; threads %d; import %.2fs, duckdb COPY %.2fs, ratio %.2f",
		mb, len(c.Files()), c.Storylines, c.Steps, threads, ours.Seconds()/float64(b.N), duck.Seconds()/float64(b.N), ours.Seconds()/duck.Seconds())
}

func timeImport(b *testing.B, c *benchcorpus.Corpus, dest string) time.Duration {
	var out, errb bytes.Buffer
	start := time.Now()
	code := cli.Execute(context.Background(), append([]string{"import", "--to", dest}, c.Files()...), strings.NewReader(""), &out, &errb)
	d := time.Since(start)
	if code != 0 {
		b.Fatalf("import: %s", errb.String())
	}
	return d
}

func timeDuckCopy(b *testing.B, c *benchcorpus.Corpus, dir string, threads int) time.Duration {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(fmt.Sprintf("SET threads=%d", threads)); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for name, files := range map[string][]string{"chats": c.OpenAI, "atif": c.ATIF} {
		q := fmt.Sprintf(`COPY (SELECT * FROM read_json([%s], format='newline_delimited', union_by_name=true, maximum_object_size=268435456))
			TO '%s' (FORMAT parquet, COMPRESSION zstd)`, sqlList(files), filepath.Join(dir, name+".parquet"))
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

func sqlList(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	return strings.Join(q, ",")
}
