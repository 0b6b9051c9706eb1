package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/generation"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/server"
	"github.com/pchronicle/pchronicle/internal/serving"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

func TestHealthAndReadiness(t *testing.T) {
	sr := &serving.Runtime{}
	srv := server.New(server.Config{Runtime: sr, Version: "v-test"})
	h := newRecorder(srv)
	if r := h.get("/health"); r.status != 200 || r.json["version"] != "v-test" {
		t.Fatalf("/health: %d %s", r.status, r.body)
	}
	// Nothing is published yet: readiness and every data route are 503.
	for _, p := range []string{"/ready", "/api/catalog", "/api/runs"} {
		if r := h.get(p); r.status != 503 || r.json["code"] != server.CodeNotReady {
			t.Fatalf("%s before publish: %d %s", p, r.status, r.body)
		}
	}
	rt, err := generation.Start(context.Background(), generation.Config{Mounts: []catalog.DatasetMount{positional(dataset(t, 2))},
		Positional: true, Options: catalog.DefaultOptions(), Limits: engine.LimitsFrom(catalog.DefaultOptions()), Parser: parser})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sr.Publish(rt)
	if r := h.get("/ready"); r.status != 200 || r.json["snapshot_id"] == "" {
		t.Fatalf("/ready after publish: %d %s", r.status, r.body)
	}
}

// Building the server and answering the catalog resolves no source (the
// Catalog is lazy); a query resolves only what it reads.
func TestCatalogIsLazy(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 6)))
	c := ts.get("/api/catalog").ok(t)
	ds := c.json["datasets"].([]any)[0].(map[string]any)
	if ds["sources"].(float64) != 6 || c.json["default_dataset"] != "dataset" || c.json["error_policy"] != "strict" {
		t.Fatalf("catalog: %s", c.body)
	}
	if n := ts.current().Snapshot().Resolves(); n != 0 {
		t.Fatalf("%d sources resolved by start-up and the catalog, want 0", n)
	}
	ts.query("SELECT count(*) FROM runs WHERE _file_ = 'd0/f000.jsonl'", nil).ok(t)
	if n := ts.current().Snapshot().Resolves(); n != 1 {
		t.Fatalf("%d sources resolved by a one-file query, want 1", n)
	}
}

