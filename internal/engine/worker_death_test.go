package engine

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutOfMemoryRecognizesEveryAllocator checks the worker deaths that are
// reported as running out of memory (naming --memory-limit) rather than as
// an internal failure: each line is what that runtime prints as it dies.
func TestOutOfMemoryRecognizesEveryAllocator(t *testing.T) {
	for _, c := range []struct {
		stderr string
		want   bool
	}{
		{"fatal error: runtime: out of memory", true},
		{"terminate called after throwing an instance of 'std::bad_alloc'", true},
		{"runtime: cannot allocate memory", true},
		{"runtime: failed to create new OS thread (have 12 already; errno=12)", true},
		{"runtime/cgo: pthread_create failed: Resource temporarily unavailable", true},
		{"panic: runtime error: index out of range [3] with length 3", false},
		{"query worker: protocol version \"3\", this binary speaks 4", false},
		{"", false},
	} {
		if got := outOfMemory(c.stderr); got != c.want {
			t.Errorf("outOfMemory(%q) = %v, want %v", c.stderr, got, c.want)
		}
	}
}

// TestKilledWorkerIsReportedAsKilled: a worker killed with SIGKILL by
// another process, while the kernel reports no out-of-memory kill, is
// reported as killed, not as having run out of memory.
func TestKilledWorkerIsReportedAsKilled(t *testing.T) {
	if oomKills() < 0 {
		t.Skip("the kernel's OOM kill count cannot be read here")
	}
	db := openWorkerDB(Limits{MemoryLimit: "1GB", Threads: 1})
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pid int
	conn.Raw(func(dc any) error { pid = dc.(*worker).proc.Pid; return nil })
	time.AfterFunc(500*time.Millisecond, func() { syscall.Kill(pid, syscall.SIGKILL) })
	_, err = conn.ExecContext(context.Background(), "SELECT count(*) FROM (WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10000000000) SELECT n FROM t)")
	var qe *QueryError
	if err == nil || errors.As(err, &qe) && qe.Kind == KindResources || !strings.Contains(err.Error(), "killed (SIGKILL)") || strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("a worker killed from outside: %v", err)
	}
}
