package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// columnarSQL reaches every kind of column the relations hold, and the
// nested types a query makes: timestamps with their zone, integers,
// doubles, booleans, JSON text, a JSON value, lists and structs.
const columnarSQL = `SELECT r._file_, r.session_id, r.started_at, r.step_count, r.cost_usd, r.scores, r.extra::JSON AS extra_json,
	[r.step_count, r.tool_call_count] AS counts, {'agent': r.agent_name, 'model': r.agent_model_name} AS who,
	(SELECT list(s.step_id ORDER BY s.step_index) FROM steps s WHERE s._file_ = r._file_ AND s.session_id = r.session_id) AS step_ids
FROM runs r ORDER BY r._file_, r.session_id`

// A query's Parquet and Arrow outputs, read back by DuckDB, have the rows
// of its JSON output and the types DuckDB gives the query (DESCRIBE), over
// the samples.
func TestQueryColumnarReadsBackLikeJSON(t *testing.T) {
	samples := testutil.SamplesDir(t)
	want := queryTypes(t, samples, columnarSQL)
	stdout, stderr, code := testutil.Run(t, "query", samples, columnarSQL, "--format", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var objects []map[string]any
	if err := json.Unmarshal([]byte(stdout), &objects); err != nil {
		t.Fatal(err)
	}
	if len(objects) < 20 {
		t.Fatalf("only %d runs in the samples", len(objects))
	}
	dir := t.TempDir()
	for _, format := range []string{"parquet", "arrow"} {
		t.Run(format, func(t *testing.T) {
			out := filepath.Join(dir, "result."+format)
			if _, stderr, code := testutil.Run(t, "query", samples, columnarSQL, "--format", format, "-o", out); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got := testutil.ReadColumnar(t, format, data)
			if !slices.Equal(got.Columns, want.Columns) || !slices.Equal(got.Types, want.Types) {
				t.Errorf("read back as\n%v\n%v\nwant\n%v\n%v", got.Columns, got.Types, want.Columns, want.Types)
			}
			jsonRows := testutil.JSONRows(t, want.Columns, objects)
			if len(got.Rows) != len(jsonRows) {
				t.Fatalf("%d rows read back, JSON has %d", len(got.Rows), len(jsonRows))
			}
			for i := range jsonRows {
				if got.Rows[i] != jsonRows[i] {
					t.Errorf("row %d read back as\n%s\nJSON output\n%s", i, got.Rows[i], jsonRows[i])
				}
			}
		})
	}
}

// queryTypes returns the columns and DuckDB types of sqlText's result.
func queryTypes(t *testing.T, dataset, sqlText string) testutil.Columnar {
	t.Helper()
	stdout, stderr, code := testutil.Run(t, "query", dataset, "DESCRIBE "+sqlText, "--format", "jsonl")
	if code != 0 {
		t.Fatalf("describe: exit %d: %s", code, stderr)
	}
	var c testutil.Columnar
	for line := range strings.Lines(stdout) {
		var m struct{ ColumnName, ColumnType string }
		var raw map[string]string
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatal(err)
		}
		m.ColumnName, m.ColumnType = raw["column_name"], raw["column_type"]
		c.Columns, c.Types = append(c.Columns, m.ColumnName), append(c.Types, m.ColumnType)
	}
	return c
}

// A columnar format refuses to write binary to a terminal, and an
// unknown format names the columnar ones.
func TestQueryColumnarRefusals(t *testing.T) {
	var out strings.Builder
	if err := validQueryFormat("parquet", "", &out); err != nil {
		t.Fatalf("a buffer is not a terminal: %v", err)
	}
	err := validQueryFormat("yaml", "", &out)
	if err == nil || !strings.Contains(err.Error(), "arrow or parquet") {
		t.Fatalf("unknown format: %v", err)
	}
}
