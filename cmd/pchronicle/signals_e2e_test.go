//go:build unix

package main

// The binary stops promptly and non-zero on SIGTERM whatever it is waiting
// for, and publishes nothing on the way out; a SIGKILLed process's Snapshot
// temp directory is reclaimed by a later run (docs/cli.md, "Signals").

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// started is a running binary.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// start runs the binary in the background with its own config and temp
// directories (tmp; a new one when empty).
func start(t *testing.T, tmp string, stdin io.Reader, args ...string) *started {
	t.Helper()
	if tmp == "" {
		tmp = t.TempDir()
	}
	p := &started{cmd: exec.Command(testutil.Binary(t), args...)}
	p.cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "TMPDIR="+tmp)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = stdin, &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}

// stop sends sig and returns the exit code. The process must end by
// itself: not through main's backstop exit (which a command that ignores
// its context would reach after 10s), and within a time that only a badly
// overloaded machine needs; the time taken is logged.
func (p *started) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	// A signal that arrives before main installed its handler takes the
	// default action, which tests nothing of ours; on a loaded machine a
	// fixed sleep is not enough to be past that point.
	if sig != syscall.SIGKILL {
		waitFor(t, fmt.Sprintf("the process to catch %v", sig), func() bool { return catches(p.cmd.Process.Pid, sig) })
	}
	sent := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatal(err)
		}
		t.Logf("%v stopped %s after %v", p.cmd.Args[1:3], time.Since(sent).Round(time.Millisecond), sig)
		if strings.Contains(p.stderr.String(), "did not stop within") {
			t.Fatalf("%v ignored %v until the backstop exit: %s", p.cmd.Args[1:], sig, p.stderr.String())
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(20 * time.Second):
		t.Fatalf("%v: still running 20s after %v; stderr: %s", p.cmd.Args[1:], sig, p.stderr.String())
		return 0
	}
}

// catches reports whether process pid has a handler for sig installed
// (its SigCgt mask in /proc).
func catches(pid int, sig syscall.Signal) bool {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(status)) {
		if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return err == nil && bits&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}

// tree describes every file under dir (path, size and content of small
// files): two equal trees mean nothing was published or left behind.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d", rel, info.Mode().Type(), info.Size())
		if info.Mode().IsRegular() && info.Size() < 1<<16 {
			data, _ := os.ReadFile(path)
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteByte('\n')
		return nil
	})
	if errorsIsNotExist(err) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func errorsIsNotExist(err error) bool { return err != nil && os.IsNotExist(err) }

func event(id, session string, seq int) string {
	return fmt.Sprintf(`{"v":1,"event_id":%q,"run_id":"r","session_id":%q,"seq":%d,"ts":"2025-01-01T00:00:%02dZ","kind":"message","payload":{"source":"user","content":"hi"}}`+"\n",
		id, session, seq, seq%60)
}

// waitFor polls until cond holds, failing after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const sigtermCode = 128 + int(syscall.SIGTERM)

