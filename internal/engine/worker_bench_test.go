package engine

import (
	"context"
	"database/sql"
	"testing"
)

// The cost of a query's process (docs/performance.md): a new worker with
// the sandbox's instance settings, against the same DuckDB opened in
// process, as the engine did before workers.
//
//	go test ./internal/engine -run '^$' -bench 'Open' -benchtime 50x

func BenchmarkOpenWorker(b *testing.B) {
	limits := testConfig(true).Limits
	benchOpen(b, limits, func() *sql.DB { return openWorkerDB(limits) })
}

func BenchmarkOpenInProcess(b *testing.B) {
	benchOpen(b, testConfig(true).Limits, func() *sql.DB {
		db, err := sql.Open("duckdb", "")
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
