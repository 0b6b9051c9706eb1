package testutil

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Columnar is a columnar result as DuckDB reads it back: each column's
// DuckDB type and each row as a JSON array, values rendered as
// pchronicle's JSON output renders them (timestamps in RFC 3339, UTC).
type Columnar struct {
	Columns []string
	Types   []string
	Rows    []string
}

// ReadColumnar reads an Arrow IPC stream (format "arrow") or a Parquet
// file ("parquet") with DuckDB: Parquet with read_parquet, Arrow through
// DuckDB's Arrow scan of the stream's record batches.
func ReadColumnar(t testing.TB, format string, data []byte) Columnar {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	from := "result"
	switch format {
	case "parquet":
		path := filepath.Join(t.TempDir(), "result.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		from = "read_parquet('" + path + "')"
	case "arrow":
		reader, err := ipc.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("reading the Arrow stream: %v", err)
		}
		defer reader.Release()
		err = conn.Raw(func(dc any) error {
			a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
			if err != nil {
				return err
			}
			release, err := a.RegisterView(reader, "result")
			if err == nil {
				t.Cleanup(release)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("ReadColumnar: unknown format %q", format)
	}
	var out Columnar
	rows, err := conn.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+from+")")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		out.Columns, out.Types = append(out.Columns, name), append(out.Types, typ)
	}
	rows.Close()
	rows, err = conn.QueryContext(ctx, "SELECT * FROM "+from)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	vals := make([]any, len(out.Columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]any, len(vals))
		for i, v := range vals {
			row[i] = jsonValue(v)
		}
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		out.Rows = append(out.Rows, string(b))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// JSONRows renders rows decoded from pchronicle's JSON output (objects)
// as ReadColumnar renders its rows: JSON arrays in column order.
func JSONRows(t testing.TB, columns []string, objects []map[string]any) []string {
	t.Helper()
	out := make([]string, len(objects))
	for i, m := range objects {
		row := make([]any, len(columns))
		for j, c := range columns {
			row[j] = m[c]
		}
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// jsonValue renders a value DuckDB's driver scanned as pchronicle's JSON
// output does.
func jsonValue(v any) any {
	switch t := v.(type) {
	case time.Time:
		return t.UTC()
	case []byte:
		return string(t)
	case *big.Int:
		if t.IsInt64() {
			return t.Int64()
		}
		return t.String()
	case duckdb.Decimal:
		return t.Float64()
	case duckdb.UUID:
		return t.String()
	case []any:
		for i := range t {
			t[i] = jsonValue(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = jsonValue(t[k])
		}
	}
	return v
}

// JSONColumnsAsValues renders the JSON columns of c's rows (DuckDB's JSON
// type, or a model column that holds JSON text) as the JSON values they
// hold, as the CLI's json output writes them; the HTTP API keeps them as
// text.
func JSONColumnsAsValues(t testing.TB, c Columnar) Columnar {
	t.Helper()
	out := c
	out.Rows = make([]string, len(c.Rows))
	for r, line := range c.Rows {
		var row []any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		for i, v := range row {
			if s, ok := v.(string); ok && (c.Types[i] == "JSON" || model.IsJSONColumn(c.Columns[i])) {
				var parsed any
				if json.Unmarshal([]byte(s), &parsed) == nil {
					row[i] = parsed
				}
			}
		}
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		out.Rows[r] = string(b)
	}
	return out
}
