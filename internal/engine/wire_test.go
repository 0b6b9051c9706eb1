package engine

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine/spawn"
)

// everyType selects one value of every DuckDB type (and NULL, nested
// values, extremes), for comparing results read through a worker with
// results read in process.
const everyType = `SELECT true AS b, -12::TINYINT AS i8, -1234::SMALLINT AS i16, -123456::INTEGER AS i32,
	(-9223372036854775807 - 1)::BIGINT AS i64, 170141183460469231731687303715884105727::HUGEINT AS i128,
	255::UTINYINT AS u8, 65535::USMALLINT AS u16, 4294967295::UINTEGER AS u32, 18446744073709551615::UBIGINT AS u64,
	340282366920938463463374607431768211455::UHUGEINT AS u128, 1.5::FLOAT AS f32, -0.1::DOUBLE AS f64,
	'nan'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, 123.456::DECIMAL(18,3) AS dec, 1.5::DECIMAL(38,10) AS dec38,
	'héllo'::VARCHAR AS s, '' AS empty, '\x00\xff'::BLOB AS blob, DATE '2026-03-01' AS d, TIME '12:34:56.789' AS t,
	TIMETZ '12:34:56+02' AS ttz, TIMESTAMP '2026-03-01 12:34:56.123456' AS ts, TIMESTAMPTZ '2026-03-01 12:34:56+05' AS tstz,
	'2026-03-01 12:34:56'::TIMESTAMP_S AS ts_s, '2026-03-01 12:34:56.123'::TIMESTAMP_MS AS ts_ms,
	'2026-03-01 12:34:56.123456789'::TIMESTAMP_NS AS ts_ns, TIMESTAMP '9999-12-31 23:59:59' AS ts_far,
	INTERVAL 3 DAY + INTERVAL 5 MINUTE AS iv, '0b5c3e1a-1234-4abc-8def-0123456789ab'::UUID AS uuid,
	'{"a":[1,2.5,null,"x"],"b":{"c":true}}'::JSON AS js, [1, NULL, 3] AS list, [[1], [], NULL] AS nested,
	{'x': 1, 'y': 'two', 'z': [1.5]} AS st, MAP {'k1': 1, 'k2': NULL} AS m, MAP {1: [1], 2: []} AS mint,
	[1, 2, 3]::INTEGER[3] AS arr, union_value(num := 2)::UNION(num INTEGER, str VARCHAR) AS un,
	'b'::ENUM('a', 'b') AS en, '10101'::BIT AS bit, NULL AS n, 12345678901234567890123456789::VARINT AS vi,
	[{'a': [MAP {'q': TIMESTAMP '2026-01-01'}]}] AS deep`

// TestWorkerRowsEqualInProcessRows: every type reads the same through a
// worker as from DuckDB in this process (value and Go type alike).
func TestWorkerRowsEqualInProcessRows(t *testing.T) {
	_, e := open(t, fixture(t, 1), catalog.DefaultOptions())
	got, err := e.Query(context.Background(), everyType, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(everyType)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.ColumnTypes()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 1 || len(got.Columns) != len(cols) {
		t.Fatalf("worker: %d rows of %d columns, want 1 of %d", len(got.Rows), len(got.Columns), len(cols))
	}
	for i, c := range cols {
		want := plainValue(vals[i])
		if g := got.Rows[0][i]; !sameValue(g, want) {
			t.Errorf("%s: worker %#v (%T), in process %#v (%T)", c.Name(), g, g, want, want)
		}
		if got.Columns[i] != c.Name() || got.Types[i] != c.DatabaseTypeName() {
			t.Errorf("column %d: worker %s %s, in process %s %s", i, got.Columns[i], got.Types[i], c.Name(), c.DatabaseTypeName())
		}
	}
}

// A frame that claims more than its reader allows is refused before
// anything is allocated for it.
func TestReadFrameRefusesOversizedFrames(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := writeFrame(w, frameRows, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	data := buf.Bytes()
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader(data)), nil, 99); !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("frame of 100 bytes with a cap of 99: %v", err)
	}
	kind, payload, err := readFrame(bufio.NewReader(bytes.NewReader(data)), nil, 100)
	if err != nil || kind != frameRows || len(payload) != 100 {
		t.Fatalf("frame of 100 bytes with a cap of 100: %q %d %v", kind, len(payload), err)
	}
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader(data[:50])), nil, 100); err == nil {
		t.Fatal("a cut frame was read")
	}
}

