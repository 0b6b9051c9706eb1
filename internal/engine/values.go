package engine

import (
	"database/sql"
	"fmt"
	"math/big"
	"reflect"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

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

var timeType = reflect.TypeOf(time.Time{})

// scanStruct scans the current row into dst's fields in order: NULL leaves
// a pointer nil, timestamps become UTC, integers of any width convert.
func scanStruct(rows *sql.Rows, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	vals := make([]any, v.NumField())
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	for i, val := range vals {
		if val == nil {
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.Pointer {
			p := reflect.New(f.Type().Elem())
			f.Set(p)
			f = p.Elem()
		}
		if err := setValue(f, val); err != nil {
			return fmt.Errorf("column %d (%s): %w", i, v.Type().Field(i).Name, err)
		}
	}
	return nil
}

func setValue(f reflect.Value, val any) error {
	if t, ok := val.(time.Time); ok && f.Type() == timeType {
		f.Set(reflect.ValueOf(t.UTC()))
		return nil
	}
	rv := reflect.ValueOf(val)
	switch {
	case rv.Type() == f.Type():
		f.Set(rv)
	case rv.CanInt() && f.CanInt():
		f.SetInt(rv.Int())
	case rv.CanFloat() && f.CanFloat():
		f.SetFloat(rv.Float())
	case f.Kind() == reflect.String:
		if b, ok := val.([]byte); ok {
			f.SetString(string(b))
			return nil
		}
		return fmt.Errorf("cannot store %T in %s", val, f.Type())
	default:
		return fmt.Errorf("cannot store %T in %s", val, f.Type())
	}
	return nil
}
