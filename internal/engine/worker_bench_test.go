package engine

import (
	"context"
	"database/sql"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// What running DuckDB in a worker process costs (docs/performance.md):
// opening a worker with the sandbox's instance settings against opening
// the same DuckDB in process; and whole queries through the engine, one
// after another and 100 ms apart, with the CPU time of the process and its
// workers per query.
//
//	go test ./internal/engine -run '^$' -bench 'Open|Query' -benchtime 200x

func BenchmarkOpenWorker(b *testing.B) {
	limits := testConfig(true).Limits
	benchOpen(b, limits, func() *sql.DB { return openWorkerDB(limits) })
}

func BenchmarkOpenInProcess(b *testing.B) {
	benchOpen(b, testConfig(true).Limits, func() *sql.DB {
		db, err := sql.Open("duckdb", testConfig(true).Limits.openConfig())
		if err != nil {
			b.Fatal(err)
		}
		return db
	})
}

func benchOpen(b *testing.B, limits Limits, open func() *sql.DB) {
	setup := limits.instanceSettings(b.TempDir())
	ctx := context.Background()
	for b.Loop() {
		db := open()
		conn, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range setup {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		conn.Close()
		db.Close()
	}
}

const benchAggregate = "SELECT count(*), count(DISTINCT session_id), sum(length(message_value)) FROM steps"

func BenchmarkQueryBackToBack(b *testing.B) { benchQueries(b, benchAggregate, 0) }
func BenchmarkQueryPaced(b *testing.B)      { benchQueries(b, benchAggregate, 100*time.Millisecond) }
func BenchmarkQueryMillionRows(b *testing.B) {
	benchQueries(b, millionRows, 0)
}

func benchQueries(b *testing.B, sqlText string, gap time.Duration) {
	_, e := open(b, fixture(b, 200), catalog.DefaultOptions())
	ctx := context.Background()
	opts := QueryOptions{MaxRows: -1}
	if _, err := e.Query(ctx, sqlText, opts); err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime()
	for b.Loop() {
		if gap > 0 {
			b.StopTimer()
			time.Sleep(gap)
			b.StartTimer()
		}
		if _, err := e.Query(ctx, sqlText, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	e.Close() // reaps the workers, so that their CPU time counts
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time of this process and its reaped children.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// The rows of a million-row result scanned through a worker and from the
// same DuckDB in process: what streaming a result over the pipe costs.
const millionRows = "SELECT i, 'row ' || i AS s, i * 0.5 AS f FROM (SELECT unnest(range(1000000)) AS i)"

func BenchmarkScanWorker(b *testing.B) {
	benchScan(b, openWorkerDB(testConfig(true).Limits))
}

func BenchmarkScanInProcess(b *testing.B) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	benchScan(b, db)
}

func benchScan(b *testing.B, db *sql.DB) {
	defer db.Close()
	ctx := context.Background()
	for b.Loop() {
		rows, err := db.QueryContext(ctx, millionRows)
		if err != nil {
			b.Fatal(err)
		}
		var i int64
		var s string
		var f float64
		n := 0
		for rows.Next() {
			if err := rows.Scan(&i, &s, &f); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := rows.Err(); err != nil || n != 1000000 {
			b.Fatalf("%d rows, %v", n, err)
		}
		rows.Close()
	}
}
