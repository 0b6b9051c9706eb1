package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// postRaw sends a body with headers and returns the answer with its
// trailers, read whole.
func (ts *testServer) postRaw(path, body string, headers ...string) (res *http.Response, data []byte) {
	ts.t.Helper()
	req, err := http.NewRequest("POST", ts.url+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err = io.ReadAll(res.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return res, data
}

const columnarSQL = `SELECT c._file_, c.session_id, c.call_index, c.function_name, c.arguments, c.arguments_valid, c.result,
	r.started_at, r.extra::JSON AS run_extra, [c.function_name, c.tool_call_id] AS names, {'step': c.step_id, 'status': c.result_status} AS status
FROM tool_calls c JOIN runs r ON r._file_ = c._file_ AND r.session_id = c.session_id
ORDER BY c._file_, c.session_id, c.call_index`

// POST /api/query answers Arrow and Parquet, asked by the body's format,
// by ?format= or by Accept; DuckDB reads each back with the rows of the
// JSON answer and the types DuckDB gives the query.
func TestQueryAnswersArrowAndParquet(t *testing.T) {
	ts := start(t, true, positional(testutil.SamplesDir(t)))
	body := func(extra string) string {
		b, _ := json.Marshal(columnarSQL)
		return `{"sql": ` + string(b) + extra + `}`
	}
	j := ts.query(columnarSQL, map[string]any{"max_rows": 100000}).ok(t)
	var want []string
	for _, row := range j.json["rows"].([]any) {
		b, _ := json.Marshal(row)
		want = append(want, string(b))
	}
	if len(want) < 50 {
		t.Fatalf("only %d tool calls in the samples", len(want))
	}
	var cols, types []string
	for _, row := range ts.query("DESCRIBE "+columnarSQL, nil).ok(t).json["rows"].([]any) {
		cols, types = append(cols, row.([]any)[0].(string)), append(types, row.([]any)[1].(string))
	}
	for _, tc := range []struct {
		name, format, body, mime string
		headers                  []string
	}{
		{"body arrow", "arrow", body(`, "format": "arrow", "max_rows": 100000`), "application/vnd.apache.arrow.stream", nil},
		{"body parquet", "parquet", body(`, "format": "parquet", "max_rows": 100000`), "application/vnd.apache.parquet", nil},
		{"accept arrow", "arrow", body(`, "max_rows": 100000`), "application/vnd.apache.arrow.stream", []string{"Accept", "application/vnd.apache.arrow.stream"}},
		{"accept parquet", "parquet", body(`, "max_rows": 100000`), "application/vnd.apache.parquet", []string{"Accept", "application/vnd.apache.parquet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, data := ts.postRaw("/api/query", tc.body, tc.headers...)
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != tc.mime {
				t.Fatalf("status %d, %s: %.300s", res.StatusCode, res.Header.Get("Content-Type"), data)
			}
			if res.Trailer.Get("X-Truncated") != "false" || res.Trailer.Get("X-Row-Count") != fmt.Sprint(len(want)) {
				t.Errorf("trailers %v, want not truncated, %d rows", res.Trailer, len(want))
			}
			got := testutil.ReadColumnar(t, tc.format, data)
			if !slices.Equal(got.Columns, cols) || !slices.Equal(got.Types, types) {
				t.Errorf("read back as\n%v\n%v\nwant\n%v\n%v", got.Columns, got.Types, cols, types)
			}
			if !slices.Equal(got.Rows, want) {
				t.Errorf("rows differ from the JSON answer: %d vs %d; first\n%v\n%v", len(got.Rows), len(want), first(got.Rows), first(want))
			}
		})
	}
	// ?format= asks too.
	res, data := ts.postRaw("/api/query?format=arrow", body(`, "max_rows": 3`))
	if res.StatusCode != http.StatusOK || len(testutil.ReadColumnar(t, "arrow", data).Rows) != 3 {
		t.Fatalf("?format=arrow: status %d, %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

func first(rows []string) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0]
}

// The row cap cuts a columnar answer as it cuts JSON, and says so: in the
// X-Truncated trailer, and for Parquet in the file's footer too. An error
// before the first batch is the usual JSON error with its status.
func TestColumnarAnswerRowCapAndErrors(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 6)))
	res, data := ts.postRaw("/api/query", `{"sql": "SELECT session_id FROM runs ORDER BY 1", "format": "parquet", "max_rows": 5}`)
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Max-Rows") != "5" {
		t.Fatalf("status %d, X-Max-Rows %q", res.StatusCode, res.Header.Get("X-Max-Rows"))
	}
	if got := testutil.ReadColumnar(t, "parquet", data); len(got.Rows) != 5 {
		t.Fatalf("%d rows, want the cap's 5", len(got.Rows))
	}
	if res.Trailer.Get("X-Truncated") != "true" || res.Trailer.Get("X-Row-Count") != "5" {
		t.Errorf("trailers %v, want truncated after 5 rows", res.Trailer)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	kv := pf.MetaData().KeyValueMetadata()
	if v := kv.FindValue("pchronicle.truncated"); v == nil || *v != "true" {
		t.Errorf("footer pchronicle.truncated = %v, want true", v)
	}
	if v := kv.FindValue("pchronicle.row_count"); v == nil || *v != "5" {
		t.Errorf("footer pchronicle.row_count = %v, want 5", v)
	}

	res, data = ts.postRaw("/api/query", `{"sql": "SELECT session_id FROM runs", "format": "arrow", "max_rows": 100}`)
	if got := testutil.ReadColumnar(t, "arrow", data); res.StatusCode != http.StatusOK || len(got.Rows) != 12 || res.Trailer.Get("X-Truncated") != "false" {
		t.Fatalf("uncut: status %d, %d rows, trailers %v", res.StatusCode, len(got.Rows), res.Trailer)
	}

	for _, tc := range []struct{ body, code string }{
		{`{"sql": "SELECT nope FROM runs", "format": "arrow"}`, "query_error"},
		{`{"sql": "CREATE TABLE t (i INT)", "format": "parquet"}`, "query_rejected"},
		{`{"sql": "SELECT 1", "format": "feather"}`, "bad_request"},
	} {
		res, data := ts.postRaw("/api/query", tc.body)
		var e struct{ Code, Message string }
		json.Unmarshal(data, &e)
		if res.StatusCode < 400 || e.Code != tc.code || strings.Contains(e.Message, "LINE 1: DESCRIBE") {
			t.Errorf("%s: status %d, %s; want code %s", tc.body, res.StatusCode, data, tc.code)
		}
	}
}

