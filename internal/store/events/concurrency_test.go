package events

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// Readers pin and count rows with DuckDB while a writer appends and
// compacts: every read must match its pinned manifest exactly.
func TestConcurrentReadersAndWriter(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Append(ctx, genEvents("init", 2, 3, 0)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	const appends = 40
	var done atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				if err := checkedRead(ctx, db, s.Dir()); err != nil {
					errs <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := 0; i < appends; i++ {
		if _, err := s.Append(ctx, genEvents(fmt.Sprint("w", i), 5, 3, int64(3+3*i))); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if _, err := s.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if reads.Load() < appends/4 {
		t.Fatalf("only %d reads overlapped the writer", reads.Load())
	}
	r, _ := readAll(t, s.Dir())
	if want := int64(6 + appends*15); r.Events != want {
		t.Fatalf("%d events, want %d", r.Events, want)
	}
	t.Logf("%d consistent reads during %d appends", reads.Load(), appends)
}

// checkedRead opens the store as a new reader would and compares DuckDB's
// row count over the pinned segments with the pinned manifest.
func checkedRead(ctx context.Context, db *sql.DB, dir string) error {
	s, err := Open(dir)
	if err != nil {
		return err
	}
	r, err := s.Pin()
	if err != nil {
		return err
	}
	quoted := make([]string, len(r.Segments))
	for i, p := range r.Paths() {
		quoted[i] = "'" + strings.ReplaceAll(p, "'", "''") + "'"
	}
	var n, sessions int64
	q := fmt.Sprintf("SELECT count(*), count(DISTINCT session_id) FROM read_parquet([%s])", strings.Join(quoted, ","))
	if err := db.QueryRowContext(ctx, q).Scan(&n, &sessions); err != nil {
		return fmt.Errorf("revision %d: %w", r.Revision, err)
	}
	if n != r.Events {
		return fmt.Errorf("revision %d: read %d rows, manifest says %d", r.Revision, n, r.Events)
	}
	return nil
}

// Two writers (separate Store values, as two processes would have) append
// at the same time; the lock serializes them and no segment is lost.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	dir := newStore(t).Dir()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(dir)
			if err != nil {
				errs <- err
				return
			}
			for i := 0; i < 10; i++ {
				evs := genEvents(fmt.Sprint("w", w, "-", i), 2, 2, int64(2*i))
				for j := range evs {
					evs[j].SessionID = fmt.Sprintf("w%d-%s", w, evs[j].SessionID)
				}
				if _, err := s.Append(ctx, evs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, _ := readAll(t, dir)
	if r.Revision != 20 || r.Events != 80 {
		t.Fatalf("revision %d, %d events; want 20 and 80", r.Revision, r.Events)
	}
}
