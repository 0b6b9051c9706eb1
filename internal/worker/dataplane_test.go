package worker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/directory"
)

// planeConfig: alice has one grant (backend A), bob one (backend B), dave
// two on different backends, carol none; unused (backend C) is granted to
// nobody. Every key is distinct so a leak is attributable.
const planeConfig = `
[meta]
version = 1

[users.alice]
access_key = "pcak_alice_user"
secret_key = "ALICE_USER_SECRET"

[users.bob]
access_key = "pcak_bob_user"
secret_key = "BOB_USER_SECRET"

[users.carol]
access_key = "pcak_carol_user"
secret_key = "CAROL_USER_SECRET"

[users.dave]
access_key = "pcak_dave_user"
secret_key = "DAVE_USER_SECRET"

[datasets.alice_s3]
uri = "s3://team/alice/"
endpoint = "http://127.0.0.1:9001"
access_key = "BACKEND_A_AK"
secret_key = "BACKEND_A_SK"

[datasets.bob_s3]
uri = "s3://team/bob/"
endpoint = "http://127.0.0.1:9002"
access_key = "BACKEND_B_AK"
secret_key = "BACKEND_B_SK"

[datasets.unused]
uri = "s3://other/"
endpoint = "http://127.0.0.1:9003"
access_key = "BACKEND_C_AK"
secret_key = "BACKEND_C_SK"

[[grants]]
user = "alice"
dataset = "alice_s3"

[[grants]]
user = "bob"
dataset = "bob_s3"

[[grants]]
user = "dave"
dataset = "alice_s3"

[[grants]]
user = "dave"
dataset = "bob_s3"
`

var everyKey = []string{
	"pcak_alice_user", "ALICE_USER_SECRET", "pcak_bob_user", "BOB_USER_SECRET", "pcak_carol_user", "CAROL_USER_SECRET",
	"pcak_dave_user", "DAVE_USER_SECRET", "BACKEND_A_AK", "BACKEND_A_SK", "BACKEND_B_AK", "BACKEND_B_SK", "BACKEND_C_AK", "BACKEND_C_SK",
}

func user(name string) []string {
	return []string{directory.HeaderAccessKey, "pcak_" + name + "_user", directory.HeaderSecretKey, strings.ToUpper(name) + "_USER_SECRET"}
}

type plane struct {
	url  string
	dump string
	s    *Spawner
}

