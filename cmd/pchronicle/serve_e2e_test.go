package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// served is a `pchronicle serve` process started by a test.
type served struct {
	cmd    *exec.Cmd
	url    string
	stderr *logLines // the process's stderr, line by line, and what was read of it
	tmp    string
}

type logLines struct {
	ch  chan string
	all strings.Builder
}

var servingLine = regexp.MustCompile(`pchronicle serving (http://\S+)`)

// startServe runs the real binary with its own TMPDIR and waits for its URL.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(testutil.Binary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_CONFIG_HOME="+t.TempDir())
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, tmp: tmp, stderr: &logLines{ch: make(chan string, 1000)}}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s.stderr.ch <- sc.Text()
		}
		close(s.stderr.ch)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.After(2 * time.Minute)
	for s.url == "" {
		select {
		case line, ok := <-s.stderr.ch:
			if !ok {
				t.Fatalf("serve exited before serving: %s", s.stderr.all.String())
			}
			s.stderr.all.WriteString(line + "\n")
			if m := servingLine.FindStringSubmatch(line); m != nil {
				s.url = m[1]
			}
		case <-deadline:
			t.Fatalf("serve did not start: %s", s.stderr.all.String())
		}
	}
	return s
}

// rest drains the rest of the process's stderr.
func (s *served) rest() string {
	for line := range s.stderr.ch {
		s.stderr.all.WriteString(line + "\n")
	}
	return s.stderr.all.String()
}

// SIGTERM lets a response in flight finish, then the process exits 0 and
// removes its Snapshot's temp directory.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"session_id":"s%d","messages":[{"role":"user","content":"task %d"},{"role":"assistant","content":"done"}]}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(root, "many.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, root, "--listen", "127.0.0.1:0")
	res, err := http.Get(s.url + "/ready")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/ready: %v %v", res, err)
	}
	if len(snapshotDirs(t, s.tmp)) != 1 {
		t.Fatalf("want one Snapshot temp dir while serving: %v", snapshotDirs(t, s.tmp))
	}
	res, err = http.Post(s.url+"/api/query", "application/json",
		strings.NewReader(`{"sql": "SELECT s.session_id, s.step_index FROM steps s ORDER BY 1, 2", "format": "ndjson"}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("the response in flight was cut by the shutdown: %v", err)
	}
	if n := strings.Count(string(rest), "\n") + 1; n != 6000 {
		t.Fatalf("%d rows of 6000 after SIGTERM", n)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM: %s", err, s.rest())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	if dirs := snapshotDirs(t, s.tmp); len(dirs) != 0 {
		t.Fatalf("Snapshot temp dirs left after shutdown: %v", dirs)
	}
	if !strings.Contains(s.rest(), "shutting down") {
		t.Fatalf("no shutdown log line: %s", s.stderr.all.String())
	}
}

// Listening beyond loopback is possible but warned about, once, in the log.
func TestServeWarnsBeyondLoopback(t *testing.T) {
	s := startServe(t, filepath.Join(testutil.RepoRoot(t), "examples", "trajectories"), "--listen", "0.0.0.0:0")
	if !strings.Contains(s.stderr.all.String(), "listening beyond loopback") {
		t.Fatalf("no warning for 0.0.0.0: %s", s.stderr.all.String())
	}
	s2 := startServe(t, filepath.Join(testutil.RepoRoot(t), "examples", "trajectories"), "--listen", "127.0.0.1:0")
	if strings.Contains(s2.stderr.all.String(), "beyond loopback") {
		t.Fatalf("a warning on loopback: %s", s2.stderr.all.String())
	}
}

// Logs never hold a query string, a header value or a key.
func TestServeLogsNoQueryStringsOrHeaders(t *testing.T) {
	s := startServe(t, filepath.Join(testutil.RepoRoot(t), "examples", "trajectories"), "--listen", "127.0.0.1:0", "--log-format", "json")
	req, _ := http.NewRequest("GET", s.url+"/api/runs?q=SECRET-IN-QUERY", nil)
	req.Header.Set("Authorization", "Bearer SECRET-IN-HEADER")
	req.Header.Set("X-Catalog-Secret-Key", "SECRET-KEY")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	logs := s.rest()
	if strings.Contains(logs, "SECRET") {
		t.Fatalf("a secret reached the log:\n%s", logs)
	}
	if !strings.Contains(logs, `"path":"/api/runs"`) || !strings.Contains(logs, `"request_id"`) {
		t.Fatalf("the access log line is missing:\n%s", logs)
	}
}
