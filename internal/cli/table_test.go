package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/pchronicle/pchronicle/internal/engine"
)

// Cells read as SQL: nested values in DuckDB's notation, floats without
// binary noise in a table and exact in CSV, control characters escaped.
func TestValueText(t *testing.T) {
	a, b := 0.1, 0.2 // at run time: constants would add exactly
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v          any
		table, csv string
	}{
		{[]any{int64(1), int64(2)}, "[1, 2]", "[1, 2]"},
		{map[string]any{"b": []any{"it's", nil}, "a": 1.5}, "{'a': 1.5, 'b': ['it''s', NULL]}", "{'a': 1.5, 'b': ['it''s', NULL]}"},
		{[]any{ts}, "['2026-01-02T03:04:05Z']", "['2026-01-02T03:04:05Z']"},
		{1.0872334000000001, "1.0872334", "1.0872334000000001"},
		{a + b, "0.3", "0.30000000000000004"},
		{1.0 / 3, "0.3333333333", "0.3333333333333333"},
		{123456789012.345, "123456789012", "1.23456789012345e+11"},
		{1.5e-7, "1.5e-07", "1.5e-07"},
		{1e20, "1e+20", "1e+20"},
		{nil, "NULL", ""},
		{"a\tb\nc\x1b[31m", `a b\nc\x1b[31m`, "a\tb\nc\x1b[31m"},
	}
	for _, tt := range tests {
		if got := tableCell(tt.v); got != tt.table {
			t.Errorf("table %#v: %q, want %q", tt.v, got, tt.table)
		}
		if got := plain(tt.v); got != tt.csv {
			t.Errorf("csv %#v: %q, want %q", tt.v, got, tt.csv)
		}
	}
}

// A cut cell keeps its beginning and its end (a path's file name) and is
// measured in display columns: a CJK character takes two.
func TestCutMiddle(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"inspect/logs/2025-01-01_task.eval", 16, "inspect/…sk.eval"},
		{"inspect/logs/2025-01-01_task.eval", 26, "insp…/2025-01-01_task.eval"},
		{"漢字漢字漢字漢字", 9, "漢字…漢字"},
		{"漢字漢字漢字漢字", 8, "漢字…字"},
		{"abc", 1, "…"},
	}
	for _, tt := range tests {
		got := cutMiddle(tt.s, tt.width)
		if got != tt.want {
			t.Errorf("cutMiddle(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
		if w := text.StringWidthWithoutEscSequences(got); w > tt.width {
			t.Errorf("cutMiddle(%q, %d) is %d wide", tt.s, tt.width, w)
		}
	}
}

// On a terminal every line fits its width, whatever the columns hold;
// columns are left out from the middle when even cut ones do not fit.
func TestTableFitsTerminal(t *testing.T) {
	cols := []string{"_file_", "n", "漢字のコラム", "path", "reported_completion_tokens", "last"}
	for _, width := range []int{40, 80, 120} {
		tw := newTableWriter(cols, false, width, 3)
		for i := range 5 {
			tw.write([]any{"dir/" + strings.Repeat("x", 50) + "/file.json", int64(i * 1000), "漢字" + strings.Repeat("字", 30), "/a/b/c", 1.25, "z"})
		}
		var b strings.Builder
		if err := tw.render(&b, ""); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		for _, l := range lines {
			if w := text.StringWidthWithoutEscSequences(l); w > width {
				t.Errorf("width %d: line is %d wide: %q", width, w, l)
			}
		}
		if !strings.Contains(b.String(), "┘\n5 rows (3 shown)") {
			t.Errorf("width %d: no row count under the table:\n%s", width, b.String())
		}
		if !strings.Contains(b.String(), "file.json") {
			t.Errorf("width %d: a cut path lost its file name:\n%s", width, b.String())
		}
		if width == 40 && !strings.Contains(b.String(), "6 columns (") {
			t.Errorf("width 40: footer does not say columns were left out:\n%s", b.String())
		}
	}
}

// A top-level PIVOT becomes a subquery, and each ON expression without an
// IN list gets the values the data holds; quotes, parentheses, comments and
// words that merely contain a keyword are not taken for its clauses.
func TestExpandPivot(t *testing.T) {
	q := fakeValues{"SELECT DISTINCT CAST((status) AS VARCHAR) FROM (SELECT status, 'on' AS x FROM runs) WHERE (status) IS NOT NULL ORDER BY 1": {"a'b", "c"}}
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"-- note\nPIVOT (SELECT status, 'on' AS x FROM runs) ON status USING count(*) GROUP BY session;",
			"SELECT * FROM (PIVOT (SELECT status, 'on' AS x FROM runs) ON status IN ('a''b', 'c') USING count(*) GROUP BY session)"},
		{"pivot runs on kind in ('x') using count(*)", "SELECT * FROM (PIVOT runs ON kind in ('x') using count(*))"},
	}
	for _, tt := range tests {
		got, err := expandPivot(context.Background(), q, tt.in)
		if err != nil || got != tt.want {
			t.Errorf("expandPivot(%q) = %q, %v\nwant %q", tt.in, got, err, tt.want)
		}
	}
}

