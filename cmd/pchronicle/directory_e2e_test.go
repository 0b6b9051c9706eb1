package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
	"github.com/pchronicle/pchronicle/internal/server"
	"github.com/pchronicle/pchronicle/internal/testutil"
	"github.com/pchronicle/pchronicle/internal/worker"
)

// The end-to-end tests of the Directory run the real binary: a parent
// `pchronicle serve --catalog-config` on a free loopback port, whose data
// plane starts real `serve --catalog-query-worker` children of that binary.

// parent is a running `serve --catalog-config`.
type parent struct {
	url  string
	cmd  *exec.Cmd
	logs *testutil.SyncBuffer
	// secrets must never appear in its log (checked when the test ends).
	secrets []string
}

// startParent starts the real binary serving the Directory config at path,
// with env added to the test's environment, and waits until it listens.
// When the test ends it is interrupted, and its log is checked for every
// string in secrets (and those added to p.secrets later).
func startParent(t *testing.T, path string, env, secrets []string, flags ...string) *parent {
	t.Helper()
	args := append([]string{"serve", "--catalog-config", path, "--listen", "127.0.0.1:0"}, flags...)
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), env...)
	p := &parent{cmd: cmd, logs: &testutil.SyncBuffer{}, secrets: secrets}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Error("serve did not stop within 30 s of SIGINT")
		}
		logs := p.logs.String()
		for _, s := range p.secrets {
			if strings.Contains(logs, s) {
				t.Errorf("the parent's log holds a key (%.4s…):\n%s", s, logs)
			}
		}
	})
	const serving = "pchronicle serving "
	p.waitLog(t, serving, 1)
	for deadline := time.Now().Add(10 * time.Second); p.url == ""; time.Sleep(10 * time.Millisecond) {
		logs := p.logs.String()
		if u, _, whole := strings.Cut(logs[strings.Index(logs, serving)+len(serving):], "\n"); whole {
			p.url = u
		} else if time.Now().After(deadline) {
			t.Fatalf("no whole line after %q:\n%s", serving, logs)
		}
	}
	return p
}