// The run list answers a page as Arrow or Parquet (Accept, or output=):
// the JSON page's runs in its order, with its cursor and total in headers,
// and the cursor leads to the same next page.
func TestRunListAnswersColumnar(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 6)))
	page := ts.get("/api/runs?limit=5&sort=session_id").ok(t)
	var want []string
	for _, run := range page.json["runs"].([]any) {
		m := run.(map[string]any)
		want = append(want, m["_file_"].(string)+" "+m["session_id"].(string))
	}
	for _, tc := range []struct {
		format, query string
		headers       []string
	}{
		{"arrow", "", []string{"Accept", "application/vnd.apache.arrow.stream"}},
		{"parquet", "&output=parquet", nil},
	} {
		res := ts.get("/api/runs?limit=5&sort=session_id"+tc.query, tc.headers...).ok(t)
		got := testutil.ReadColumnar(t, tc.format, res.body)
		fileCol, sessionCol := slices.Index(got.Columns, "_file_"), slices.Index(got.Columns, "session_id")
		if fileCol < 0 || sessionCol < 0 || !slices.Contains(got.Columns, "duration_ms") || !slices.Contains(got.Columns, "dataset") {
			t.Fatalf("%s columns %v", tc.format, got.Columns)
		}
		var runs []string
		for _, row := range got.Rows {
			var vals []any
			json.Unmarshal([]byte(row), &vals)
			runs = append(runs, fmt.Sprint(vals[fileCol], " ", vals[sessionCol]))
		}
		if !slices.Equal(runs, want) {
			t.Errorf("%s page %v, want %v", tc.format, runs, want)
		}
		if res.header.Get("X-Next-Cursor") != page.json["next_cursor"] || res.header.Get("X-Total-Count") != fmt.Sprint(page.json["total"]) {
			t.Errorf("%s: cursor %q total %q, want %v and %v", tc.format, res.header.Get("X-Next-Cursor"), res.header.Get("X-Total-Count"), page.json["next_cursor"], page.json["total"])
		}
	}
	next := ts.get("/api/runs?limit=5&sort=session_id&output=arrow&cursor=" + page.json["next_cursor"].(string)).ok(t)
	if n := len(testutil.ReadColumnar(t, "arrow", next.body).Rows); n != 5 {
		t.Errorf("the next page has %d runs, want 5", n)
	}
	if res := ts.get("/api/runs?output=feather"); res.status != http.StatusBadRequest {
		t.Errorf("output=feather: status %d", res.status)
	}
}