func startPlane(t *testing.T, config string) *plane {
	t.Helper()
	c, err := directory.Parse("catalog.toml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	dump := t.TempDir()
	// The parent's own environment carries cloud credentials and a catalog
	// key: none of them may reach a worker.
	s, logs := spawner(t, dumpEnv+"="+dump, "AWS_ACCESS_KEY_ID=PARENT_AWS_AK", "AWS_SECRET_ACCESS_KEY=PARENT_AWS_SK",
		"AZURE_STORAGE_KEY=PARENT_AZ", "PCHRONICLE_CATALOG_SECRET_KEY=PARENT_CATALOG")
	dp := &DataPlane{ACL: directory.NewACL(c), Runner: s, Options: []byte(`{"max_rows":10}`),
		RequestID: func(*http.Request) string { return "req-7" }, Log: s.Log}
	srv := httptest.NewServer(dp)
	t.Cleanup(func() {
		srv.Close()
		for _, k := range everyKey {
			if strings.Contains(logs.String(), k) {
				t.Errorf("the log holds %s:\n%s", k, logs)
			}
		}
	})
	return &plane{url: srv.URL, dump: dump, s: s}
}

func (p *plane) do(t *testing.T, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// dumps returns what every worker started so far recorded: its environment
// and its stdin.
func (p *plane) dumps(t *testing.T) (envs, stdins []string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(p.dump, "*.env"))
	for _, f := range files {
		env, _ := os.ReadFile(f)
		stdin, err := os.ReadFile(strings.TrimSuffix(f, ".env") + ".stdin")
		if err != nil {
			t.Fatal(err)
		}
		envs, stdins = append(envs, string(env)), append(stdins, string(stdin))
	}
	return envs, stdins
}

// TestWorkerHoldsOnlyItsUsersGrant starts the real parent handler and a real
// worker process for a user with one grant, then inspects what that process
// got: its environment and the exact bytes of its stdin.
func TestWorkerHoldsOnlyItsUsersGrant(t *testing.T) {
	p := startPlane(t, planeConfig)
	status, body := p.do(t, "POST", "/echo?q=1", "SELECT 1", user("alice")...)
	if status != 201 {
		t.Fatalf("status %d: %s", status, body)
	}
	envs, stdins := p.dumps(t)
	if len(envs) != 1 {
		t.Fatalf("%d workers started, want 1", len(envs))
	}
	var job Job
	if err := json.Unmarshal([]byte(stdins[0]), &job); err != nil {
		t.Fatalf("stdin is not one job: %v", err)
	}
	if len(job.Mounts) != 1 || job.Mounts[0].Name != "alice_s3" || job.Mounts[0].SecretKey != "BACKEND_A_SK" {
		t.Errorf("mounts %+v, want alice_s3 alone with its backend", job.Mounts)
	}
	if job.Request.Method != "POST" || job.Request.Path != "/echo" || job.Request.Query != "q=1" || string(job.Request.Body) != "SELECT 1" ||
		job.RequestID != "req-7" || string(job.Options) != `{"max_rows":10}` {
		t.Errorf("request %+v", job)
	}
	for _, k := range everyKey {
		allowed := k == "BACKEND_A_AK" || k == "BACKEND_A_SK"
		if strings.Contains(stdins[0], k) != allowed {
			t.Errorf("stdin holds %s: %v, want %v", k, !allowed, allowed)
		}
		if strings.Contains(envs[0], k) {
			t.Errorf("the environment holds %s", k)
		}
	}
	for _, k := range []string{"PARENT_AWS_AK", "PARENT_AWS_SK", "PARENT_AZ", "PARENT_CATALOG", "AWS_", "AZURE_"} {
		if strings.Contains(envs[0], k) || strings.Contains(stdins[0], k) {
			t.Errorf("the worker inherited %s", k)
		}
	}
	if !strings.Contains(envs[0], "PATH=") {
		t.Error("the worker lost the ordinary environment (PATH)")
	}
}

// TestDataPlaneStatuses checks every refusal of the data plane and that a
// refused request never starts a worker.
func TestDataPlaneStatuses(t *testing.T) {
	p := startPlane(t, planeConfig)
	tests := []struct {
		name    string
		path    string
		headers []string
		status  int
		code    string
	}{
		{"no headers, nothing public", "/echo", nil, 401, "unauthorized"},
		{"access key only", "/echo", []string{directory.HeaderAccessKey, "pcak_alice_user"}, 401, "unauthorized"},
		{"blank keys", "/echo", []string{directory.HeaderAccessKey, " ", directory.HeaderSecretKey, " "}, 401, "unauthorized"},
		{"wrong secret", "/echo", []string{directory.HeaderAccessKey, "pcak_alice_user", directory.HeaderSecretKey, "BOB_USER_SECRET"}, 401, "unauthorized"},
		{"unknown user", "/echo", []string{directory.HeaderAccessKey, "pcak_zed", directory.HeaderSecretKey, "x"}, 401, "unauthorized"},
		{"no grants", "/echo", user("carol"), 404, "not_found"},
		{"two backends", "/echo", user("dave"), 400, CodeAmbiguousBackend},
		{"picked an ungranted dataset", "/echo?dataset=unused", user("dave"), 404, "not_found"},
		{"picked twice", "/echo?dataset=alice_s3&dataset=bob_s3", user("dave"), 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := p.do(t, "GET", tt.path, "", tt.headers...)
			var e directory.ErrorBody
			json.Unmarshal([]byte(body), &e)
			if status != tt.status || e.Code != tt.code || e.RequestID != "req-7" {
				t.Errorf("%d %s, want %d %s", status, body, tt.status, tt.code)
			}
		})
	}
	if envs, _ := p.dumps(t); len(envs) != 0 {
		t.Errorf("%d workers started for refused requests", len(envs))
	}

	status, body := p.do(t, "GET", "/echo?dataset=bob_s3", "", user("dave")...)
	var got echo
	json.Unmarshal([]byte(body), &got)
	if status != 201 || len(got.Mounts) != 1 || got.Mounts[0].Name != "bob_s3" {
		t.Errorf("dave picking bob_s3: %d %s", status, body)
	}
	big := strings.Repeat("x", MaxBodyBytes+1)
	if status, body := p.do(t, "POST", "/echo", big, user("alice")...); status != 413 {
		t.Errorf("big body: %d %s", status, body)
	}
}

func TestDataPlanePublicAndTimeout(t *testing.T) {
	p := startPlane(t, planeConfig+"\n[datasets.pub]\nuri = \"/data/pub\"\n\n[[grants]]\nuser = \"*\"\ndataset = \"pub\"\n")
	status, body := p.do(t, "GET", "/echo", "")
	var got echo
	json.Unmarshal([]byte(body), &got)
	if status != 201 || len(got.Mounts) != 1 || got.Mounts[0].Name != "pub" {
		t.Errorf("anonymous: %d %s", status, body)
	}
	if status, body := p.do(t, "GET", "/echo?dataset=alice_s3", ""); status != 401 {
		t.Errorf("anonymous, private dataset: %d %s", status, body)
	}
	p.s.Timeout = 300 * time.Millisecond
	status, body = p.do(t, "GET", "/sleep", "", user("alice")...)
	if status != 503 || !strings.Contains(body, `"code":"unavailable"`) {
		t.Errorf("timeout: %d %s", status, body)
	}
}

// TestDataPlaneBusy: when every worker slot is taken and nothing may
// queue, a request gets 503 busy with Retry-After, without a worker.
func TestDataPlaneBusy(t *testing.T) {
	p := startPlane(t, planeConfig)
	p.s.MaxRunning = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	request := func(ctx context.Context, path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", p.url+path, nil)
		h := user("alice")
		req.Header.Set(h[0], h[1])
		req.Header.Set(h[2], h[3])
		return http.DefaultClient.Do(req)
	}
	go request(ctx, "/sleep")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if started, _ := filepath.Glob(filepath.Join(p.dump, "*.stdin")); len(started) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleeping worker never started")
		}
	}
	resp, err := request(context.Background(), "/echo")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e directory.ErrorBody
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 503 || e.Code != CodeBusy || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("busy: %d %+v Retry-After %q", resp.StatusCode, e, resp.Header.Get("Retry-After"))
	}
	if envs, _ := p.dumps(t); len(envs) != 1 {
		t.Errorf("%d workers started, want the sleeping one only", len(envs))
	}
	cancel() // the client leaves: its worker is killed and its slot freed
	waitFor(t, func(s *Spawner) bool { return len(s.slots) == 0 }, p.s)
}
