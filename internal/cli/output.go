package cli

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Output formats shared by every command that prints rows.
const (
	fmtTable    = "table"
	fmtMarkdown = "markdown"
	fmtCSV      = "csv"
	fmtJSON     = "json"
	fmtJSONL    = "jsonl"
)

// rowFormats are the values of --format on commands that print rows; the
// error for any other value and shell completion both list them.
var rowFormats = []string{fmtTable, fmtMarkdown, fmtCSV, fmtJSON, fmtJSONL}

func validFormat(f string) error {
	if slices.Contains(rowFormats, f) {
		return nil
	}
	return fmt.Errorf("unknown --format %q (want %s)", f, orList(rowFormats))
}

// orList writes values as "a, b or c".
func orList(values []string) string {
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// terminalRows is how many rows a table shows on a terminal unless
// --max-rows says otherwise, as in DuckDB's CLI.
const terminalRows = 40

// rowWriter prints rows of named columns in one of the output formats.
// Values are any JSON-encodable Go value; nil prints as NULL in a table and
// as an empty field in CSV.
type rowWriter struct {
	w       *bufio.Writer // the output, buffered: a write per row or cell was a system call each
	format  string
	columns []string
	tw      *tableWriter
	cw      *csv.Writer
	n       int
	// jsonText marks the columns whose text is JSON: json and jsonl
	// write it as the JSON value it holds.
	jsonText []bool
	stopped  string // why the result ends early, said in-band at Close
}

func newRowWriter(w io.Writer, format string, columns []string) *rowWriter {
	rw := &rowWriter{w: bufio.NewWriterSize(w, 64<<10), format: format, columns: columns}
	switch format {
	case fmtTable, fmtMarkdown:
		width := 0
		if format == fmtTable {
			width = terminalWidth(w)
		}
		rw.tw = newTableWriter(columns, format == fmtMarkdown, width, 0)
	case fmtCSV:
		rw.cw = csv.NewWriter(rw.w)
		rw.cw.Write(columns)
	case fmtJSON:
		rw.w.WriteString("[")
	}
	return rw
}

// maxRows sets how many rows a table or markdown shows (0: all); the
// footer counts the rest and names --max-rows, so only a command with that
// flag calls it. Negative is the default: terminalRows on a terminal, all
// elsewhere.
func (rw *rowWriter) maxRows(n int) {
	if rw.tw == nil {
		return
	}
	if n < 0 {
		n = 0
		if rw.tw.width > 0 {
			n = terminalRows
		}
	}
	rw.tw.maxRows = n
}

// jsonColumns marks the columns that hold JSON text, by their DuckDB type
// (JSON) or by their name in the model (docs/query-model.md); a value that
// does not parse, such as an invalid `arguments`, stays a string.
func (rw *rowWriter) jsonColumns(types []string) {
	rw.jsonText = make([]bool, len(rw.columns))
	for i, c := range rw.columns {
		rw.jsonText[i] = model.IsJSONColumn(c) || (i < len(types) && types[i] == "JSON")
	}
}

// columnTypes gives a terminal table the DuckDB type of each column, shown
// under its name.
func (rw *rowWriter) columnTypes(types []string) {
	if rw.tw == nil {
		return
	}
	rw.tw.types = make([]string, len(types))
	for i, t := range types {
		rw.tw.types[i] = strings.ToLower(t)
	}
}

// stop records that the result ends before its last row, and why; Close
// says so in the output itself: a footer in a table, a final marker object
// in json and jsonl (CSV has no place for it: the exit status and the
// error on stderr say it).
func (rw *rowWriter) stop(reason string) { rw.stopped = reason }

// Write prints one row; values are in column order.
func (rw *rowWriter) Write(values []any) error {
	defer func() { rw.n++ }()
	switch rw.format {
	case fmtTable, fmtMarkdown:
		rw.tw.write(values)
		return nil
	case fmtCSV:
		cells := make([]string, len(values))
		for i, v := range values {
			cells[i] = plain(v)
		}
		return rw.cw.Write(cells)
	default:
		if rw.jsonText != nil {
			values = rawJSON(values, rw.jsonText)
		}
		b, err := marshalRow(rw.columns, values)
		if err != nil {
			return err
		}
		rw.jsonLine(b)
		return nil
	}
}

func (rw *rowWriter) jsonLine(b []byte) {
	if rw.format == fmtJSON {
		sep := ",\n"
		if rw.n == 0 {
			sep = "\n"
		}
		io.WriteString(rw.w, sep)
	}
	rw.w.Write(b)
	if rw.format == fmtJSONL {
		io.WriteString(rw.w, "\n")
	}
}

// rawJSON returns values with the valid JSON text of the marked columns
// as raw JSON.
func rawJSON(values []any, marked []bool) []any {
	out := slices.Clone(values)
	for i, v := range values {
		if s, ok := deref(v).(string); ok && marked[i] && jsonx.Valid([]byte(s)) {
			out[i] = jsonx.RawMessage(s)
		}
	}
	return out
}

// truncatedKey is the one key of the object json and jsonl end with when
// a result was cut; no column of the model has this name.
const truncatedKey = "_truncated_"

// Close writes what the format ends with and flushes the output.
func (rw *rowWriter) Close() error {
	var err error
	switch rw.format {
	case fmtTable, fmtMarkdown:
		err = rw.tw.render(rw.w, rw.stopped)
	case fmtCSV:
		rw.cw.Flush()
		err = rw.cw.Error()
	case fmtJSON, fmtJSONL:
		if rw.stopped != "" {
			b, _ := jsonx.Marshal(map[string]any{truncatedKey: map[string]any{"rows": rw.n, "reason": rw.stopped}})
			rw.jsonLine(b)
			rw.n++
		}
		if rw.format == fmtJSON {
			if rw.n > 0 {
				io.WriteString(rw.w, "\n")
			}
			_, err = io.WriteString(rw.w, "]\n")
		}
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
