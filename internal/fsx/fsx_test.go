package fsx

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary, run again as a child, hold a lock
// instead of running tests (see TestMain).
const helperEnv = "FSX_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		unlock, err := Lock(context.Background(), path)
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		io.Copy(io.Discard, os.Stdin) // hold until stdin closes or the process is killed
		unlock()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLockWaitStopsOnCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Lock(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock: %v, want the context's error", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the cancelled wait took %s", d)
	}
	unlock()
	again, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}

// The kernel releases a killed holder's lock, across processes: a writer
// killed with SIGKILL never leaves a store locked.
func TestLockAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	if _, ok, err := TryLock(path); ok || err != nil {
		t.Fatalf("TryLock while another process holds the lock: ok=%v err=%v", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while another process holds it: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	unlock()
}

// A holder that removes the lock file (cleaning up a store it created)
// must not leave a waiter holding the lock of the removed file while a
// newcomer locks the new file at the same path: two holders.
func TestLockFileRemovedWhileWaiting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	first, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		unlock, err := Lock(context.Background(), path)
		if err != nil {
			t.Error(err)
			got <- func() {}
			return
		}
		got <- unlock
	}()
	time.Sleep(20 * time.Millisecond) // the waiter has opened the old file
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	first()
	second := <-got
	defer second()
	if _, ok, err := TryLock(path); ok || err != nil {
		t.Fatalf("a newcomer got the lock the waiter holds: ok=%v err=%v", ok, err)
	}
}

func TestLockGoneDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "LOCK")
	if _, err := Lock(context.Background(), path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lock in a missing directory: %v, want ErrNotExist", err)
	}
}

func TestReclaimTemp(t *testing.T) {
	dir := t.TempDir()
	const prefix = "pc-test-"
	old := time.Now().Add(-time.Hour)
	age := func(path string) {
		t.Helper()
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	live, release, err := MkdirTempLocked(dir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	age(live)
	dead, releaseDead, err := MkdirTempLocked(dir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	releaseDead() // as a killed process's descriptors are
	age(dead)
	unlocked := filepath.Join(dir, prefix+"nolock") // no lock file at all
	young := filepath.Join(dir, prefix+"young")     // abandoned, but within the grace
	other := filepath.Join(dir, "other-old")        // another prefix
	file := filepath.Join(dir, prefix+"file")       // not a directory
	for _, d := range []string{unlocked, young, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{unlocked, other, file} {
		age(p)
	}
	os.WriteFile(filepath.Join(dead, "data"), []byte("x"), 0o644)
	age(dead)

	removed, err := ReclaimTemp(dir, prefix, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{dead, unlocked}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, p := range []string{live, young, other, file} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

func TestContextReaderStopsBlockedRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cr := ContextReader(ctx, r)
	w.WriteString("hello\n")
	buf := make([]byte, 64)
	if n, err := cr.Read(buf); err != nil || string(buf[:n]) != "hello\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := cr.Read(buf) // nothing more is written: blocks
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("blocked read after cancel: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the read did not stop on cancellation")
	}
	if _, err := cr.Read(buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v", err)
	}
}

func TestRemoveCreated(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "c")
	top, err := MkdirAllNew(dir, 0o755)
	if err != nil || top != filepath.Join(root, "a") {
		t.Fatalf("MkdirAllNew: top %q, %v; want %s", top, err, filepath.Join(root, "a"))
	}
	if again, err := MkdirAllNew(dir, 0o755); again != "" || err != nil {
		t.Fatalf("MkdirAllNew of an existing directory: %q %v", again, err)
	}
	// Another writer's file in a: a and root stay, b and c go.
	os.WriteFile(filepath.Join(root, "a", "other"), nil, 0o644)
	RemoveCreated(dir, top)
	if _, err := os.Stat(filepath.Join(root, "a", "b")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b not removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a", "other")); err != nil {
		t.Fatalf("a non-empty created directory lost its file: %v", err)
	}
	os.Remove(filepath.Join(root, "a", "other"))
	os.MkdirAll(dir, 0o755)
	RemoveCreated(dir, top)
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("left %v; want nothing up to and including top", entries)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("removed past top: %v", err)
	}
}

func TestAncestor(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, want string }{
		{deep, filepath.Join(root, "a")},
		{filepath.Join(root, "a"), filepath.Join(root, "a")},
	} {
		if got, err := Ancestor(c.from, "marker"); err != nil || got != c.want {
			t.Errorf("Ancestor(%s) = %q, %v; want %q", c.from, got, err, c.want)
		}
	}
	if got, err := Ancestor(deep, "no-such-marker-anywhere"); err == nil || !strings.Contains(err.Error(), "no-such-marker-anywhere") {
		t.Errorf("Ancestor of a missing name = %q, %v; want an error naming it", got, err)
	}
}
