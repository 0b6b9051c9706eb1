package cli

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// Cell values as text, for the table, markdown and CSV formats. Nested
// values (LIST, STRUCT, MAP) are written in DuckDB's SQL notation
// (`[1, 2]`, `{'a': 1}`) rather than Go's (`[1 2]`, `map[a:1]`), so what a
// user sees can be pasted back into a query (docs/cli.md, "Output formats").

// floatStyle says how a float becomes text.
type floatStyle int

const (
	floatExact    floatStyle = iota // the shortest text that reads back as the same float (CSV)
	floatReadable                   // rounded to 10 significant digits, no exponent in the common range (tables)
)

// plain is a value as CSV writes it: NULL is empty, floats are exact.
func plain(v any) string { return valueText(v, floatExact) }

// valueText is v as text at the top level of a cell: strings as they are,
// nested values in SQL notation.
func valueText(v any, fs floatStyle) string {
	var b strings.Builder
	writeValue(&b, deref(v), fs, false)
	return b.String()
}

// writeValue appends v; quoted says v sits inside a nested value, where
// strings are quoted as SQL literals.
func writeValue(b *strings.Builder, v any, fs floatStyle, quoted bool) {
	switch t := v.(type) {
	case nil:
		if quoted {
			b.WriteString("NULL")
		}
	case string:
		if quoted {
			b.WriteByte('\'')
			b.WriteString(strings.ReplaceAll(t, "'", "''"))
			b.WriteByte('\'')
		} else {
			b.WriteString(t)
		}
	case []byte:
		writeValue(b, string(t), fs, quoted)
	case time.Time:
		writeValue(b, t.UTC().Format(time.RFC3339Nano), fs, quoted)
	case float64:
		b.WriteString(formatFloat(t, fs))
	case float32:
		b.WriteString(formatFloat(float64(t), fs))
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		fmt.Fprint(b, t)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e, fs, true)
		}
		b.WriteByte(']')
	case map[string]any:
		// A STRUCT's field order does not survive the driver's Go map, so
		// fields are sorted: the same row always prints the same way.
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, k, fs, true)
			b.WriteString(": ")
			writeValue(b, t[k], fs, true)
		}
		b.WriteByte('}')
	case duckdb.OrderedMap:
		keys, vals := t.Keys(), t.Values()
		b.WriteByte('{')
		for i := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, keys[i], fs, true)
			b.WriteByte('=')
			writeValue(b, vals[i], fs, true)
		}
		b.WriteByte('}')
	case fmt.Stringer:
		writeValue(b, t.String(), fs, quoted)
	default:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
			writeValue(b, deref(v), fs, quoted)
			return
		}
		fmt.Fprint(b, v)
	}
}

// formatFloat writes f exactly, or rounded for reading as pandas' display
// does: to 10 significant digits, or as many as the integer part has, so
// 1.0872334000000001 (a sum's binary noise) reads 1.0872334 and
// 123456789012.5 keeps every digit left of the point.
func formatFloat(f float64, fs floatStyle) string {
	if fs == floatExact || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f) // the shortest exact text; an exponent only from 1e21
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e15) {
		return strconv.FormatFloat(f, 'g', 10, 64)
	}
	digits := 10
	if a >= 1 {
		digits = max(digits, int(math.Log10(a))+1)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', digits, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// isNumber reports whether v prints as a number (right-aligned in a table).
func isNumber(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	}
	return false
}

// deref turns typed nil pointers into nil and other pointers into their
// values, so nullable model columns print as values.
func deref(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		return v
	}
	if rv.IsNil() {
		return nil
	}
	return rv.Elem().Interface()
}
