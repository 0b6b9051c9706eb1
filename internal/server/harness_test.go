package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/generation"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/server"
	"github.com/pchronicle/pchronicle/internal/serving"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

var parser *query.Parser

func TestMain(m *testing.M) { testutil.MainWithParser(m, &parser) }

// chat is one OpenAI chat conversation: a user turn, n tool calls each with
// its result, and a final answer, tagged by id.
func chat(id, model string, n int) string {
	msgs := []string{fmt.Sprintf(`{"role":"user","content":"task %s"}`, id)}
	for i := 0; i < n; i++ {
		c := fmt.Sprintf("%s-c%d", id, i)
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"%s","type":"function","function":{"name":"tool_%d","arguments":"{\"i\":%d}"}}]}`, c, i%3, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"%s","content":"out %s %d"}`, c, id, i))
	}
	msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":"done %s"}`, id))
	return fmt.Sprintf(`{"session_id":%q,"model":%q,"messages":[%s]}`, id, model, strings.Join(msgs, ","))
}

// writeFiles writes files (slash paths → content) under root.
func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dataset writes n chat files of two conversations each: f<i>.jsonl holds
// s<i>a and s<i>b, agents alternate, file i has i%4 tool calls per chat.
func dataset(t testing.TB, n int) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{}
	for i := 0; i < n; i++ {
		agent := []string{"alpha", "beta", "gamma"}[i%3]
		files[fmt.Sprintf("d%d/f%03d.jsonl", i%2, i)] = chat(fmt.Sprintf("s%da", i), agent, i%4) + "\n" + chat(fmt.Sprintf("s%db", i), agent, 1) + "\n"
	}
	writeFiles(t, root, files)
	return root
}

// testServer runs the real runtime and server over mounts.
type testServer struct {
	t   testing.TB
	rt  *generation.Runtime
	url string
	srv *httptest.Server
}

func start(t testing.TB, positional bool, mounts ...catalog.DatasetMount) *testServer {
	t.Helper()
	return startWith(t, generation.Config{Positional: positional}, server.Config{}, mounts...)
}

func startWith(t testing.TB, cfg generation.Config, scfg server.Config, mounts ...catalog.DatasetMount) *testServer {
	t.Helper()
	cfg.Mounts = mounts
	if cfg.Options.MaxFiles == 0 {
		cfg.Options = catalog.DefaultOptions()
	}
	cfg.Limits = engine.LimitsFrom(cfg.Options)
	cfg.Parser = parser
	rt, err := generation.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sr := &serving.Runtime{}
	sr.Publish(rt)
	scfg.Runtime = sr
	srv := httptest.NewServer(server.New(scfg))
	ts := &testServer{t: t, rt: rt, url: srv.URL, srv: srv}
	t.Cleanup(func() { srv.Close(); rt.Close() })
	return ts
}

func positional(root string) catalog.DatasetMount {
	return catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: root}
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (ts *testServer) do(method, path string, body any, headers ...string) response {
	ts.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := response{status: res.StatusCode, header: res.Header, body: b}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &r.json); err != nil {
			ts.t.Fatalf("%s %s: not JSON: %v: %s", method, path, err, b)
		}
	}
	return r
}

func (ts *testServer) get(path string, headers ...string) response {
	ts.t.Helper()
	return ts.do("GET", path, nil, headers...)
}

// ok fails unless the answer is 200.
func (r response) ok(t testing.TB) response {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	return r
}

func (ts *testServer) query(sql string, extra map[string]any) response {
	ts.t.Helper()
	body := map[string]any{"sql": sql}
	for k, v := range extra {
		body[k] = v
	}
	return ts.do("POST", "/api/query", body)
}

// rows returns a JSON query answer's rows as strings, for comparisons.
func rowsOf(r response) []string {
	var out []string
	for _, row := range r.json["rows"].([]any) {
		out = append(out, fmt.Sprint(row))
	}
	return out
}

// current returns the runtime's current generation (released at cleanup).
func (ts *testServer) current() *generation.Generation {
	ts.t.Helper()
	g, release, err := ts.rt.Acquire()
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(release)
	return g
}

// recorder serves requests in-process, without a listener.
type recorder struct{ h http.Handler }

func newRecorder(h http.Handler) recorder { return recorder{h} }

func (r recorder) get(path string) response {
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	res := response{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
	json.Unmarshal(res.body, &res.json)
	return res
}