// A refresh publishes a complete new Snapshot; a failed one keeps the old
// serving, reports the failure, and the next one succeeds (invariant 9).
func TestRefreshAndFailedRefreshKeepsTheOldSnapshot(t *testing.T) {
	root := dataset(t, 3)
	ts := start(t, true, positional(root))
	old := ts.get("/api/catalog").ok(t).json["snapshot_id"].(string)
	writeFiles(t, root, map[string]string{"d1/new.jsonl": chat("fresh", "m", 2) + "\n"})
	r := ts.do("POST", "/api/catalog", nil).ok(t)
	fresh := r.json["snapshot_id"].(string)
	if fresh == old || r.json["refreshed"].(map[string]any)["outcome"] != "published" {
		t.Fatalf("refresh after adding a file: %s", r.body)
	}
	if got := rowsOf(ts.query("SELECT session_id FROM runs WHERE session_id = 'fresh'", nil).ok(t)); !slices.Equal(got, []string{"[fresh]"}) {
		t.Fatalf("the new file's run after refresh: %v", got)
	}
	// Break the member set: a directory that cannot be listed fails the build.
	bad := filepath.Join(root, "d0")
	if err := os.Chmod(bad, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(bad, 0o755)
	if os.Geteuid() == 0 { // root reads everything: remove the root instead
		os.Chmod(bad, 0o755)
		if err := os.Rename(root, root+".away"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(root+".away", root)
	}
	r = ts.do("POST", "/api/catalog", nil)
	if r.status != http.StatusServiceUnavailable || r.json["code"] != server.CodeRefreshFailed {
		t.Fatalf("failed refresh: %d %s", r.status, r.body)
	}
	c := ts.get("/api/catalog").ok(t)
	if c.json["snapshot_id"] != fresh || !c.json["refresh"].(map[string]any)["dirty"].(bool) {
		t.Fatalf("after a failed refresh the previous snapshot must serve, marked dirty: %s", c.body)
	}
	last := c.json["refresh"].(map[string]any)["last_refresh"].(map[string]any)
	if last["outcome"] != "failed" || last["error"] == "" {
		t.Fatalf("the failure is reported: %v", last)
	}
	if got := rowsOf(ts.query("SELECT count(*) FROM runs", nil).ok(t)); !slices.Equal(got, []string{"[7]"}) {
		t.Fatalf("queries keep answering from the previous snapshot: %v", got)
	}
}

// A request that started before a swap finishes on the generation it
// started on; that generation is closed (temp dir removed) after it ends.
func TestInFlightRequestFinishesOnItsGeneration(t *testing.T) {
	root := dataset(t, 4)
	ts := start(t, true, positional(root))
	g, release, err := ts.rt.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	tmp := g.Snapshot().TempDir
	writeFiles(t, root, map[string]string{"d0/late.jsonl": chat("late", "m", 1) + "\n"})
	if _, err := ts.rt.Refresh(context.Background(), generation.TriggerAPI, true); err != nil {
		t.Fatal(err)
	}
	// The held generation still answers, from its own pinned members.
	rows, err := g.Stream(context.Background(), "SELECT count(*) FROM runs", engine.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	if n := rows.Values()[0]; n != int64(8) {
		t.Fatalf("the old generation counts %v runs, want its own 8", n)
	}
	rows.Close()
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the old generation's temp dir went away while it was in use: %v", err)
	}
	release()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the retired generation's temp dir survives its last request: %v", err)
	}
	if got := rowsOf(ts.query("SELECT count(*) FROM runs", nil).ok(t)); !slices.Equal(got, []string{"[9]"}) {
		t.Fatalf("new requests use the new generation: %v", got)
	}
}

// A streamed response that began before a refresh keeps reading its own
// generation's rows, and reports that generation's snapshot id.
func TestStreamingResponseSpansARefresh(t *testing.T) {
	root := dataset(t, 4)
	ts := start(t, true, positional(root))
	body := strings.NewReader(`{"sql": "SELECT session_id FROM runs ORDER BY 1", "format": "ndjson"}`)
	res, err := http.Post(ts.url+"/api/query", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	id := res.Header.Get("X-Snapshot-Id")
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() {
		t.Fatal("no first row")
	}
	writeFiles(t, root, map[string]string{"d0/zz.jsonl": chat("zz", "m", 1) + "\n"})
	if _, err := ts.rt.Refresh(context.Background(), generation.TriggerAPI, true); err != nil {
		t.Fatal(err)
	}
	n := 1
	for sc.Scan() {
		if strings.Contains(sc.Text(), "zz") {
			t.Fatalf("a row of the new snapshot in a response of %s", id)
		}
		n++
	}
	if n != 8 || id == ts.current().ID() {
		t.Fatalf("%d rows from snapshot %s (now %s), want the old snapshot's 8", n, id, ts.current().ID())
	}
}

func TestPageTokensAndCursorsAreBoundToTheSnapshot(t *testing.T) {
	root := dataset(t, 5)
	ts := start(t, true, positional(root))
	src := ts.get("/api/sources?page_size=2").ok(t)
	tok := src.json["next_page_token"].(string)
	runs := ts.get("/api/runs?limit=3").ok(t)
	cur := runs.json["next_cursor"].(string)
	if tok == "" || cur == "" {
		t.Fatalf("want a next page: %s / %s", src.body, runs.body)
	}
	// Within the snapshot they page on.
	ts.get("/api/sources?page_size=2&page_token=" + url.QueryEscape(tok)).ok(t)
	ts.get("/api/runs?limit=3&cursor=" + url.QueryEscape(cur)).ok(t)
	// Another listing's token, or another filter's cursor: 400.
	if r := ts.get("/api/runs?limit=3&sort=step_count&cursor=" + url.QueryEscape(cur)); r.status != 400 || r.json["code"] != server.CodeInvalidToken {
		t.Fatalf("cursor of another sort: %d %s", r.status, r.body)
	}
	writeFiles(t, root, map[string]string{"d0/more.jsonl": chat("more", "m", 1) + "\n"})
	ts.do("POST", "/api/catalog", nil).ok(t)
	for _, p := range []string{"/api/sources?page_size=2&page_token=" + url.QueryEscape(tok), "/api/runs?limit=3&cursor=" + url.QueryEscape(cur)} {
		if r := ts.get(p); r.status != http.StatusConflict || r.json["code"] != server.CodeStaleToken {
			t.Fatalf("%s after a refresh: %d %s", p, r.status, r.body)
		}
	}
}

// Keyset paging returns every run exactly once, in the requested order,
// for every sort key; filters narrow on the server.
func TestRunsPagingFiltersAndSort(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 9)))
	for _, sort := range []string{"", "step_count", "-tool_call_count", "session_id", "-_file_", "cost_usd"} {
		var got []string
		path := "/api/runs?limit=4&sort=" + sort
		for pages := 0; ; pages++ {
			r := ts.get(path).ok(t)
			for _, run := range r.json["runs"].([]any) {
				m := run.(map[string]any)
				got = append(got, m["_file_"].(string)+"#"+m["session_id"].(string))
			}
			if r.json["total"].(float64) != 18 {
				t.Fatalf("total %v, want 18", r.json["total"])
			}
			next := r.json["next_cursor"].(string)
			if next == "" {
				break
			}
			path = "/api/runs?limit=4&sort=" + sort + "&cursor=" + url.QueryEscape(next)
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		seen := map[string]bool{}
		for _, k := range got {
			if seen[k] {
				t.Fatalf("sort %q: %s listed twice", sort, k)
			}
			seen[k] = true
		}
		if len(got) != 18 {
			t.Fatalf("sort %q: %d runs paged, want 18", sort, len(got))
		}
	}
	r := ts.get("/api/runs?model=beta&file_prefix=d1/").ok(t)
	for _, run := range r.json["runs"].([]any) {
		m := run.(map[string]any)
		if m["agent_model_name"] != "beta" || !strings.HasPrefix(m["_file_"].(string), "d1/") {
			t.Fatalf("filtered run %v", m)
		}
	}
	// beta is files 1, 4, 7; d1/ holds the odd ones: f001 and f007, two runs each.
	if r.json["total"].(float64) != 4 {
		t.Fatalf("model=beta & file_prefix=d1/: total %v, want 4", r.json["total"])
	}
	if r := ts.get("/api/runs?sort=nope"); r.status != 400 || r.json["code"] != server.CodeBadRequest {
		t.Fatalf("bad sort: %d %s", r.status, r.body)
	}
}