// FuzzRowValues decodes arbitrary bytes as row values: it must never
// panic, and whatever decodes must encode and decode to the same values.
func FuzzRowValues(f *testing.F) {
	seeds := [][]any{
		{nil, true, false, int8(-1), int16(300), int32(-70000), int64(1 << 40), uint8(7), uint16(9), uint32(1 << 31), uint64(1 << 63)},
		{float32(1.5), 2.25, "text", []byte{0, 1}, []any{int64(1), nil, []any{"x"}}, map[string]any{"a": int32(1)}},
	}
	for _, vals := range seeds {
		b, err := appendValues(nil, vals)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{tagList, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{tagOrderedMap, 1, tagList, 0, tagNil})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := valueReader{b: data}
		var vals []any
		for len(r.b) > 0 {
			v, err := r.value()
			if err != nil {
				return
			}
			vals = append(vals, v)
		}
		b, err := appendValues(nil, vals)
		if err != nil {
			t.Fatalf("decoded values do not encode: %v", err)
		}
		again := valueReader{b: b}
		for i, want := range vals {
			got, err := again.value()
			if err != nil || !sameValue(got, want) {
				t.Fatalf("value %d: %#v after a round trip, was %#v (%v)", i, got, want, err)
			}
		}
	})
}

// sameValue is reflect.DeepEqual with floats compared bit for bit, so that
// NaN equals itself, also inside nested values.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case []any:
		y, ok := b.([]any)
		return ok && sameValues(x, y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case duckdb.OrderedMap:
		y, ok := b.(duckdb.OrderedMap)
		return ok && sameValues(x.Keys(), y.Keys()) && sameValues(x.Values(), y.Values())
	case duckdb.Union:
		y, ok := b.(duckdb.Union)
		return ok && x.Tag == y.Tag && sameValue(x.Value, y.Value)
	}
	return reflect.DeepEqual(a, b)
}

func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestLateCancelStopsOnlyItsQuery: a result closed before its end sends the
// worker a cancel, which may arrive after the query ended and the next one
// began (the engine does not wait for it); it must stop only the query it
// was meant for.
func TestLateCancelStopsOnlyItsQuery(t *testing.T) {
	db := openWorkerDB(testConfig(true).Limits)
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	for i := range 300 {
		rows, err := db.QueryContext(ctx, "SELECT * FROM range(10)")
		if err != nil {
			t.Fatal(err)
		}
		rows.Next()
		rows.Close() // early: the worker has sent every row and its end already
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM range(3000000) WHERE range % 7 = 0").Scan(&n); err != nil {
			t.Fatalf("query %d after a result closed early: %v", i, err)
		}
	}
}

// TestSetUpRunsInOrderAndNamesTheStatementThatFails: an instance's set-up
// goes to its worker in one request; statements run in order, the first
// that fails stops the rest, and the error names it with DuckDB's own
// error underneath.
func TestSetUpRunsInOrderAndNamesTheStatementThatFails(t *testing.T) {
	db := openWorkerDB(testConfig(true).Limits)
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	inst := &instance{db: db, conn: conn}
	err = inst.exec(ctx, []string{"CREATE TABLE a (x INTEGER)", "INSERT INTO a VALUES (1)", "INSERT INTO missing VALUES (2)", "INSERT INTO a VALUES (3)"})
	var de *duckdb.Error
	if err == nil || !strings.HasPrefix(err.Error(), "preparing query engine: INSERT INTO missing VALUES (2): ") || !errors.As(err, &de) || de.Type != duckdb.ErrorTypeCatalog {
		t.Fatalf("error %v (%T), want one naming the third statement, wrapping DuckDB's catalog error", err, errors.Unwrap(err))
	}
	var sum int64
	if err := conn.QueryRowContext(ctx, "SELECT sum(x) FROM a").Scan(&sum); err != nil || sum != 1 {
		t.Fatalf("sum(x) = %d, %v: want 1 (the statements before the failure ran, none after it)", sum, err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO nowhere VALUES (1)"); !errors.As(err, &de) || de.Type != duckdb.ErrorTypeCatalog {
		t.Fatalf("a single statement's error: %v, want DuckDB's catalog error as it is", err)
	}
}

// TestEarlyWorkerServesTheFirstQuery: the worker a one-shot command starts
// before main (spawn.Early) is the one its first query runs in.
func TestEarlyWorkerServesTheFirstQuery(t *testing.T) {
	spawn.Early()
	w := StartWorker(testConfig(true).Limits)
	defer w.Close()
	<-w.ready
	if w.err != nil {
		t.Fatal(w.err)
	}
	if spawn.TakeEarly() != nil {
		t.Fatal("the engine started a worker of its own and left the early one")
	}
	var n int
	if err := w.conn.QueryRowContext(context.Background(), "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
		t.Fatalf("the early worker answered %d, %v", n, err)
	}
}
