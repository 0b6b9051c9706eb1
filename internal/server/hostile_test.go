package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/server"
)

// post sends body as it is, bytes and all.
func (ts *testServer) post(path string, body []byte, headers ...string) response {
	ts.t.Helper()
	res, b := ts.postRaw(path, string(body), headers...)
	r := response{status: res.StatusCode, header: res.Header, body: b}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		r.json = map[string]any{}
		if err := jsonUnmarshal(b, &r.json); err != nil {
			ts.t.Fatalf("POST %s: not JSON: %v: %s", path, err, b)
		}
	}
	return r
}

// Every malformed or unanswerable request body gets a 4xx with a stable
// code and a message that says what to change; a large legal statement
// runs.
func TestHostileQueryBodiesGetStableCodes(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 2)))
	in := make([]string, 30_000)
	for i := range in {
		in[i] = fmt.Sprint(i)
	}
	bigIn := `{"sql":"SELECT count(*) AS n FROM runs WHERE step_count IN (` + strings.Join(in, ",") + `)"}`
	huge := `{"sql":"SELECT 1 WHERE 1 IN (` + strings.Repeat("1,", 300_000) + `1)"}`
	for _, tt := range []struct {
		name   string
		body   string
		status int
		code   string
		says   string
	}{
		{"trailing object", `{"sql":"SELECT 1"}{"sql":"SELECT 2"}`, 400, server.CodeBadRequest, "after the JSON object"},
		{"trailing garbage", `{"sql":"SELECT 1"} x`, 400, server.CodeBadRequest, "after the JSON object"},
		{"invalid UTF-8 in sql", "{\"sql\":\"SELECT '\xff\xfe'\"}", 400, server.CodeInvalidUTF8, "byte 16"},
		{"too large", `{"sql":"SELECT 1 -- ` + strings.Repeat("x", 1<<20) + `"}`, 413, server.CodeBodyTooLarge, "larger than"},
		{"parameter without a value", `{"sql":"SELECT $1"}`, 400, server.CodeQueryRejected, "parameter"},
		{"named parameter", `{"sql":"SELECT * FROM runs WHERE session_id = $id"}`, 400, server.CodeQueryRejected, "parameter"},
		{"prepared parameter", `{"sql":"SELECT ?"}`, 400, server.CodeQueryRejected, "parameter"},
		{"30,000-item IN list", bigIn, 200, "", ""},
		{"IN list beyond the parser's memory", huge, 400, server.CodeQueryRejected, "too large to analyze"},
		{"nested too deep", `{"sql":"SELECT 1` + strings.Repeat(" + 1", 3000) + `"}`, 400, server.CodeQueryRejected, "depth limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.post("/api/query", []byte(tt.body))
			if r.status != tt.status || (tt.code != "" && r.json["code"] != tt.code) {
				t.Fatalf("%d %.300s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			msg, _ := r.json["message"].(string)
			if !strings.Contains(msg, tt.says) {
				t.Errorf("message %q does not say %q", msg, tt.says)
			}
			// The sandbox refuses SET: no answer may suggest one.
			if strings.Contains(strings.ToUpper(msg), "SET ") {
				t.Errorf("message suggests a SET statement: %q", msg)
			}
		})
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Every answer, whatever its type or status, carries the security
// headers: a browser opening any of them as a page runs and loads nothing.
func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 2)))
	sl := "file=d0/f000.jsonl&session_id=s0a"
	for _, tt := range []struct {
		method, path string
		body         string
		headers      []string
	}{
		{"GET", "/health", "", nil},
		{"GET", "/ready", "", nil},
		{"GET", "/api/catalog", "", nil},
		{"GET", "/api/runs", "", nil},
		{"GET", "/api/nope", "", nil},
		{"GET", "/not-api", "", nil},
		{"DELETE", "/api/runs", "", nil},
		{"GET", "/api/storyline/export?as=openai&" + sl, "", nil},
		{"GET", "/api/storyline/export?as=atif&" + sl, "", nil},
		{"GET", "/api/storyline/text?step=0&field=message&" + sl, "", nil},
		{"POST", "/api/query", `{"sql":"SELECT 1","format":"csv"}`, nil},
		{"POST", "/api/query", `{"sql":"SELECT 1","format":"ndjson"}`, nil},
		{"POST", "/api/query", `{"sql":"SELECT 1"}`, nil},
		{"POST", "/api/query", `{"sql":"SELECT 1"} trailing`, nil},
		{"GET", "/api/runs", "", []string{"If-None-Match", "*"}},
	} {
		req, _ := http.NewRequest(tt.method, ts.url+tt.path, strings.NewReader(tt.body))
		for i := 0; i+1 < len(tt.headers); i += 2 {
			req.Header.Set(tt.headers[i], tt.headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err := server.CheckSecurityHeaders(res.Header); err != nil {
			t.Errorf("%s %s (%d): %v", tt.method, tt.path, res.StatusCode, err)
		}
	}
}

// A client that trickles its body, or keeps an idle keep-alive connection,
// loses the connection at the listener's timeouts.
func TestListenerClosesTrickledAndIdleConnections(t *testing.T) {
	d := server.DefaultTimeouts(time.Minute)
	if d.ReadHeader <= 0 || d.Read <= 0 || d.Idle <= 0 || d.Write <= time.Minute {
		t.Fatalf("default timeouts %+v: each must be set, the write one past the longest run", d)
	}
	ts := start(t, true, positional(dataset(t, 1)))
	hs := server.HTTPServer(ts.srv.Config.Handler, server.Timeouts{ReadHeader: time.Second, Read: time.Second, Write: 5 * time.Second, Idle: time.Second}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	closedWithin := func(what string, c net.Conn, limit time.Duration) {
		t.Helper()
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(limit + 5*time.Second))
		io.Copy(io.Discard, c)
		if took := time.Since(start); took > limit+2*time.Second {
			t.Errorf("%s: the connection was still open after %v", what, took)
		}
	}
	// A body that never completes.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/query HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"sql\":")
	closedWithin("a trickled body", c, time.Second)
	// An idle keep-alive connection after one answer.
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	closedWithin("an idle keep-alive connection", c2, time.Second)
}
