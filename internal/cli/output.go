package cli

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Output formats shared by every command that prints rows.
const (
	fmtTable = "table"
	fmtCSV   = "csv"
	fmtJSON  = "json"
	fmtJSONL = "jsonl"
)

func validFormat(f string) error {
	switch f {
	case fmtTable, fmtCSV, fmtJSON, fmtJSONL:
		return nil
	}
	return fmt.Errorf("unknown --format %q (want table, csv, json or jsonl)", f)
}

// rowWriter prints rows of named columns in one of the output formats.
// Values are any JSON-encodable Go value; nil prints as NULL in a table and
// as an empty field in CSV.
type rowWriter struct {
	w       *bufio.Writer // the output, buffered: a write per row or cell was a system call each
	format  string
	columns []string
	tw      *tabwriter.Writer
	cw      *csv.Writer
	n       int
}

func newRowWriter(w io.Writer, format string, columns []string) *rowWriter {
	rw := &rowWriter{w: bufio.NewWriterSize(w, 64<<10), format: format, columns: columns}
	switch format {
	case fmtTable:
		rw.tw = tabwriter.NewWriter(rw.w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(rw.tw, strings.Join(columns, "\t"))
	case fmtCSV:
		rw.cw = csv.NewWriter(rw.w)
		rw.cw.Write(columns)
	case fmtJSON:
		rw.w.WriteString("[")
	}
	return rw
}

// Write prints one row; values are in column order.
func (rw *rowWriter) Write(values []any) error {
	defer func() { rw.n++ }()
	switch rw.format {
	case fmtTable:
		cells := make([]string, len(values))
		for i, v := range values {
			cells[i] = tableCell(v)
		}
		_, err := fmt.Fprintln(rw.tw, strings.Join(cells, "\t"))
		return err
	case fmtCSV:
		cells := make([]string, len(values))
		for i, v := range values {
			cells[i] = plain(v)
		}
		return rw.cw.Write(cells)
	default:
		b, err := marshalRow(rw.columns, values)
		if err != nil {
			return err
		}
		if rw.format == fmtJSON {
			sep := ",\n"
			if rw.n == 0 {
				sep = "\n"
			}
			io.WriteString(rw.w, sep)
		}
		_, err = rw.w.Write(b)
		if rw.format == fmtJSONL {
			io.WriteString(rw.w, "\n")
		}
		return err
	}
}

// Close writes what the format ends with and flushes the output.
func (rw *rowWriter) Close() error {
	var err error
	switch rw.format {
	case fmtTable:
		err = rw.tw.Flush()
	case fmtCSV:
		rw.cw.Flush()
		err = rw.cw.Error()
	case fmtJSON:
		if rw.n > 0 {
			io.WriteString(rw.w, "\n")
		}
		_, err = io.WriteString(rw.w, "]\n")
	}
	return errors.Join(err, rw.w.Flush())
}

// marshalRow encodes a row as a JSON object with keys in column order.
func marshalRow(columns []string, values []any) ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range columns {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := jsonx.Marshal(c)
		b.Write(k)
		b.WriteByte(':')
		v, err := jsonx.Marshal(values[i])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

const maxCell = 60

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

func tableCell(v any) string {
	v = deref(v)
	if v == nil {
		return "NULL"
	}
	s := plain(v)
	s = cellEscapes.Replace(s)
	if r := []rune(s); len(r) > maxCell {
		s = string(r[:maxCell-1]) + "…"
	}
	return s
}

// cellEscapes keeps a table cell on its line and in its column.
var cellEscapes = strings.NewReplacer("\n", `\n`, "\t", " ", "\r", "")

func plain(v any) string {
	v = deref(v)
	switch t := v.(type) {
	case nil:
		return ""
	case time.Time:
		return t.UTC().Format(time.RFC3339Nano)
	case string:
		return t
	case fmt.Stringer:
		return t.String()
	case []byte:
		return string(t)
	}
	return fmt.Sprint(v)
}