// Ordered by step_count descending, pages follow the SQL order exactly.
func TestRunsOrderMatchesSQL(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 7)))
	want := rowsOf(ts.query("SELECT _file_, session_id FROM runs ORDER BY step_count DESC NULLS LAST, _file_, session_id", nil).ok(t))
	var got []string
	path := "/api/runs?limit=3&sort=-step_count"
	for {
		r := ts.get(path).ok(t)
		for _, run := range r.json["runs"].([]any) {
			m := run.(map[string]any)
			got = append(got, fmt.Sprint([]any{m["_file_"], m["session_id"]}))
		}
		next := r.json["next_cursor"].(string)
		if next == "" {
			break
		}
		path = "/api/runs?limit=3&sort=-step_count&cursor=" + url.QueryEscape(next)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged order\n%v\nwant\n%v", got, want)
	}
}

func TestStorylineHeadersBodiesAndFind(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("x", 10000)
	writeFiles(t, root, map[string]string{"a.jsonl": chat("s1", "m", 3) + "\n" +
		`{"session_id":"big","messages":[{"role":"user","content":"` + long + ` needle"}]}` + "\n"})
	ts := start(t, true, positional(root))
	q := "file=a.jsonl&session_id=s1"
	st := ts.get("/api/storyline?" + q).ok(t)
	if st.json["run"].(map[string]any)["tool_call_count"].(float64) != 3 {
		t.Fatalf("storyline: %s", st.body)
	}
	steps := ts.get("/api/storyline/steps?limit=3&" + q).ok(t)
	hs := steps.json["steps"].([]any)
	if len(hs) != 3 || steps.json["next_from"].(float64) != 3 {
		t.Fatalf("first page of 3: %s", steps.body)
	}
	// Step 1 calls s1-c0; step 2 (the tool message) carries its result.
	call := hs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	res := hs[2].(map[string]any)["results"].([]any)[0].(map[string]any)
	if call["tool_call_id"] != "s1-c0" || res["tool_call_id"] != "s1-c0" || call["result_status"] != "ok" {
		t.Fatalf("call %v / result %v", call, res)
	}
	// The last page ends the Storyline: 1 user + 3×2 + 1 answer = 8 steps.
	last := ts.get("/api/storyline/steps?from=6&limit=5&" + q).ok(t)
	if n := len(last.json["steps"].([]any)); n != 2 || last.json["next_from"] != nil {
		t.Fatalf("last page: %s", last.body)
	}
	bodies := ts.get("/api/storyline/bodies?file=a.jsonl&session_id=big&max_chars=100").ok(t)
	msg := bodies.json["steps"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if len(msg["value"].(string)) != 100 || msg["bytes"].(float64) != 10007 || msg["truncated"] != true {
		t.Fatalf("capped body: value %d chars, %v bytes, truncated %v", len(msg["value"].(string)), msg["bytes"], msg["truncated"])
	}
	find := ts.get("/api/storyline/find?file=a.jsonl&session_id=big&q=NEEDLE").ok(t)
	if fmt.Sprint(find.json["steps"]) != "[0]" {
		t.Fatalf("find beyond the cap: %s", find.body)
	}
	find = ts.get("/api/storyline/find?" + q + "&q=out%20s1%202").ok(t)
	if fmt.Sprint(find.json["steps"]) != "[5 6]" { // the call's step and its result's step
		t.Fatalf("find in a tool result: %s", find.body)
	}
	if r := ts.get("/api/storyline?file=a.jsonl&session_id=nope"); r.status != 404 || r.json["code"] != server.CodeNotFound {
		t.Fatalf("unknown session: %d %s", r.status, r.body)
	}
	for _, as := range []string{"atif", "openai", "canonical"} {
		r := ts.get("/api/storyline/export?as=" + as + "&" + q)
		if r.status != 200 || !strings.Contains(r.header.Get("Content-Disposition"), "attachment") || len(r.body) == 0 {
			t.Fatalf("export %s: %d %s", as, r.status, r.header)
		}
	}
}

func TestErrorsHaveStableCodes(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 2)))
	for _, tt := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"GET", "/api/nope", nil, 404, server.CodeNotFound},
		{"DELETE", "/api/runs", nil, 405, server.CodeMethod},
		{"PUT", "/api/catalog", nil, 405, server.CodeMethod},
		{"GET", "/api/runs?limit=0", nil, 400, server.CodeBadRequest},
		{"GET", "/api/storyline?file=x", nil, 400, server.CodeBadRequest},
		{"GET", "/api/source?file=missing.json", nil, 404, server.CodeNotFound},
		{"GET", "/api/sources?page_token=garbage", nil, 400, server.CodeInvalidToken},
		{"POST", "/api/query", map[string]any{"sql": "DELETE FROM runs"}, 400, server.CodeQueryRejected},
		{"POST", "/api/query", map[string]any{"sql": "SELECT nope FROM runs"}, 400, server.CodeQueryError},
		{"POST", "/api/query", map[string]any{"sql": "SELECT 1", "unknown": true}, 400, server.CodeBadRequest},
		{"POST", "/api/query", map[string]any{"sql": "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10000000000) SELECT count(*) FROM t", "timeout_ms": 100}, 408, server.CodeQueryTimeout},
	} {
		r := ts.do(tt.method, tt.path, tt.body)
		if r.status != tt.status || r.json["code"] != tt.code || r.json["request_id"] == "" || r.json["message"] == "" {
			t.Errorf("%s %s: %d %s, want %d %s", tt.method, tt.path, r.status, r.body, tt.status, tt.code)
		}
	}
	if r := ts.do("DELETE", "/api/runs", nil); r.header.Get("Allow") != "GET" {
		t.Errorf("405 Allow header %q", r.header.Get("Allow"))
	}
	// The request id of the caller is kept; a hostile one is replaced.
	if r := ts.get("/api/nope", "X-Request-Id", "abc-123"); r.json["request_id"] != "abc-123" || r.header.Get("X-Request-Id") != "abc-123" {
		t.Errorf("request id not kept: %s", r.body)
	}
	if r := ts.get("/api/nope", "X-Request-Id", "a b<c>"); r.json["request_id"] == "a b<c>" {
		t.Errorf("a malformed request id was echoed")
	}
}