type fakeValues map[string][]string

func (f fakeValues) Query(_ context.Context, sql string, _ engine.QueryOptions) (*engine.Result, error) {
	vals, ok := f[sql]
	if !ok {
		return nil, fmt.Errorf("unexpected query %q", sql)
	}
	res := &engine.Result{}
	for _, v := range vals {
		res.Rows = append(res.Rows, []any{v})
	}
	return res, nil
}

// SQL that starts with a comment is an argument, not an unknown flag; the
// value of a flag stays that flag's.
func TestSQLAfterFlags(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"query", "ds", "-- c\nSELECT 1", "--format", "csv"}, []string{"query", "ds", "--format", "csv", "--", "-- c\nSELECT 1"}},
		{[]string{"query", "ds", "--sql", "-- c\nSELECT 1"}, []string{"query", "ds", "--sql", "-- c\nSELECT 1"}},
		{[]string{"find", "ds", "--text", "-- not sql"}, []string{"find", "ds", "--text", "-- not sql"}},
		{[]string{"query", "ds", "--sql=SELECT 1"}, []string{"query", "ds", "--sql=SELECT 1"}},
		{[]string{"query", "ds", "--", "-- c\nSELECT 1"}, []string{"query", "ds", "--", "-- c\nSELECT 1"}},
	}
	for _, tt := range tests {
		if got := sqlAfterFlags(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("sqlAfterFlags(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Any text, as a statement, is left alone or becomes a PIVOT subquery; the
// scanner never panics or loops on quotes, comments or parentheses left
// open; a cut cell is never wider than asked.
func FuzzExpandPivot(f *testing.F) {
	for _, s := range []string{"PIVOT runs ON status USING count(*)", "-- c\npivot (SELECT 'on(' AS x) on x, \"y\" IN ('a') using sum(1) group by z",
		"PIVOT 'unterminated ON", "PIVOT /* open", "PIVOT (((ON", "pivot runs on", "SELECT 1"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, sql string, width int) {
		got, err := expandPivot(context.Background(), anyValues{}, sql)
		if err == nil && got != sql && !strings.HasPrefix(got, "SELECT * FROM (PIVOT ") {
			t.Fatalf("expandPivot(%q) = %q", sql, got)
		}
		width = width % 200
		if cut := cutMiddle(sql, width); width >= 0 && text.StringWidthWithoutEscSequences(cut) > max(width, 0) && text.StringWidthWithoutEscSequences(sql) > width {
			t.Fatalf("cutMiddle(%q, %d) = %q is wider", sql, width, cut)
		}
	})
}

// anyValues answers every values query with two values.
type anyValues struct{}

func (anyValues) Query(context.Context, string, engine.QueryOptions) (*engine.Result, error) {
	return &engine.Result{Rows: [][]any{{"a"}, {"b'c"}}}, nil
}
