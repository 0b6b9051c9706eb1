//go:build unix

package events

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Each benchmark batch is 1000 sessions of 100 events (100k events).
const benchSessions, benchPerSession = 1000, 100

// benchEvents returns the i-th batch: ids unique per batch, seqs continuing
// the previous batch of every session.
func benchEvents(i int) []model.Event {
	return genEvents(fmt.Sprint("b", i), benchSessions, benchPerSession, int64(i*benchPerSession))
}

func encodeJSONL(b *testing.B, evs []model.Event) []byte {
	var buf bytes.Buffer
	for i := range evs {
		line, err := canonical.EncodeEvent(&evs[i])
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// BenchmarkAppend measures appends of 100k-event batches to a growing store
// through the Go API (model.Event in) and through the JSONL path used by
// `pchronicle events append` (strict wire decoding included), with DuckDB
// converting the same JSONL to zstd Parquet in the same run as a baseline.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	batch := float64(benchSessions * benchPerSession)
	b.Run("api", func(b *testing.B) {
		s := newStore(b)
		m := &meter{b: b}
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			evs := benchEvents(i)
			m.time(func() {
				if _, err := s.Append(ctx, evs); err != nil {
					b.Fatal(err)
				}
			})
		}
		m.report(batch*float64(b.N), "events")
	})
	b.Run("jsonl", func(b *testing.B) {
		s := newStore(b)
		m := &meter{b: b}
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			data := encodeJSONL(b, benchEvents(i))
			b.SetBytes(int64(len(data)))
			m.time(func() {
				tx, err := s.Begin(ctx)
				if err == nil {
					err = tx.ReadFrom(ctx, bytes.NewReader(data), format.Source{Path: "bench"})
				}
				if err == nil {
					_, err = tx.Commit(ctx)
				}
				if err != nil {
					b.Fatal(err)
				}
			})
		}
		m.report(batch*float64(b.N), "events")
	})
	b.Run("duckdb-copy", func(b *testing.B) {
		dir := b.TempDir()
		in := filepath.Join(dir, "events.jsonl")
		data := encodeJSONL(b, benchEvents(0))
		if err := os.WriteFile(in, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		db, err := sql.Open("duckdb", "")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		m := &meter{b: b}
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			out := filepath.Join(dir, fmt.Sprint(i, ".parquet"))
			q := fmt.Sprintf(`COPY (SELECT * FROM read_json('%s')) TO '%s' (FORMAT parquet, COMPRESSION zstd)`, in, out)
			m.time(func() {
				if _, err := db.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			})
		}
		m.report(batch*float64(b.N), "events")
	})
}