// waitLog waits until the parent's log holds text at least n times.
func (p *parent) waitLog(t *testing.T, text string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.logs.String(), text) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the parent never logged %q %d times:\n%s", text, n, p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answer is one HTTP answer of the parent.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends one request; keys are header name/value pairs.
func (p *parent) do(t *testing.T, method, path, body string, keys ...string) answer {
	t.Helper()
	a, err := p.send(method, path, body, keys...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// send is do for other goroutines than the test's.
func (p *parent) send(method, path, body string, keys ...string) (answer, error) {
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	for i := 0; i+1 < len(keys); i += 2 {
		req.Header.Add(keys[i], keys[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: the body was cut: %w", method, path, err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}, nil
}

// keysOf returns the catalog headers of a user.
func keysOf(ak, sk string) []string {
	return []string{directory.HeaderAccessKey, ak, directory.HeaderSecretKey, sk}
}

// examples returns the bundled example Dataset.
func examples(t *testing.T) string {
	return filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
}

// matrixDirectory is the Directory of the auth matrix: three local
// Datasets from the examples — pub (public, 3 Storylines), alice_only and
// bob_only (1 each) — and the grants of users alice and bob. extraGrants
// are appended as written.
func matrixDirectory(ex, extraGrants string, public bool) string {
	c := fmt.Sprintf(`[meta]
version = 1
revision = 1

[users.alice]
access_key = "pcak_alice"
secret_key = "alice-secret-0123456789"

[users.bob]
access_key = "pcak_bob"
secret_key = "bob-secret-0123456789"

[datasets.pub]
uri = %q

[datasets.alice_only]
uri = %q

[datasets.bob_only]
uri = %q

[[grants]]
user = "alice"
dataset = "alice_only"
`, filepath.Join(ex, "openai"), filepath.Join(ex, "atif"), filepath.Join(ex, "codex"))
	if public {
		c += "\n[[grants]]\nuser = \"*\"\ndataset = \"pub\"\n"
	}
	return c + extraGrants
}

const bobGrant = "\n[[grants]]\nuser = \"bob\"\ndataset = \"bob_only\"\n"

var (
	alice = keysOf("pcak_alice", "alice-secret-0123456789")
	bob   = keysOf("pcak_bob", "bob-secret-0123456789")
)

// summarize reduces an answer to what a row of the matrix checks: the error
// code of an error (after checking the error body's shape), otherwise a
// digest of the route's answer.
func summarize(t *testing.T, path string, a answer) string {
	t.Helper()
	// The parent's own answers and its workers' carry the API's headers.
	if err := server.CheckSecurityHeaders(a.header); err != nil {
		t.Errorf("%s (%d): %v", path, a.status, err)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("Content-Type %q", ct)
	}
	if a.status >= 400 {
		var e directory.ErrorBody
		if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.Code == "" || e.Message == "" || e.RequestID == "" {
			t.Errorf("error body %q lacks code, message or request_id", a.body)
		}
		if e.RequestID != a.header.Get("X-Request-Id") {
			t.Errorf("request_id %q, header %q", e.RequestID, a.header.Get("X-Request-Id"))
		}
		return e.Code
	}
	var v struct {
		Status   string `json:"status"`
		User     string `json:"user"`
		Name     string `json:"name"`
		Datasets []struct {
			Name string `json:"name"`
		} `json:"datasets"`
		Runs []struct {
			Dataset string `json:"dataset"`
		} `json:"runs"`
	}
	if strings.HasPrefix(a.header.Get("Content-Type"), "text/csv") {
		return strings.ReplaceAll(strings.TrimSpace(a.body), "\n", ";")
	}
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		t.Fatalf("%s: %v: %s", path, err, a.body)
	}
	var parts []string
	switch {
	case strings.HasPrefix(path, "/api/runs"):
		for _, r := range v.Runs {
			parts = append(parts, r.Dataset)
		}
	case v.Status != "":
		return v.Status
	case v.Name != "": // a ticket
		return "ticket " + v.Name
	default: // a Dataset list (the Directory's or the worker's catalog)
		for _, d := range v.Datasets {
			parts = append(parts, d.Name)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// matrixRow is one request of the auth matrix and its exact answer.
type matrixRow struct {
	name   string
	method string
	path   string
	body   string
	keys   []string
	status int
	want   string // see summarize
}

func runMatrix(t *testing.T, p *parent, rows []matrixRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			a := p.do(t, r.method, r.path, r.body, r.keys...)
			if a.status != r.status {
				t.Fatalf("%s %s: status %d, want %d: %s", r.method, r.path, a.status, r.status, a.body)
			}
			if got := summarize(t, r.path, a); got != r.want {
				t.Errorf("%s %s: got %q, want %q", r.method, r.path, got, r.want)
			}
		})
	}
}

const countSQL = `{"sql":"SELECT count(*) AS n FROM %s.runs","format":"csv"}`

// TestDirectoryAuthMatrixThroughServe checks the exact answer of every kind
// of caller through the real parent: its own routes (probes, the Directory
// list and tickets, 404 and 405), and the data plane, whose answers come
// from real workers. Then users and grants change under the running parent:
// a revoke, a new user, a broken edit, a Dataset edit (both refused with the
// last valid ACL kept), and a valid edit that leaves a user with nothing.
func TestDirectoryAuthMatrixThroughServe(t *testing.T) {
	ex := examples(t)
	path := filepath.Join(t.TempDir(), "catalog.toml")
	if err := os.WriteFile(path, []byte(matrixDirectory(ex, bobGrant, true)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startParent(t, path, nil, []string{"pcak_alice", "alice-secret", "pcak_bob", "bob-secret", "pcak_carol"})
	list, ticket := directory.DatasetsPath, directory.DatasetsPath+"/"
	blank := keysOf(" ", " ")
	wrongSecret := keysOf("pcak_alice", "bob-secret-0123456789")
	unknownUser := keysOf("pcak_carol", "alice-secret-0123456789")
	akOnly := []string{directory.HeaderAccessKey, "pcak_alice"}
	skOnly := []string{directory.HeaderSecretKey, "alice-secret-0123456789"}
	// Outside /api the parent serves the Explorer, in Directory mode.
	if a := p.do(t, "GET", "/runs", "", alice...); a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(a.body, `<meta name="pchronicle-mode" content="directory">`) {
		t.Errorf("GET /runs: %d %s %.200s", a.status, a.header.Get("Content-Type"), a.body)
	}
	runMatrix(t, p, []matrixRow{
		// The parent's own routes.
		{"health", "GET", "/health", "", nil, 200, "ok"},
		{"ready", "GET", "/ready", "", nil, 200, "ready"},
		{"health, POST", "POST", "/health", "", nil, 405, "method_not_allowed"},
		{"list, no headers", "GET", list, "", nil, 200, "pub"},
		{"list, alice", "GET", list, "", alice, 200, "alice_only,pub"},
		{"list, bob", "GET", list, "", bob, 200, "bob_only,pub"},
		{"list, access key only", "GET", list, "", akOnly, 401, "unauthorized"},
		{"list, secret key only", "GET", list, "", skOnly, 401, "unauthorized"},
		{"list, blank keys", "GET", list, "", blank, 401, "unauthorized"},
		{"list, wrong secret", "GET", list, "", wrongSecret, 401, "unauthorized"},
		{"list, unknown user", "GET", list, "", unknownUser, 401, "unauthorized"},
		{"list, POST", "POST", list, "", alice, 405, "method_not_allowed"},
		{"ticket, granted", "GET", ticket + "alice_only", "", alice, 200, "ticket alice_only"},
		{"ticket, public", "GET", ticket + "pub", "", bob, 200, "ticket pub"},
		{"ticket, public local, no headers", "GET", ticket + "pub", "", nil, 200, "ticket pub"},
		{"ticket, not granted", "GET", ticket + "bob_only", "", alice, 404, "not_found"},
		{"ticket, unknown dataset", "GET", ticket + "nope", "", alice, 404, "not_found"},
		{"ticket, not granted, no headers", "GET", ticket + "alice_only", "", nil, 401, "unauthorized"},
		{"ticket, wrong secret", "GET", ticket + "pub", "", wrongSecret, 401, "unauthorized"},

		// The data plane: refusals by the parent, answers by workers.
		{"catalog, no headers: public only", "GET", "/api/catalog", "", nil, 200, "pub"},
		{"catalog, alice", "GET", "/api/catalog", "", alice, 200, "alice_only,pub"},
		{"catalog, access key only", "GET", "/api/catalog", "", akOnly, 401, "unauthorized"},
		{"catalog, blank keys", "GET", "/api/catalog", "", blank, 401, "unauthorized"},
		{"catalog, wrong secret", "GET", "/api/catalog", "", wrongSecret, 401, "unauthorized"},
		{"catalog, unknown user", "GET", "/api/catalog", "", unknownUser, 401, "unauthorized"},
		{"runs, alice", "GET", "/api/runs?limit=50", "", alice, 200, "alice_only,pub,pub,pub"},
		{"runs, bob", "GET", "/api/runs?limit=50", "", bob, 200, "bob_only,pub,pub,pub"},
		{"runs, dataset= granted", "GET", "/api/runs?dataset=alice_only", "", alice, 200, "alice_only"},
		{"runs, dataset= not granted", "GET", "/api/runs?dataset=bob_only", "", alice, 404, "not_found"},
		{"runs, dataset= unknown", "GET", "/api/runs?dataset=nope", "", alice, 404, "not_found"},
		{"runs, dataset= twice", "GET", "/api/runs?dataset=pub&dataset=alice_only", "", alice, 400, "bad_request"},
		{"runs, dataset= public, no headers", "GET", "/api/runs?dataset=pub", "", nil, 200, "pub,pub,pub"},
		{"runs, dataset= private, no headers", "GET", "/api/runs?dataset=alice_only", "", nil, 401, "unauthorized"},
		{"query, granted", "POST", "/api/query", fmt.Sprintf(countSQL, "alice_only"), alice, 200, "n;1"},
		{"query, public, no headers", "POST", "/api/query", fmt.Sprintf(countSQL, "pub"), nil, 200, "n;3"},
		{"query, not granted: the worker has no such Dataset", "POST", "/api/query", fmt.Sprintf(countSQL, "bob_only"), alice, 400, "query_rejected"},
		{"query, wrong secret", "POST", "/api/query", fmt.Sprintf(countSQL, "alice_only"), wrongSecret, 401, "unauthorized"},
		{"the worker's 405", "DELETE", "/api/runs", "", alice, 405, "method_not_allowed"},
		{"the worker's 404", "GET", "/api/nope", "", alice, 404, "not_found"},
	})
	if t.Failed() {
		return
	}
	crossWorkerState(t, p)

	// Hot reload: each edit is picked up (or refused) within a poll or two.
	reloaded := "catalog config reloaded"
	refused := "catalog config not reloaded; keeping the last valid ACL"
	if _, stderr, code := testutil.Run(t, "serve", "catalog", "revoke", "--catalog-config", path, "alice", "alice_only"); code != 0 {
		t.Fatalf("revoke: %s", stderr)
	}
	p.waitLog(t, reloaded, 1)
	ak, sk := issueUser(t, path, "carol")
	p.waitLog(t, reloaded, 2)
	carol := keysOf(ak, sk)
	p.secrets = append(p.secrets, ak, sk)
	afterRevoke := []matrixRow{
		{"revoked: list", "GET", list, "", alice, 200, "pub"},
		{"revoked: ticket", "GET", ticket + "alice_only", "", alice, 404, "not_found"},
		{"revoked: dataset=", "GET", "/api/runs?dataset=alice_only", "", alice, 404, "not_found"},
		{"revoked: catalog", "GET", "/api/catalog", "", alice, 200, "pub"},
		{"new user: list", "GET", list, "", carol, 200, "pub"},
		{"new user: runs", "GET", "/api/runs", "", carol, 200, "pub,pub,pub"},
		{"untouched: bob", "GET", "/api/catalog", "", bob, 200, "bob_only,pub"},
	}
	runMatrix(t, p, afterRevoke)

	// A broken edit, then one that changes a Dataset: both refused, the
	// ACL after the revoke keeps serving.
	if err := os.WriteFile(path, []byte("[meta]\nversion = 1\n[users.alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, refused, 1)
	runMatrix(t, p, afterRevoke)
	moved := strings.Replace(matrixDirectory(ex, bobGrant, true), filepath.Join(ex, "codex"), filepath.Join(ex, "openai"), 1)
	if err := os.WriteFile(path, []byte(moved), 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "restart serve to apply them", 1)
	runMatrix(t, p, afterRevoke)

	// A valid edit: no public Dataset, bob's grant gone. Bob has nothing
	// left (404, never an empty server); anonymous callers have nothing.
	if err := os.WriteFile(path, []byte(matrixDirectory(ex, "", false)), 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, reloaded, 3)
	runMatrix(t, p, []matrixRow{
		{"nothing granted: list", "GET", list, "", bob, 200, ""},
		{"nothing granted: data plane", "GET", "/api/catalog", "", bob, 404, "not_found"},
		{"nothing public: list", "GET", list, "", nil, 200, ""},
		{"nothing public: data plane", "GET", "/api/catalog", "", nil, 401, "unauthorized"},
		{"granted again: alice", "GET", "/api/catalog", "", alice, 200, "alice_only"},
		{"removed user: carol", "GET", list, "", carol, 401, "unauthorized"},
	})
	if got := strings.Count(p.logs.String(), refused); got != 2 {
		t.Errorf("%d refused reloads logged, want 2 (each refused content once):\n%s", got, p.logs)
	}
}

// crossWorkerState: every request has a worker and a Snapshot of its own,
// but a Snapshot's id depends only on what it pinned, so a cursor from one
// worker pages on in the next, and an ETag answers 304 there.
func crossWorkerState(t *testing.T, p *parent) {
	t.Helper()
	first := p.do(t, "GET", "/api/runs?limit=2", "", alice...)
	var page struct {
		Next string `json:"next_cursor"`
		Runs []struct {
			File string `json:"_file_"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(first.body), &page); first.status != 200 || err != nil || page.Next == "" || len(page.Runs) != 2 {
		t.Fatalf("first page: %d %s", first.status, first.body)
	}
	seen := len(page.Runs)
	for cursor := page.Next; cursor != ""; {
		a := p.do(t, "GET", "/api/runs?limit=2&cursor="+url.QueryEscape(cursor), "", alice...)
		page.Next = ""
		page.Runs = nil
		if err := json.Unmarshal([]byte(a.body), &page); a.status != 200 || err != nil || len(page.Runs) == 0 {
			t.Fatalf("next page: %d %s", a.status, a.body)
		}
		seen += len(page.Runs)
		cursor = page.Next
	}
	if seen != 4 {
		t.Errorf("paging through alice's runs saw %d, want 4", seen)
	}
	etag := first.header.Get("ETag")
	if a := p.do(t, "GET", "/api/runs?limit=2", "", append([]string{"If-None-Match", etag}, alice...)...); etag == "" || a.status != 304 || a.body != "" {
		t.Errorf("If-None-Match %q: %d %q", etag, a.status, a.body)
	}
}

// issueUser runs `serve catalog issue` and returns the keys it printed.
func issueUser(t *testing.T, path, name string) (ak, sk string) {
	t.Helper()
	stdout, stderr, code := testutil.Run(t, "serve", "catalog", "issue", "--catalog-config", path, name)
	if code != 0 {
		t.Fatalf("issue %s: %s", name, stderr)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "access_key: "); ok {
			ak = v
		}
		if v, ok := strings.CutPrefix(line, "secret_key: "); ok {
			sk = v
		}
	}
	if ak == "" || sk == "" {
		t.Fatalf("issue printed no keys: %q", stdout)
	}
	return ak, sk
}

// putExamples uploads the bundled examples under prefix of bucket.
func putExamples(t *testing.T, s3 *testservers.Server, bucket, prefix string) {
	t.Helper()
	ctx := context.Background()
	b, _, err := objstore.Open(ctx, "s3://"+bucket, s3.S3Config())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ex := examples(t)
	err = filepath.WalkDir(ex, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ex, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = b.Put(ctx, prefix+filepath.ToSlash(rel), bytes.NewReader(data), int64(len(data)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// holdingProxy forwards to an S3 server, holding the first request until
// release is called, and records the access key of every request's
// signature.
type holdingProxy struct {
	url     string
	held    chan struct{} // closed when the first request arrived
	release func()
	mu      sync.Mutex
	keys    map[string]bool
}

func newHoldingProxy(t *testing.T, endpoint string) *holdingProxy {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	hp := &holdingProxy{held: make(chan struct{}), keys: map[string]bool{}}
	gate := make(chan struct{})
	var first, once sync.Once
	hp.release = func() { once.Do(func() { close(gate) }) }
	// The signature covers the Host header: keep the one the client signed.
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.Out.Host = pr.In.Host },
		ErrorLog: log.New(io.Discard, "", 0)} // a request held past its client's timeout fails when released
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
			ak, _, _ := strings.Cut(cred, "/")
			hp.mu.Lock()
			hp.keys[ak] = true
			hp.mu.Unlock()
		}
		first.Do(func() { close(hp.held); <-gate })
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(hp.release) // before srv.Close, which waits for the held request
	hp.url = srv.URL
	return hp
}

// children returns the pids of the live processes whose parent is pid.
func children(t *testing.T, pid int) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && fields[0] != "Z" {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			out = append(out, child)
		}
	}
	return out
}

// procStrings reads a NUL-separated /proc file (environ, cmdline).
func procStrings(t *testing.T, pid int, name string) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// checkWorkerEnv fails t if a worker's environment holds a cloud or
// catalog variable, or any of secrets, or lost the ordinary environment.
func checkWorkerEnv(t *testing.T, what string, env, secrets []string) {
	t.Helper()
	hasPath := false
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		hasPath = hasPath || name == "PATH"
		for _, prefix := range []string{"AWS_", "AZURE_", "GOOGLE_", "PCHRONICLE_CATALOG_"} {
			if strings.HasPrefix(name, prefix) {
				t.Errorf("%s: the environment holds %s", what, name)
			}
		}
		for _, s := range secrets {
			if strings.Contains(kv, s) {
				t.Errorf("%s: the environment holds a key (%.6s…) in %s", what, s, name)
			}
		}
	}
	if !hasPath {
		t.Errorf("%s: the ordinary environment (PATH) is gone: %q", what, env)
	}
}

// TestDirectoryWorkerProcessHoldsOnlyItsGrant starts the real parent with
// cloud and catalog credentials in its own environment and a Directory
// where alice has one grant (an s3:// Dataset) and bob has others (another
// backend, and a local path). It inspects the real worker processes: a warm
// one waiting for its job, then the same process holding alice's request
// (its S3 listing held by a proxy): /proc/PID/environ, and the exact stdin
// it received.
//
// Reading the stdin of the real binary needs the test hook
// worker.WrapperEnv: the parent starts each worker as a shell script that
// copies its stdin to a file of this test, then execs the real worker (same
// pid, same environment) reading that copy. The product has no code path
// that writes a job anywhere but to the pipe.
func TestDirectoryWorkerProcessHoldsOnlyItsGrant(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the worker's /proc/PID files")
	}
	s3 := testservers.StartS3(t)
	bucket := s3.NewS3Bucket(t, false)
	putExamples(t, s3, bucket, "alice/")
	proxy := newHoldingProxy(t, s3.Endpoint)
	dir := t.TempDir()
	hidden := filepath.Join(dir, "bobs-private-dataset")
	if err := os.Mkdir(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`[meta]
version = 1

[users.alice]
access_key = "pcak_alice_user"
secret_key = "ALICE_USER_SECRET_0123"

[users.bob]
access_key = "pcak_bob_user"
secret_key = "BOB_USER_SECRET_0123"

[datasets.alice_s3]
uri = "s3://%[1]s/alice/"
endpoint = %[2]q
region = %[3]q
access_key = %[4]q
secret_key = %[5]q

[datasets.bob_s3]
uri = "s3://%[1]s/bob/"
endpoint = "http://127.0.0.1:9"
region = "eu-west-3"
access_key = "BOB_BACKEND_AK"
secret_key = "BOB_BACKEND_SK_0123"

[datasets.bob_local]
uri = %[6]q

[[grants]]
user = "alice"
dataset = "alice_s3"

[[grants]]
user = "bob"
dataset = "bob_s3"

[[grants]]
user = "bob"
dataset = "bob_local"
`, bucket, proxy.url, s3.Region, s3.AccessKey, s3.SecretKey, hidden)
	path := filepath.Join(dir, "catalog.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	record := t.TempDir()
	wrapper := filepath.Join(dir, "worker-wrapper.sh")
	script := "#!/bin/sh\n# Copies this worker's stdin (its job) for the test, then becomes the worker reading the copy.\n" +
		"cat > '" + record + "'/$$.stdin\nexec \"$@\" < '" + record + "'/$$.stdin\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	userKeys := []string{"pcak_alice_user", "ALICE_USER_SECRET_0123", "pcak_bob_user", "BOB_USER_SECRET_0123"}
	bobs := []string{"BOB_BACKEND_AK", "BOB_BACKEND_SK_0123", "bob_s3", "bob_local", hidden, "eu-west-3", "127.0.0.1:9\""}
	parentEnv := []string{"AWS_ACCESS_KEY_ID=PARENT_AWS_AK", "AWS_SECRET_ACCESS_KEY=PARENT_AWS_SK", "AWS_PROFILE=parent",
		"AZURE_STORAGE_KEY=PARENT_AZURE_KEY", "GOOGLE_APPLICATION_CREDENTIALS=/parent/gcs.json",
		"PCHRONICLE_CATALOG_SECRET_KEY=PARENT_CATALOG_SK", worker.WrapperEnv + "=" + wrapper}
	parentSecrets := []string{"PARENT_AWS_AK", "PARENT_AWS_SK", "PARENT_AZURE_KEY", "/parent/gcs.json", "PARENT_CATALOG_SK"}
	// Every key of the Directory, alice's backend keys included: those
	// travel on stdin into the Dataset's client settings, never the
	// environment.
	everyKey := append(append([]string{s3.AccessKey, s3.SecretKey, "BOB_BACKEND_AK", "BOB_BACKEND_SK_0123"}, userKeys...), parentSecrets...)
	p := startParent(t, path, parentEnv, append([]string{s3.SecretKey, "BOB_BACKEND_SK_0123"}, userKeys...), "--warm-workers", "1")

	// The warm worker, before any request: the wrapper shell blocked on
	// its stdin, with the environment the worker will have.
	var warm int
	for deadline := time.Now().Add(30 * time.Second); warm == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no warm worker started")
		}
		if kids := children(t, p.cmd.Process.Pid); len(kids) == 1 {
			warm = kids[0]
		}
	}
	if cmdline := procStrings(t, warm, "cmdline"); !slices.Contains(cmdline, wrapper) || !slices.Contains(cmdline, "--catalog-query-worker") {
		t.Fatalf("the warm worker's command line: %q", cmdline)
	}
	checkWorkerEnv(t, "warm worker", procStrings(t, warm, "environ"), everyKey)

	type sent struct {
		answer
		err error
	}
	answered := make(chan sent, 1)
	go func() {
		a, err := p.send("GET", "/api/runs?limit=50", "", keysOf("pcak_alice_user", "ALICE_USER_SECRET_0123")...)
		answered <- sent{a, err}
	}()
	select {
	case <-proxy.held:
	case a := <-answered:
		t.Fatalf("answered before the worker reached S3: %d %s %v", a.status, a.body, a.err)
	case <-time.After(60 * time.Second):
		t.Fatal("the worker never reached S3")
	}

	// The same process, now the real worker in the middle of alice's
	// request.
	if cmdline := procStrings(t, warm, "cmdline"); cmdline[0] != testutil.Binary(t) || !slices.Equal(cmdline[1:], []string{"serve", "--catalog-query-worker"}) {
		t.Fatalf("the process holding the request is not the worker that was waiting: %q", cmdline)
	}
	checkWorkerEnv(t, "worker mid-request", procStrings(t, warm, "environ"), everyKey)
	stdin, err := os.ReadFile(filepath.Join(record, strconv.Itoa(warm)+".stdin"))
	if err != nil {
		t.Fatal(err)
	}
	var job worker.Job
	if err := json.Unmarshal(stdin, &job); err != nil {
		t.Fatalf("the worker's stdin is not one job: %v", err)
	}
	want := directory.Ticket{Name: "alice_s3", Dataset: directory.Dataset{URI: "s3://" + bucket + "/alice/", Endpoint: proxy.url,
		Region: s3.Region, AccessKey: s3.AccessKey, SecretKey: objstore.Secret(s3.SecretKey)}}
	if len(job.Mounts) != 1 || job.Mounts[0] != want {
		t.Errorf("the job's mounts are %+v, want alice_s3 alone with its backend", job.Mounts)
	}
	if job.Request.Method != "GET" || job.Request.Path != "/api/runs" || job.Request.Query != "limit=50" {
		t.Errorf("the job's request is %+v", job.Request)
	}
	// The normalization cache would hold every other user's rows.
	var opts struct{ Catalog map[string]string }
	if err := json.Unmarshal(job.Options, &opts); err != nil || opts.Catalog["no_cache"] != "true" || opts.Catalog["cache_dir"] != "" {
		t.Errorf("the worker may use a normalization cache: options %s (%v)", job.Options, err)
	}
	for _, s := range append(append(bobs, userKeys...), parentSecrets...) {
		if bytes.Contains(stdin, []byte(s)) {
			t.Errorf("the worker's stdin holds %q", s)
		}
	}
	for name := range job.Request.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-catalog-") {
			t.Errorf("the job's request carries %s", name)
		}
	}

	proxy.release()
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.status != 200 || strings.Count(a.body, `"dataset":"alice_s3"`) != 5 {
		t.Fatalf("alice's runs: %d %s", a.status, a.body)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if len(proxy.keys) != 1 || !proxy.keys[s3.AccessKey] {
		t.Errorf("S3 requests were signed with %v, want alice_s3's backend key only", proxy.keys)
	}
}

// TestDirectoryExampleSequence runs the example of docs/directory.md with
// the real binary against the real S3 test server (versitygw): the
// operator registers an s3:// Dataset with its backend keys, issues a user
// and grants it; `serve --catalog-config` serves the Directory; the user
// pins it with their own keys, queries @team/prod (ticket exchange, then
// the CLI opens the bucket itself), and the Web data plane answers the same
// user through a worker over the same bucket. The user's config never holds
// a backend setting, and no log holds a key.
func TestDirectoryExampleSequence(t *testing.T) {
	s3 := testservers.StartS3(t)
	bucket := s3.NewS3Bucket(t, true)
	putExamples(t, s3, bucket, "prod/")
	dir := t.TempDir()
	catalog, userConfig := filepath.Join(dir, "catalog.toml"), filepath.Join(dir, "config.toml")
	must := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := testutil.Run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if strings.Contains(stdout+stderr, s3.SecretKey) {
			t.Fatalf("%v printed the backend secret", args)
		}
		return stdout
	}

	// The operator's side.
	must("serve", "catalog", "dataset", "add", "--catalog-config", catalog, "prod", "--uri", "s3://"+bucket+"/prod/",
		"--endpoint", s3.Endpoint, "--region", s3.Region, "--access-key", s3.AccessKey, "--secret-key", s3.SecretKey)
	ak, sk := issueUser(t, catalog, "alice")
	must("serve", "catalog", "grant", "--catalog-config", catalog, "alice", "prod")
	p := startParent(t, catalog, nil, []string{s3.SecretKey, ak, sk})

	// The user's side.
	locator := "catalog://" + strings.TrimPrefix(p.url, "http://")
	must("dataset", "pin", "-c", userConfig, "team", locator, "--ak", ak, "--sk", sk)
	if got := must("query", "-c", userConfig, "@team/prod", "SELECT 1", "--format", "csv"); got != "1\n1\n" {
		t.Errorf("SELECT 1: %q", got)
	}
	const sql = "SELECT count(*) AS runs, sum(step_count) AS steps FROM runs"
	got := must("query", "-c", userConfig, "@team/prod", sql, "--format", "csv")
	if want := must("query", examples(t), sql, "--format", "csv"); got != want || !strings.HasPrefix(got, "runs,steps\n5,") {
		t.Errorf("@team/prod:\n%s\nthe same files locally:\n%s", got, want)
	}
	// A sub-path of the Dataset, through --mount.
	if got := must("query", "-c", userConfig, "--mount", "p=@team/prod/atif", "SELECT count(*) AS n FROM p.runs", "--format", "csv"); got != "n\n1\n" {
		t.Errorf("@team/prod/atif: %q", got)
	}
	user, err := os.ReadFile(userConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{s3.AccessKey, s3.SecretKey, s3.Endpoint, bucket} {
		if strings.Contains(string(user), s) {
			t.Errorf("the user config holds a backend setting (%q):\n%s", s, user)
		}
	}

	// The Web side: the same user's keys on the data plane, answered by a
	// worker that opens the bucket.
	keys := keysOf(ak, sk)
	if a := p.do(t, "POST", "/api/query", `{"sql":"SELECT count(*) AS runs, sum(step_count) AS steps FROM prod.runs","format":"csv"}`, keys...); a.status != 200 || a.body != got {
		t.Errorf("POST /api/query: %d %q, want %q", a.status, a.body, got)
	}
	if a := p.do(t, "GET", "/api/runs?dataset=prod&limit=50", "", keys...); a.status != 200 || strings.Count(a.body, `"dataset":"prod"`) != 5 {
		t.Errorf("GET /api/runs: %d %s", a.status, a.body)
	}
	if a := p.do(t, "GET", "/api/runs", ""); a.status != 401 {
		t.Errorf("GET /api/runs without keys: %d %s", a.status, a.body)
	}
}

// TestDirectoryWorkerTimeout: a worker that does not answer within
// --worker-timeout (its S3 listing is held) is killed, and the caller gets
// 503 unavailable; the job's keys stay out of the log.
func TestDirectoryWorkerTimeout(t *testing.T) {
	s3 := testservers.StartS3(t)
	bucket := s3.NewS3Bucket(t, false)
	proxy := newHoldingProxy(t, s3.Endpoint)
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.toml")
	config := fmt.Sprintf(`[meta]
version = 1

[users.alice]
access_key = "pcak_alice"
secret_key = "alice-secret-0123456789"

[datasets.slow]
uri = "s3://%s/slow/"
endpoint = %q
access_key = %q
secret_key = %q

[[grants]]
user = "alice"
dataset = "slow"
`, bucket, proxy.url, s3.AccessKey, s3.SecretKey)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startParent(t, path, nil, []string{s3.SecretKey, "alice-secret"}, "--worker-timeout", "2s", "--warm-workers", "0")
	start := time.Now()
	a := p.do(t, "GET", "/api/catalog", "", alice...)
	took := time.Since(start)
	if a.status != 503 || summarize(t, "/api/catalog", a) != "unavailable" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	select {
	case <-proxy.held:
	default:
		t.Fatal("the worker never reached S3: the 503 has another cause")
	}
	if took < 2*time.Second || took > 20*time.Second {
		t.Errorf("answered after %v, want the 2 s timeout", took)
	}
	p.waitLog(t, "no complete answer within 2s", 1)
	if kids := children(t, p.cmd.Process.Pid); len(kids) != 0 {
		t.Errorf("worker processes %v are still alive after the timeout", kids)
	}
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// TestDirectoryDescendantsDieWithTheParent: after kill -9 of a Directory
// parent answering a long query, its worker and that worker's DuckDB child
// die too, instead of running until the query's own timeout.
func TestDirectoryDescendantsDieWithTheParent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.toml")
	if err := os.WriteFile(path, []byte(matrixDirectory(examples(t), bobGrant, true)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startParent(t, path, nil, nil, "--warm-workers", "0")
	const long = `{"sql":"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10000000000) SELECT count(*) FROM t","format":"csv"}`
	go p.send("POST", "/api/query?dataset=alice_only", long, alice...)
	var tree []int // the worker, then its children
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if workers := children(t, p.cmd.Process.Pid); len(workers) == 1 {
			if duck := children(t, workers[0]); len(duck) > 0 {
				tree = append(workers, duck...)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker with a DuckDB child appeared:\n%s", p.logs)
		}
	}
	p.cmd.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var left []int
		for _, pid := range tree {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v of %v outlived the killed parent by 10 s", left, tree)
		}
	}
}
