package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// readArrow reads a whole Arrow result: its schema and row count.
func readArrow(t *testing.T, e *Engine, sql string, opts QueryOptions) (*arrow.Schema, int64, bool, error) {
	t.Helper()
	r, err := e.StreamArrow(context.Background(), sql, opts)
	if err != nil {
		return nil, 0, false, err
	}
	defer r.Close()
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	return r.Schema(), n, r.Truncated(), r.Err()
}

// The Arrow result keeps DuckDB's types, marks JSON columns, and applies
// the row cap like the rows path: truncated at the cap, or an error.
func TestStreamArrowTypesAndRowCap(t *testing.T) {
	_, e := open(t, fixture(t, 4), catalog.DefaultOptions())
	schema, n, _, err := readArrow(t, e, `SELECT session_id, started_at, [1, 2]::INTEGER[] AS l, {'a': 1} AS s, '{"k": 1}'::JSON AS j, sum(step_count) OVER () AS total
		FROM runs ORDER BY 1`, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 8 {
		t.Fatalf("%d rows, want 8", n)
	}
	want := map[string]string{
		"session_id": "utf8",
		"started_at": "timestamp[us, tz=Etc/UTC]",
		"l":          "list<l: int32, nullable>",
		"s":          "struct<a: int32 nullable>",
		"total":      "decimal(38, 0)",
	}
	for name, typ := range want {
		f, ok := schema.FieldsByName(name)
		if !ok || f[0].Type.String() != typ {
			t.Errorf("column %s: %v, want type %s", name, f, typ)
		}
	}
	if f, _ := schema.FieldsByName("j"); len(f) != 1 {
		t.Errorf("no JSON column in %v", schema)
	} else if _, ok := f[0].Type.(*extensions.JSONType); !ok {
		t.Errorf("JSON column type %v, want the arrow.json extension type", f[0].Type)
	}

	for _, tc := range []struct {
		max       int64
		truncate  bool
		rows      int64
		truncated bool
		err       error
	}{
		{3, true, 3, true, nil},
		{8, true, 8, false, nil},
		{7, false, 7, false, ErrTooManyRows},
		{-1, false, 8, false, nil},
	} {
		_, n, truncated, err := readArrow(t, e, "SELECT session_id FROM runs", QueryOptions{MaxRows: tc.max, Truncate: tc.truncate})
		if n != tc.rows || truncated != tc.truncated || !errors.Is(err, tc.err) {
			t.Errorf("cap %d truncate=%v: %d rows, truncated=%v, %v; want %d, %v, %v", tc.max, tc.truncate, n, truncated, err, tc.rows, tc.truncated, tc.err)
		}
	}
}

// An error before the first batch comes from StreamArrow itself (so a
// server can still answer with its status); one while batches stream
// ends them with DuckDB's error; a timeout stops the query; and the
// instance serves queries after each.
func TestStreamArrowErrors(t *testing.T) {
	_, e := open(t, fixture(t, 2), catalog.DefaultOptions())
	if _, err := e.StreamArrow(context.Background(), "SELECT no_such_column FROM runs", QueryOptions{}); err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Fatalf("binder error: %v", err)
	}
	_, _, _, err := readArrow(t, e, "SELECT CASE WHEN i < 3000 THEN i ELSE error('boom at ' || i) END FROM (SELECT unnest(range(10000)) AS i)", QueryOptions{MaxRows: -1})
	if err == nil || !strings.Contains(err.Error(), "boom at") {
		t.Fatalf("error while streaming: %v", err)
	}
	start := time.Now()
	_, _, _, err = readArrow(t, e, "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10000000000) SELECT count(*) FROM t", QueryOptions{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %v after %v", err, time.Since(start))
	}
	// Closing a result half read leaves the worker ready for the next query.
	r, err := e.StreamArrow(context.Background(), "SELECT unnest(range(1000000))", QueryOptions{MaxRows: -1})
	if err != nil {
		t.Fatal(err)
	}
	r.Next()
	r.Close()
	res, err := e.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{})
	if err != nil || fmt.Sprint(res.Rows) != "[[4]]" {
		t.Fatalf("after a closed Arrow result: %v, %v", res, err)
	}
}