// events append reading a FIFO: blocked in open(2) with no writer, and
// blocked in read(2) with a writer that sent valid lines and keeps the
// FIFO open. SIGTERM stops both at once, and the store keeps exactly its
// old state.
func TestSIGTERMDuringFIFORead(t *testing.T) {
	for _, writer := range []bool{false, true} {
		t.Run(fmt.Sprintf("writer=%v", writer), func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "events.lance")
			if _, stderr, code := testutil.RunInput(t, event("a1", "s1", 0), "events", "append", store, "-"); code != 0 {
				t.Fatal(stderr)
			}
			before := tree(t, dir)
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			p := start(t, "", nil, "events", "append", store, fifo)
			if writer {
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // rendezvous with the reader's open
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				w.WriteString(event("b1", "s1", 1) + event("b2", "s1", 2))
			}
			time.Sleep(300 * time.Millisecond)
			if code := p.stop(t, syscall.SIGTERM); code != sigtermCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, sigtermCode, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), fifo) || !strings.Contains(p.stderr.String(), "stopped by SIGTERM") {
				t.Fatalf("stderr: %s", p.stderr.String())
			}
			if after := tree(t, dir); after != before {
				t.Fatalf("store changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// events append reading standard input into a store it creates: SIGTERM
// while the producer is silent leaves no store (it used to create an empty
// one), and no directory it made for it.
func TestSIGTERMDuringStdinRead(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := start(t, "", r, "events", "append", filepath.Join(dir, "new", "events.lance"), "-")
	r.Close()
	w.WriteString(event("a1", "s1", 0))
	time.Sleep(300 * time.Millisecond)
	if code := p.stop(t, syscall.SIGTERM); code != sigtermCode {
		t.Fatalf("exit %d, want %d; stderr: %s", code, sigtermCode, p.stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("an interrupted append left %v", entries)
	}
}

// A long import (100 MB) interrupted while it normalizes, and one
// interrupted while it waits for another writer's lock: both stop at once
// and the store keeps exactly its old state.
func TestSIGTERMDuringImport(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	if _, stderr, code := testutil.Run(t, "import", ex, "--to", store); code != 0 {
		t.Fatal(stderr)
	}
	before := tree(t, dir)
	corpus := t.TempDir()
	if _, err := benchcorpus.Generate(corpus, 100<<20, 1); err != nil {
		t.Fatal(err)
	}

	t.Run("normalizing", func(t *testing.T) {
		p := start(t, "", nil, "import", corpus, "--to", store, "--mode", "append", "--jobs", "1")
		waitFor(t, "the import's temp generation", func() bool {
			m, _ := filepath.Glob(filepath.Join(store, ".tmp-gen-*"))
			return len(m) > 0
		})
		time.Sleep(100 * time.Millisecond)
		if code := p.stop(t, syscall.SIGTERM); code != sigtermCode {
			t.Fatalf("exit %d, want %d (did the import finish first?); stderr: %s", code, sigtermCode, p.stderr.String())
		}
		if after := tree(t, dir); after != before {
			t.Fatalf("store changed:\nbefore %s\nafter  %s", before, after)
		}
	})

	t.Run("waiting for the lock", func(t *testing.T) {
		unlock, err := fsx.Lock(t.Context(), filepath.Join(store, "LOCK")) // another writer at work
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		p := start(t, "", nil, "import", ex, "--to", store, "--mode", "append")
		time.Sleep(500 * time.Millisecond)
		if code := p.stop(t, syscall.SIGTERM); code != sigtermCode {
			t.Fatalf("exit %d, want %d; stderr: %s", code, sigtermCode, p.stderr.String())
		}
		if after := tree(t, dir); after != before {
			t.Fatalf("store changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// slowQuery keeps DuckDB busy for minutes over the examples.
const slowQuery = "SELECT count(*) FROM steps a JOIN steps b USING (_file_) JOIN steps c USING (_file_) JOIN steps d USING (_file_) " +
	"JOIN steps e USING (_file_) JOIN steps f USING (_file_) JOIN steps g USING (_file_) JOIN steps h USING (_file_) " +
	"JOIN steps i USING (_file_) JOIN steps j USING (_file_) JOIN steps k USING (_file_)"

func snapshotDirs(t *testing.T, tmp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, "pchronicle-snapshot-*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// A query stops on SIGTERM and removes its Snapshot temp directory; one
// killed with SIGKILL cannot, and a later run removes what it left once
// the grace period has passed, but never the directory of a live query.
func TestSnapshotTempDirs(t *testing.T) {
	tmp := t.TempDir()
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	hasDir := func() bool { return len(snapshotDirs(t, tmp)) == 1 }

	term := start(t, tmp, nil, "query", ex, slowQuery)
	waitFor(t, "the query's Snapshot temp directory", hasDir)
	if code := term.stop(t, syscall.SIGTERM); code != sigtermCode {
		t.Fatalf("query: exit %d, want %d; stderr: %s", code, sigtermCode, term.stderr.String())
	}
	if left := snapshotDirs(t, tmp); len(left) != 0 {
		t.Fatalf("an interrupted query left %v", left)
	}

	killed := start(t, tmp, nil, "query", ex, slowQuery)
	waitFor(t, "the query's Snapshot temp directory", hasDir)
	killed.stop(t, syscall.SIGKILL)
	dead := snapshotDirs(t, tmp)
	if len(dead) != 1 {
		t.Fatalf("after SIGKILL: %v, want the killed query's directory", dead)
	}
	live := start(t, tmp, nil, "query", ex, slowQuery)
	waitFor(t, "the live query's Snapshot temp directory", func() bool { return len(snapshotDirs(t, tmp)) == 2 })
	old := time.Now().Add(-time.Hour) // past the grace period
	for _, d := range snapshotDirs(t, tmp) {
		os.Chtimes(d, old, old)
	}
	if _, stderr, code := runTmp(t, tmp, "query", ex, "SELECT 1"); code != 0 {
		t.Fatal(stderr)
	}
	left := snapshotDirs(t, tmp)
	if len(left) != 1 || left[0] == dead[0] {
		t.Fatalf("after the next run: %v; want only the live query's directory (the killed one's was %s)", left, dead[0])
	}
	if code := live.stop(t, syscall.SIGTERM); code != sigtermCode {
		t.Fatalf("live query: exit %d; stderr: %s", code, live.stderr.String())
	}
}

// runTmp is testutil.Run with TMPDIR set.
func runTmp(t *testing.T, tmp string, args ...string) (string, string, int) {
	t.Helper()
	p := start(t, tmp, nil, args...)
	err := p.cmd.Wait()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return p.stdout.String(), p.stderr.String(), p.cmd.ProcessState.ExitCode()
}