func TestETagAnswers304(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 2)))
	r := ts.get("/api/catalog").ok(t)
	tag := r.header.Get("ETag")
	if tag != `"`+r.json["snapshot_id"].(string)+`"` {
		t.Fatalf("ETag %q", tag)
	}
	for _, p := range []string{"/api/catalog", "/api/runs"} {
		if r := ts.get(p, "If-None-Match", tag); r.status != http.StatusNotModified || len(r.body) != 0 {
			t.Fatalf("%s with a matching If-None-Match: %d", p, r.status)
		}
		if r := ts.get(p, "If-None-Match", `"other"`); r.status != 200 {
			t.Fatalf("%s with another tag: %d", p, r.status)
		}
	}
}

// With one instance and no queue, a query that finds every instance busy
// gets 503 busy with Retry-After, never a hang.
func TestBusyQueriesGet503WithRetryAfter(t *testing.T) {
	cfg := generation.Config{Positional: true, Gate: engine.NewGate(1, 0)}
	ts := startWith(t, cfg, server.Config{}, positional(dataset(t, 2)))
	// Hold the only instance with a streamed query whose body is not read.
	held, err := ts.current().Stream(context.Background(), "SELECT * FROM runs", engine.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := ts.query("SELECT 1", nil)
	held.Close()
	if r.status != http.StatusServiceUnavailable || r.json["code"] != server.CodeBusy || r.header.Get("Retry-After") == "" {
		t.Fatalf("query while the only instance is held: %d %s %v", r.status, r.body, r.header)
	}
	ts.query("SELECT 1", nil).ok(t)
}

func TestQueryFormatsAndTruncation(t *testing.T) {
	ts := start(t, true, positional(dataset(t, 3)))
	r := ts.query("SELECT session_id FROM runs ORDER BY 1", map[string]any{"max_rows": 4}).ok(t)
	if r.json["truncated"] != true || r.json["row_count"].(float64) != 4 || r.json["snapshot_id"] == "" {
		t.Fatalf("truncated JSON answer: %s", r.body)
	}
	csv := ts.query("SELECT session_id, step_count FROM runs ORDER BY 1 LIMIT 2", map[string]any{"format": "csv"}).ok(t)
	if string(csv.body) != "session_id,step_count\ns0a,2\ns0b,4\n" {
		t.Fatalf("CSV: %q", csv.body)
	}
	nd := ts.query("SELECT session_id FROM runs ORDER BY 1 LIMIT 2", map[string]any{"format": "ndjson"}).ok(t)
	if string(nd.body) != "{\"session_id\":\"s0a\"}\n{\"session_id\":\"s0b\"}\n" {
		t.Fatalf("NDJSON: %q", nd.body)
	}
	ev := ts.do("POST", "/api/query/evidence", map[string]any{"sql": "SELECT session_id FROM runs"}).ok(t)
	if ev.json["row_count"].(float64) != 6 || ev.json["source_routing"].(map[string]any)["outcome"] != "not_applicable" {
		t.Fatalf("evidence: %s", ev.body)
	}
}

// The server never writes to a mounted Dataset (invariant 10).
func TestServingNeverWritesToADataset(t *testing.T) {
	root := dataset(t, 4)
	before := treeState(t, root)
	ts := start(t, true, positional(root))
	ts.get("/api/catalog").ok(t)
	ts.get("/api/runs").ok(t)
	ts.get("/api/storyline/steps?file=d0/f000.jsonl&session_id=s0a").ok(t)
	ts.query("SELECT count(*) FROM steps", nil).ok(t)
	ts.query("SELECT * FROM runs WHERE session_id = 's1a'", nil).ok(t)
	ts.do("POST", "/api/catalog", nil).ok(t)
	if after := treeState(t, root); after != before {
		t.Fatalf("the Dataset changed while served:\nbefore %s\nafter  %s", before, after)
	}
}

// treeState lists every path under root with its size and mtime.
func treeState(t *testing.T, root string) string {
	t.Helper()
	var parts []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		parts = append(parts, fmt.Sprintf("%s:%d:%d", strings.TrimPrefix(p, root), fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// The routing index belongs to one generation (invariant 14): a routed
// query builds it, the catalog reports it, and a refresh publishes the
// new Snapshot with an empty index.
func TestRoutingIndexIsPerGeneration(t *testing.T) {
	root := dataset(t, 6)
	ts := start(t, true, positional(root))
	r := ts.do("POST", "/api/query/evidence", map[string]any{"sql": "SELECT session_id, step_count FROM runs WHERE session_id = 's4a'"}).ok(t)
	routing := r.json["source_routing"].(map[string]any)
	if routing["outcome"] != "applied" || routing["sources"].(float64) != 1 || fmt.Sprint(r.json["rows"]) != "[[s4a 2]]" {
		t.Fatalf("routed point query: %s", r.body)
	}
	pruning := r.json["pruning"].([]any)[0].(map[string]any)
	if pruning["considered"].(float64) != 6 || len(pruning["resolved"].([]any)) != 1 {
		t.Fatalf("the routed query reads one source of 6: %v", pruning)
	}
	acc := ts.get("/api/catalog").ok(t).json["acceleration"].(map[string]any)
	if layers := acc["layers"].([]any); len(layers) != 1 || layers[0].(map[string]any)["rows"].(float64) != 12 {
		t.Fatalf("acceleration after a routed query: %v", acc)
	}
	if r := ts.query("SELECT session_id FROM runs WHERE _file_ = 'd0/f004.jsonl' AND session_id = 's4a'", nil).ok(t); r.json["source_routing"].(map[string]any)["outcome"] != "already_pruned" {
		t.Fatalf("an explicit _file_ predicate is kept: %s", r.body)
	}
	if r := ts.query("SELECT session_id FROM runs WHERE session_id = 's4a'", map[string]any{"routing": false}).ok(t); fmt.Sprint(r.json["rows"]) != "[[s4a]]" {
		t.Fatalf("unrouted: %s", r.body)
	}
	writeFiles(t, root, map[string]string{"d0/x.jsonl": chat("s4a", "m", 0) + "\n"})
	ts.do("POST", "/api/catalog", nil).ok(t)
	if acc := ts.get("/api/catalog").ok(t).json["acceleration"].(map[string]any); len(acc["layers"].([]any)) != 0 {
		t.Fatalf("the new generation starts with an empty index: %v", acc)
	}
	// The new generation's index sees the new source holding s4a too.
	r = ts.query("SELECT _file_ FROM runs WHERE session_id = 's4a' ORDER BY 1", nil).ok(t)
	if fmt.Sprint(r.json["rows"]) != "[[d0/f004.jsonl] [d0/x.jsonl]]" || r.json["source_routing"].(map[string]any)["sources"].(float64) != 2 {
		t.Fatalf("after refresh: %s", r.body)
	}
}

// TestStorylineAgentsFollowParentLinks: the agents of a Storyline are its
// parent/child tree in the source, not every Storyline sharing its run_id
// (the samples of an evaluation, the lines of a chat file).
func TestStorylineAgentsFollowParentLinks(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"chats.jsonl": chat("s1", "m", 1) + "\n" + chat("s2", "m", 1) + "\n",
		"team.trajectory.json": `{"schema_version": "ATIF-v1.7", "session_id": "team", "trajectory_id": "lead", "agent": {"name": "lead"},
  "steps": [{"step_id": 1, "source": "user", "message": "go"},
    {"step_id": 2, "source": "agent", "message": "delegating",
     "tool_calls": [{"tool_call_id": "w", "function_name": "worker", "arguments": {}}],
     "observation": {"results": [{"source_call_id": "w", "content": "ok", "subagent_trajectory_ref": [{"trajectory_id": "worker-1", "session_id": "team"}]}]}}],
  "subagent_trajectories": [{"schema_version": "ATIF-v1.7", "session_id": "team", "trajectory_id": "worker-1", "agent": {"name": "worker"},
    "steps": [{"step_id": 1, "source": "user", "message": "inspect"}]}]}`,
	})
	ts := start(t, true, positional(root))
	agents := func(q string) []string {
		t.Helper()
		return agentIDs(t, ts, q)
	}
	// The samples of an Inspect evaluation share a run_id.
	evals := start(t, true, positional(filepath.Join(testutil.SamplesDir(t), "inspect")))
	if got := agentIDs(t, evals, "file=docent_intercode-ctf_gpt-4o_subset.eval&session_id=15/epoch-1"); !slices.Equal(got, []string{"15/epoch-1"}) {
		t.Errorf("agents of an Inspect sample: %v, want only itself", got)
	}
	if got := agents("file=chats.jsonl&session_id=s1"); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("agents of a lone chat: %v, want only itself", got)
	}
	team := ts.get("/api/runs?sort=session_id").ok(t)
	var sub string
	for _, r := range team.json["runs"].([]any) {
		if m := r.(map[string]any); m["parent_session_id"] == "team" {
			sub = m["session_id"].(string)
		}
	}
	if sub == "" {
		t.Fatalf("no subagent run listed: %s", team.body)
	}
	want := []string{"team", sub}
	if got := agents("file=team.trajectory.json&session_id=team"); !slices.Equal(got, want) {
		t.Errorf("agents of the lead: %v, want %v", got, want)
	}
	if got := agents("file=team.trajectory.json&session_id=" + url.QueryEscape(sub)); !slices.Equal(got, want) {
		t.Errorf("agents of the worker: %v, want %v", got, want)
	}
}

// agentIDs are the session ids of GET /api/storyline's agents.
func agentIDs(t *testing.T, ts *testServer, q string) []string {
	t.Helper()
	var ids []string
	for _, a := range ts.get("/api/storyline?" + q).ok(t).json["agents"].([]any) {
		ids = append(ids, a.(map[string]any)["key"].(map[string]any)["session_id"].(string))
	}
	return ids
}

// TestStorylineLinksAcrossFiles: a Claude Code subagent written to its own
// file (<session>/subagents/agent-*.jsonl) links to its parent session in
// the main file, and the parent lists it among its subagents.
func TestStorylineLinksAcrossFiles(t *testing.T) {
	const sid = "c4d5e6f7-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
	fixtures := filepath.Join(testutil.RepoRoot(t), "internal", "format", "claudecode", "testdata")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	root := t.TempDir()
	agentFile := sid + "/subagents/agent-a1b2c3d.jsonl"
	writeFiles(t, root, map[string]string{
		sid + ".jsonl": strings.ReplaceAll(read("session-basic.jsonl"), "7f3c2a1e-5b6d-4c8e-9a0f-1e2d3c4b5a69", sid),
		agentFile:      read("agent-a1b2c3d.jsonl"),
	})
	ts := start(t, true, positional(root))
	child := ts.get("/api/storyline?file=" + url.QueryEscape(agentFile) + "&session_id=" + url.QueryEscape(sid+"/a1b2c3d")).ok(t)
	parent, _ := child.json["links"].(map[string]any)["parent"].(map[string]any)
	if parent["_file_"] != sid+".jsonl" || parent["session_id"] != sid {
		t.Errorf("the subagent's parent link: %v", child.json["links"])
	}
	main := ts.get("/api/storyline?file=" + url.QueryEscape(sid+".jsonl") + "&session_id=" + sid).ok(t)
	found := false
	for _, l := range main.json["links"].(map[string]any)["subagents"].([]any) {
		k, _ := l.(map[string]any)["key"].(map[string]any)
		found = found || (k["_file_"] == agentFile && k["session_id"] == sid+"/a1b2c3d")
	}
	if !found {
		t.Errorf("the parent does not list its subagent in another file: %v", main.json["links"])
	}
	if got := agentIDs(t, ts, "file="+url.QueryEscape(sid+".jsonl")+"&session_id="+sid); !slices.Equal(got, []string{sid, sid + "/a1b2c3d"}) {
		t.Errorf("the parent's agents: %v", got)
	}
}

// TestSchemaDescribesEveryColumn: GET /api/schema gives every column of
// every row relation with its type and a description, from the docs.
func TestSchemaDescribesEveryColumn(t *testing.T) {
	ts := start(t, true, positional(t.TempDir()))
	var got struct {
		Relations []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Columns     []struct {
				Name, Type, Description string
			} `json:"columns"`
		} `json:"relations"`
	}
	if err := json.Unmarshal(ts.get("/api/schema").ok(t).body, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rel := range got.Relations {
		names = append(names, rel.Name)
		if rel.Description == "" || len(rel.Columns) == 0 {
			t.Errorf("%s: description %q, %d columns", rel.Name, rel.Description, len(rel.Columns))
		}
		cols := map[string]string{}
		for _, c := range rel.Columns {
			if c.Type == "" || c.Description == "" || strings.ContainsAny(c.Description, "`") {
				t.Errorf("%s.%s: type %q, description %q", rel.Name, c.Name, c.Type, c.Description)
			}
			cols[c.Name] = strings.Fields(c.Type)[0] // "VARCHAR (JSON)": a JSON document in text
		}
		for _, c := range model.Schemas[rel.Name] {
			if cols[c.Name] != c.SQLType {
				t.Errorf("%s.%s: described as %q, the schema says %s", rel.Name, c.Name, cols[c.Name], c.SQLType)
			}
		}
	}
	if want := "runs,steps,tool_calls,events,sources,projections"; strings.Join(names, ",") != want {
		t.Errorf("relations %v, want %s", names, want)
	}
}
