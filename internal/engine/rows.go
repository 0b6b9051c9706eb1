package engine

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// run executes the (already validated) statement and reads at most maxRows
// rows; one more is an error rather than a silently cut result.
func run(ctx context.Context, conn *sql.Conn, sqlText string, maxRows int64) (*Result, error) {
	rows, err := conn.QueryContext(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, c := range cols {
		res.Columns = append(res.Columns, c.Name())
		res.Types = append(res.Types, c.DatabaseTypeName())
	}
	for rows.Next() {
		if maxRows > 0 && int64(len(res.Rows)) >= maxRows {
			return nil, fmt.Errorf("%w (%d); add a LIMIT or raise the limit", ErrTooManyRows, maxRows)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = plainValue(v)
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, rows.Err()
}

// plainValue converts driver values into JSON-friendly Go values.
func plainValue(v any) any {
	switch t := v.(type) {
	case []byte:
		return string(t)
	case time.Time:
		return t.UTC()
	case *big.Int: // HUGEINT, e.g. sum(BIGINT)
		if t.IsInt64() {
			return t.Int64()
		}
		return t.String()
	case duckdb.Decimal:
		return t.Float64()
	case duckdb.UUID:
		return t.String()
	case duckdb.Interval:
		return fmt.Sprintf("%d months %d days %d us", t.Months, t.Days, t.Micros)
	case []any:
		for i := range t {
			t[i] = plainValue(t[i])
		}
		return t
	case map[string]any:
		for k := range t {
			t[k] = plainValue(t[k])
		}
		return t
	case duckdb.Map:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[fmt.Sprint(k)] = plainValue(val)
		}
		return out
	}
	return v
}
