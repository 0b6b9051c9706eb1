package server

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseQueryRequest holds the query request decoder to its contract on
// any body: an answer or an *apiError with a 4xx status, never a panic; an
// accepted request has non-empty valid-UTF-8 SQL, a known format and no
// negative bound, and encodes back to a body that decodes to the same
// request.
func FuzzParseQueryRequest(f *testing.F) {
	for _, seed := range []string{
		`{"sql":"SELECT 1"}`,
		`{"sql":"SELECT 1","format":"csv","max_rows":5,"timeout_ms":100,"routing":false}`,
		`{"sql":"SELECT 1"}{"sql":"SELECT 2"}`,
		`{"sql":"SELECT 1"}   `,
		"{\"sql\":\"SELECT '\xff'\"}",
		`{"sql":"SELECT '\ud800'"}`,
		`{"sql":""}`,
		`{"sql":"SELECT 1","unknown":1}`,
		`{"sql":"SELECT 1","max_rows":-1}`,
		`{"sql":"SELECT 1","max_rows":1e999}`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(seed), "", "")
	}
	f.Add([]byte(`{"sql":"SELECT 1"}`), "", "text/csv")
	f.Add([]byte(`{"sql":"SELECT 1"}`), "parquet", "")
	f.Add([]byte(`{"sql":"SELECT 1"}`), "", "application/vnd.apache.arrow.stream")
	f.Add([]byte(`{"sql":"SELECT 1"}`), "xml", "")
	f.Fuzz(func(t *testing.T, body []byte, urlFormat, accept string) {
		q, err := parseQueryRequest(body, urlFormat, accept)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status > 499 || ae.code == "" {
				t.Fatalf("error %v is not a 4xx with a code", err)
			}
			return
		}
		if strings.TrimSpace(q.SQL) == "" || !utf8.ValidString(q.SQL) || q.MaxRows < 0 || q.TimeoutMS < 0 {
			t.Fatalf("accepted %+v", q)
		}
		switch q.Format {
		case "json", "csv", "ndjson", fmtArrow, fmtParquet:
		default:
			t.Fatalf("accepted format %q", q.Format)
		}
		again, _ := json.Marshal(q)
		q2, err := parseQueryRequest(again, "", "")
		if err != nil || q2.SQL != q.SQL || q2.Format != q.Format || q2.MaxRows != q.MaxRows || q2.TimeoutMS != q.TimeoutMS {
			t.Fatalf("%s decodes to %+v, %v; want %+v", again, q2, err, q)
		}
	})
}
