package cli

import (
	"encoding/json"
	"fmt"
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
			got := testutil.JSONColumnsAsValues(t, testutil.ReadColumnar(t, format, data))
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

// export --format parquet writes each format's Parquet form with the
// content of its JSONL: DuckDB reads back, for openai, one row per
// Storyline whose messages (roles, text, tool_calls, tool_call_id) are the
// JSONL's; for canonical, the same events in order with payload as JSON;
// for atif, the same documents.
func TestExportParquetMatchesJSONL(t *testing.T) {
	samples := testutil.SamplesDir(t)
	dir := t.TempDir()
	for _, as := range []string{"openai", "canonical", "atif"} {
		t.Run(as, func(t *testing.T) {
			jsonl, stderr, code := testutil.Run(t, "export", samples, "--as", as)
			if code != 0 {
				t.Fatalf("jsonl: exit %d: %s", code, stderr)
			}
			out := filepath.Join(dir, as+".parquet")
			if _, stderr, code := testutil.Run(t, "export", samples, "--as", as, "--format", "parquet", "-o", out); code != 0 {
				t.Fatalf("parquet: exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got := testutil.ReadColumnar(t, "parquet", data)
			lines := strings.Split(strings.TrimSpace(jsonl), "\n")
			if len(got.Rows) != len(lines) || len(lines) < 100 {
				t.Fatalf("%d Parquet rows, %d JSONL lines", len(got.Rows), len(lines))
			}
			col := func(name string) int {
				i := slices.Index(got.Columns, name)
				if i < 0 {
					t.Fatalf("no column %s in %v", name, got.Columns)
				}
				return i
			}
			for i, line := range lines {
				var row []any
				var want map[string]any
				if err := json.Unmarshal([]byte(got.Rows[i]), &row); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(line), &want); err != nil {
					t.Fatal(err)
				}
				var a, b string
				switch as {
				case "openai":
					a, b = chatText(t, row[col("messages")]), chatText(t, want["messages"])
				case "canonical":
					a, b = fmt.Sprint(row[col("event_id")], row[col("kind")], row[col("seq")]), fmt.Sprint(want["event_id"], want["kind"], want["seq"])
					if p, _ := json.Marshal(row[col("payload")]); string(p) != compactJSON(t, want["payload"]) {
						t.Errorf("event %d payload %s, JSONL %s", i, p, compactJSON(t, want["payload"]))
					}
				case "atif":
					a, b = compactJSON(t, row[col("document")]), compactJSON(t, want)
				}
				if a != b {
					t.Fatalf("row %d:\n%s\nJSONL:\n%s", i, a, b)
				}
			}
			if as == "openai" && !strings.Contains(got.Types[col("messages")], "tool_calls STRUCT(id VARCHAR") {
				t.Errorf("messages type %s", got.Types[col("messages")])
			}
			if as != "openai" && !slices.Contains(got.Types, "JSON") {
				t.Errorf("types %v: want the JSON column typed JSON", got.Types)
			}
		})
	}
}

// chatText renders chat messages as the fields a fine-tuning set reads:
// role, content as text, tool calls and the id a tool message answers.
func chatText(t *testing.T, messages any) string {
	t.Helper()
	var b strings.Builder
	for _, m := range messages.([]any) {
		msg := m.(map[string]any)
		content := compactJSON(t, msg["content"]) // multimodal parts: an array in JSONL, its text in Parquet
		fmt.Fprintf(&b, "%v|%v|%v|%v|", msg["role"], content, orEmpty(msg["reasoning_content"]), orEmpty(msg["tool_call_id"]))
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			call := c.(map[string]any)
			fn := call["function"].(map[string]any)
			fmt.Fprintf(&b, "[%v %v %v %v]", call["id"], call["type"], fn["name"], fn["arguments"])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// compactJSON is v as compact JSON; a string holding JSON is that JSON.
func compactJSON(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok && json.Valid([]byte(s)) {
		var x any
		json.Unmarshal([]byte(s), &x)
		v = x
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
