package worker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// Worker latency (docs/performance.md): one small request answered in
// process, through a cold worker (a process started per job) and through a
// warm one (started ahead, still one process per job), plus the start-up of
// the real pchronicle binary, which is what a cold worker of serve pays on
// top of the test binary's. Each reports its p50 and p99.
//
//	go test ./internal/worker -run '^$' -bench . -benchtime 200x

func BenchmarkInProcess(b *testing.B) {
	h, _, _ := echoBuild(context.Background(), Job{})
	measure(b, func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/echo", nil))
		io.Copy(io.Discard, rec.Body)
	})
}

func BenchmarkColdWorker(b *testing.B) { benchWorker(b, 0) }
func BenchmarkWarmWorker(b *testing.B) { benchWorker(b, 2) }

func benchWorker(b *testing.B, warm int) {
	s, _ := spawner(b)
	s.Warm = warm
	s.Prestart()
	job := Job{Mounts: []directory.Ticket{s3Ticket}, Request: Request{Method: "GET", Path: "/echo", Header: http.Header{}}}
	measureAfter(b, func() { waitWarm(s, warm) }, func() {
		res, err := s.Run(context.Background(), job)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		if err := res.Body.Close(); err != nil {
			b.Fatal(err)
		}
	})
}

// waitWarm waits, off the clock, until the pool is full, so that every job
// measures a warm hand-over rather than a start.
func waitWarm(s *Spawner, n int) {
	for range 500 {
		s.mu.Lock()
		full := len(s.ready) >= n
		s.mu.Unlock()
		if full {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkBinaryStart(b *testing.B) {
	bin := testutil.Binary(b)
	measure(b, func() {
		if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	})
}

// measure times each call of op and reports the p50 and p99 in
// milliseconds.
func measure(b *testing.B, op func()) { measureAfter(b, func() {}, op) }

// measureAfter is measure with an untimed prepare step before each op.
func measureAfter(b *testing.B, prepare, op func()) {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	for range b.N {
		b.StopTimer()
		prepare()
		b.StartTimer()
		start := time.Now()
		op()
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(d[min(len(d)-1, len(d)*99/100)])/1e6, "p99-ms")
}
