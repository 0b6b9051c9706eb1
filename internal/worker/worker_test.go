package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// helperEnv makes the test binary act as a worker (see TestMain); dumpEnv
// names a directory where that worker records its environment and the exact
// stdin it received, for the isolation tests.
const (
	helperEnv = "PCHRONICLE_WORKER_TEST_HELPER"
	dumpEnv   = "PCHRONICLE_WORKER_TEST_DUMP"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain())
	}
	os.Exit(testutil.RunMain(m))
}

// helperMain is the worker side: Serve with a test-only BuildFunc.
func helperMain() int {
	var stdin io.Reader = os.Stdin
	if dir := os.Getenv(dumpEnv); dir != "" {
		pid := strconv.Itoa(os.Getpid())
		env, _ := json.Marshal(os.Environ())
		os.WriteFile(filepath.Join(dir, pid+".env"), env, 0o600)
		f, err := os.Create(filepath.Join(dir, pid+".stdin"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer f.Close()
		stdin = io.TeeReader(os.Stdin, f)
	}
	if err := Serve(context.Background(), stdin, os.Stdout, echoBuild); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

type buildFailure struct{ status int }

func (e buildFailure) Error() string   { return "cannot open the datasets" }
func (e buildFailure) HTTPStatus() int { return e.status }

// echo is what the /echo route answers: what the worker was given.
type echo struct {
	PID     int
	Mounts  []directory.Ticket
	Options string
	Method  string
	Path    string
	Query   string
	Header  http.Header
	Body    string
}

func echoBuild(ctx context.Context, job Job) (http.Handler, func(), error) {
	if string(job.Options) == `"fail"` {
		return nil, nil, buildFailure{http.StatusServiceUnavailable}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Worker", "yes")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(echo{os.Getpid(), job.Mounts, string(job.Options), r.Method, r.URL.Path, r.URL.RawQuery, r.Header, string(body)})
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range 3 {
			fmt.Fprintf(w, "{\"n\":%d}\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond)
		}
	})
	mux.HandleFunc("/sleep", func(w http.ResponseWriter, r *http.Request) { time.Sleep(time.Minute) })
	mux.HandleFunc("/half", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		time.Sleep(time.Minute)
	})
	mux.HandleFunc("/crash", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(os.Stderr, "worker crashing; key", job.Mounts[0].SecretKey.Reveal())
		os.Exit(3)
	})
	mux.HandleFunc("/litter", func(w http.ResponseWriter, r *http.Request) {
		// What a Snapshot leaves in the temp directory, then a hang.
		path := filepath.Join(os.TempDir(), "pchronicle-snapshot-x", "rows.parquet")
		os.MkdirAll(filepath.Dir(path), 0o700)
		os.WriteFile(path, []byte("normalized rows of the caller"), 0o600)
		w.Header().Set("X-Litter", path)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(time.Minute)
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>hi</html>") })
	return mux, func() {}, nil
}

// spawner starts the test binary as the worker.
func spawner(t testing.TB, extraEnv ...string) (*Spawner, *bytes.Buffer) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	s := &Spawner{
		Path: exe, Args: []string{"-test.run=^$"},
		Env:     append(append(os.Environ(), helperEnv+"=1"), extraEnv...),
		Timeout: 10 * time.Second,
		Log:     slog.New(slog.NewTextHandler(logs, nil)), // the handler serializes its writes
	}
	t.Cleanup(s.Close)
	return s, logs
}

var s3Ticket = directory.Ticket{Name: "prod", Dataset: directory.Dataset{URI: "s3://prod/", Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", AccessKey: "PROD_AK_123", SecretKey: "PROD_SK_0123456789"}}

func runJob(t *testing.T, s *Spawner, job Job) (Head, string, error) {
	t.Helper()
	res, err := s.Run(context.Background(), job)
	if err != nil {
		return Head{}, "", err
	}
	body, _ := io.ReadAll(res.Body)
	return res.Head, string(body), res.Body.Close()
}

func TestRoundTrip(t *testing.T) {
	s, _ := spawner(t)
	job := Job{
		RequestID: "req-42",
		Mounts:    []directory.Ticket{s3Ticket, {Name: "local", Dataset: directory.Dataset{URI: "/data/local"}}}, Options: []byte(`{"max_rows":5}`),
		Request: Request{Method: "POST", Path: "/echo", Query: "q=1&dataset=prod", Header: http.Header{"Accept": {"application/json"}}, Body: []byte("SELECT 1")},
	}
	head, body, err := runJob(t, s, job)
	if err != nil {
		t.Fatal(err)
	}
	if head.Status != 201 || head.ContentType != "application/json" || head.Header.Get("X-Worker") != "yes" {
		t.Errorf("head %+v", head)
	}
	var got echo
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got.Method != "POST" || got.Path != "/echo" || got.Query != "q=1&dataset=prod" || got.Body != "SELECT 1" ||
		got.Options != `{"max_rows":5}` || got.Header.Get("Accept") != "application/json" || got.Header.Get("X-Request-Id") != "req-42" {
		t.Errorf("the worker saw %+v", got)
	}
	if len(got.Mounts) != 2 || got.Mounts[0] != s3Ticket || got.Mounts[1].URI != "/data/local" {
		t.Errorf("mounts %+v", got.Mounts)
	}
}

func TestSniffedContentType(t *testing.T) {
	s, _ := spawner(t)
	head, body, err := runJob(t, s, Job{Request: Request{Method: "GET", Path: "/plain"}})
	if err != nil || head.Status != 200 || head.ContentType != "text/html; charset=utf-8" || body != "<html>hi</html>" {
		t.Errorf("%+v %q %v", head, body, err)
	}
}

// TestStreaming: the first NDJSON line reaches the parent while the worker
// is still producing the rest.
func TestStreaming(t *testing.T) {
	s, _ := spawner(t)
	res, err := s.Run(context.Background(), Job{Request: Request{Method: "GET", Path: "/stream"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	br := bufio.NewReader(res.Body)
	first, _ := br.ReadString('\n')
	firstAt := time.Since(start)
	rest, _ := io.ReadAll(br)
	total := time.Since(start)
	if err := res.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if first != "{\"n\":0}\n" || string(rest) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Errorf("body %q %q", first, rest)
	}
	if res.ContentType != "application/x-ndjson" || total < 500*time.Millisecond || firstAt > total-400*time.Millisecond {
		t.Errorf("first line after %v of %v: not streamed", firstAt, total)
	}
}

func TestBuildFailureIsRelayed(t *testing.T) {
	s, _ := spawner(t)
	head, body, err := runJob(t, s, Job{RequestID: "r-9", Options: []byte(`"fail"`), Request: Request{Method: "GET", Path: "/echo"}})
	if err != nil {
		t.Fatal(err) // the answer is complete; only the exit status says 1, which is expected
	}
	want := `{"code":"unavailable","message":"cannot open the datasets","request_id":"r-9"}` + "\n"
	if head.Status != 503 || head.ContentType != "application/json" || body != want {
		t.Errorf("%+v %s", head, body)
	}
}

// TestTimeoutKillsTheWorker: a worker that does not answer in time is
// killed and reported as unavailable; a worker cut off mid-body reports it
// on Close. Neither logs anything of the job.
func TestTimeoutKillsTheWorker(t *testing.T) {
	s, logs := spawner(t)
	s.Timeout = 500 * time.Millisecond
	job := Job{Mounts: []directory.Ticket{s3Ticket}, Request: Request{Method: "GET", Path: "/sleep"}}
	start := time.Now()
	_, _, err := runJob(t, s, job)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no complete answer within 500ms") {
		t.Errorf("sleep: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %v", d)
	}

	job.Request.Path = "/half"
	s.Timeout = 3 * time.Second // room for the start on a loaded machine: the head must arrive
	res, err := s.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if err := res.Body.Close(); !errors.Is(err, ErrUnavailable) || string(body) != "partial" {
		t.Errorf("half: %q %v", body, err)
	}
	for _, secret := range []string{"PROD_AK_123", "PROD_SK_0123456789"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds a key of the job:\n%s", logs)
		}
	}
}

// TestKilledWorkersTempDirIsRemovedAtOnce: what a worker killed at its
// timeout left in its temp directory is gone by the time the run ends,
// and no worker can write into the parent's own temp directory.
func TestKilledWorkersTempDirIsRemovedAtOnce(t *testing.T) {
	s, _ := spawner(t)
	s.Timeout = 3 * time.Second
	res, err := s.Run(context.Background(), Job{Request: Request{Method: "GET", Path: "/litter"}})
	if err != nil {
		t.Fatal(err)
	}
	litter := res.Header.Get("X-Litter")
	if _, err := os.Stat(litter); err != nil || !strings.HasPrefix(litter, os.TempDir()+"/pchronicle-worker-") {
		t.Fatalf("the worker wrote %q (%v), want a file in a temp directory of its own", litter, err)
	}
	io.Copy(io.Discard, res.Body)
	if err := res.Body.Close(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("the worker was not killed: %v", err)
	}
	tmp := filepath.Dir(filepath.Dir(litter))
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the killed worker's temp directory %s is still there (%v)", tmp, err)
	}
}

// TestCrashBeforeAnswer: a worker that dies without a Head is unavailable,
// and what it printed is logged with the job's keys scrubbed.
func TestCrashBeforeAnswer(t *testing.T) {
	s, logs := spawner(t)
	_, _, err := runJob(t, s, Job{RequestID: "r-1", Mounts: []directory.Ticket{s3Ticket}, Request: Request{Method: "GET", Path: "/crash"}})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("crash: %v", err)
	}
	if !strings.Contains(logs.String(), "worker crashing; key [redacted]") || strings.Contains(logs.String(), "PROD_SK") {
		t.Errorf("log:\n%s", logs)
	}
}

func TestContextCancelKills(t *testing.T) {
	s, _ := spawner(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := s.Run(ctx, Job{Request: Request{Method: "GET", Path: "/sleep"}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("cancel: %v", err)
	}
}

// TestWarmWorkersServeOneJobEach: with a warm pool, every job still gets its
// own process, which exits after it.
func TestWarmWorkersServeOneJobEach(t *testing.T) {
	s, _ := spawner(t)
	s.Warm = 2
	s.Prestart()
	pids := map[int]bool{}
	for i := range 5 {
		res, err := s.Run(context.Background(), Job{Mounts: []directory.Ticket{{Name: fmt.Sprintf("d%d", i), Dataset: directory.Dataset{URI: "/d"}}}, Request: Request{Method: "GET", Path: "/echo"}})
		if err != nil {
			t.Fatal(err)
		}
		var got echo
		if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if err := res.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if pids[got.PID] {
			t.Fatalf("process %d served two jobs", got.PID)
		}
		pids[got.PID] = true
		if len(got.Mounts) != 1 || got.Mounts[0].Name != fmt.Sprintf("d%d", i) {
			t.Errorf("job %d saw mounts %+v", i, got.Mounts)
		}
		if st := res.Body.(*body).run.p.cmd.ProcessState; st == nil || !st.Exited() || st.ExitCode() != 0 {
			t.Errorf("worker %d after its job: %v", got.PID, st)
		}
	}
	s.Close()
	s.mu.Lock()
	left := len(s.ready)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d warm workers left after Close", left)
	}
}

func TestEnviron(t *testing.T) {
	got := Environ([]string{"PATH=/bin", "AWS_SECRET_ACCESS_KEY=x", "aws_profile=p", "AZURE_STORAGE_KEY=y", "GOOGLE_APPLICATION_CREDENTIALS=/k",
		"PCHRONICLE_CATALOG_SECRET=z", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=t", "SSL_CERT_FILE=/c", "HOME=/root"})
	if want := "PATH=/bin,SSL_CERT_FILE=/c,HOME=/root"; strings.Join(got, ",") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

func TestSelectMounts(t *testing.T) {
	local := directory.Ticket{Name: "local", Dataset: directory.Dataset{URI: "/data"}}
	sameBackend := s3Ticket
	sameBackend.Name, sameBackend.URI = "prod_b", "s3://prod/b/"
	other := s3Ticket
	other.Name, other.Endpoint = "other", "http://127.0.0.1:9100"
	rekeyed := s3Ticket
	rekeyed.Name, rekeyed.SecretKey = "rekeyed", "OTHER_SK_0123"
	names := func(ts []directory.Ticket) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name    string
		tickets []directory.Ticket
		pick    string
		want    string
		err     string
	}{
		{"none", nil, "", "", "dataset not found"},
		{"local and one backend", []directory.Ticket{local, s3Ticket, sameBackend}, "", "local,prod,prod_b", ""},
		{"two endpoints", []directory.Ticket{local, s3Ticket, other}, "", "", "your datasets use more than one object-store backend; add dataset=NAME to the request to pick one of prod, other"},
		{"two secrets", []directory.Ticket{s3Ticket, rekeyed}, "", "", "pick one of prod, rekeyed"},
		{"picked", []directory.Ticket{local, s3Ticket, other}, "other", "other", ""},
		{"picked local", []directory.Ticket{local, s3Ticket, other}, "local", "local", ""},
		{"picked unknown", []directory.Ticket{local}, "prod", "", "dataset not found"},
	}
	for _, tt := range tests {
		got, err := SelectMounts(tt.tickets, tt.pick)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || names(got) != tt.want {
			t.Errorf("%s: %s %v, want %s", tt.name, names(got), err, tt.want)
		}
	}
}

func TestNewRequestWithholdsCredentials(t *testing.T) {
	r := httptest.NewRequest("POST", "/api/v1/query?x=1", strings.NewReader("body"))
	for _, h := range []string{directory.HeaderAccessKey, directory.HeaderSecretKey, "Authorization", "Cookie", "Connection"} {
		r.Header.Set(h, "v")
	}
	r.Header.Set("Accept", "application/x-ndjson")
	got, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Header) != 1 || got.Header.Get("Accept") != "application/x-ndjson" || string(got.Body) != "body" || got.Query != "x=1" {
		t.Errorf("%+v", got)
	}
	big := httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", MaxBodyBytes+1)))
	if _, err := NewRequest(big); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("big body: %v", err)
	}
}

// TestBoundedWorkers: with MaxRunning workers answering and MaxQueued jobs
// waiting, the next job is refused at once with ErrBusy; a queued job runs
// when a slot frees, and a finished or killed job gives its slot back.
func TestBoundedWorkers(t *testing.T) {
	s, _ := spawner(t)
	s.MaxRunning, s.MaxQueued = 1, 1
	sleep := Job{Request: Request{Method: "GET", Path: "/sleep"}}
	echoJob := Job{Request: Request{Method: "GET", Path: "/echo"}}
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() { _, err := s.Run(ctx, sleep); held <- err }()
	waitFor(t, func(s *Spawner) bool { return len(s.slots) == 1 }, s)

	queued := make(chan error, 1)
	go func() { _, _, err := runJob(t, s, echoJob); queued <- err }()
	waitFor(t, func(s *Spawner) bool { return s.waiting == 1 }, s)
	if _, err := s.Run(context.Background(), echoJob); !errors.Is(err, ErrBusy) {
		t.Fatalf("a job beyond the queue: %v, want ErrBusy", err)
	}
	cancel() // kills the sleeping worker: its slot goes to the queued job
	if err := <-held; !errors.Is(err, ErrUnavailable) {
		t.Errorf("the killed job: %v", err)
	}
	if err := <-queued; err != nil {
		t.Errorf("the queued job: %v", err)
	}
	if _, _, err := runJob(t, s, echoJob); err != nil {
		t.Errorf("a job after both: %v", err)
	}
	waitFor(t, func(s *Spawner) bool { return len(s.slots) == 0 && s.waiting == 0 }, s)
}

// waitFor polls cond under the Spawner's lock.
func waitFor(t *testing.T, cond func(*Spawner) bool, s *Spawner) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		ok := s.slots != nil && cond(s)
		s.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the Spawner never reached the expected state")
		}
	}
}
