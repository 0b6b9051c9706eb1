package faults_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/objstore/faults"
)

var body = bytes.Repeat([]byte("0123456789"), 10_000) // 100 KB

// target serves body at /b/key, with its length, like an object store.
func target(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "" {
			t.Error("no Host header")
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("ETag", `"e1"`)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// get reads the proxied object with a client that never retries.
func get(t *testing.T, p *faults.Proxy) (*http.Response, []byte, error) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(p.URL + "/b/key")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault faults.Fault
		check func(t *testing.T, resp *http.Response, data []byte, err error, elapsed time.Duration)
	}{
		{"status", faults.StatusRetryAfter(503, "7"), func(t *testing.T, resp *http.Response, data []byte, err error, _ time.Duration) {
			if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(data), "InjectedFault") {
				t.Fatalf("%v %v %q", resp, err, data)
			}
		}},
		{"delay", faults.Delay(150 * time.Millisecond), func(t *testing.T, resp *http.Response, data []byte, err error, elapsed time.Duration) {
			if err != nil || !bytes.Equal(data, body) || elapsed < 150*time.Millisecond {
				t.Fatalf("%d bytes after %s: %v", len(data), elapsed, err)
			}
		}},
		{"truncate", faults.Truncate(1000), func(t *testing.T, resp *http.Response, data []byte, err error, _ time.Duration) {
			if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(data, body[:1000]) || resp.ContentLength != int64(len(body)) {
				t.Fatalf("%d bytes, length %d: %v; want the first 1000 then unexpected EOF", len(data), resp.ContentLength, err)
			}
		}},
		{"reset", faults.Reset(2000), func(t *testing.T, resp *http.Response, data []byte, err error, _ time.Duration) {
			if !errors.Is(err, syscall.ECONNRESET) || !bytes.Equal(data, body[:2000]) {
				t.Fatalf("%d bytes: %v; want the first 2000 then a connection reset", len(data), err)
			}
		}},
		{"stall", faults.Stall(10, 150*time.Millisecond), func(t *testing.T, resp *http.Response, data []byte, err error, elapsed time.Duration) {
			if err != nil || !bytes.Equal(data, body) || elapsed < 150*time.Millisecond {
				t.Fatalf("%d bytes after %s: %v", len(data), elapsed, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := faults.New(t, target(t))
			p.Add(faults.Rule{Match: faults.ObjectRead("key"), Times: 1, Fault: tc.fault})
			start := time.Now()
			resp, data, err := get(t, p)
			tc.check(t, resp, data, err, time.Since(start))
			// Times: 1 — the next request is forwarded untouched.
			if _, data, err := get(t, p); err != nil || !bytes.Equal(data, body) {
				t.Fatalf("second request: %d bytes, %v", len(data), err)
			}
			if reqs := p.Requests(nil); len(reqs) != 2 || reqs[0].Fault == "" || reqs[1].Fault != "" {
				t.Fatalf("log:\n%s", p.Log())
			}
		})
	}
}

func TestDropReachesTheServer(t *testing.T) {
	var hits atomic.Int32 // the handler runs on the server's goroutine
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	p := faults.New(t, srv.URL)
	p.Add(faults.Rule{Match: func(*http.Request) bool { return true }, Times: 1, Fault: faults.Drop()})
	req, _ := http.NewRequest(http.MethodPut, p.URL+"/b/key", strings.NewReader("x"))
	if _, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil || hits.Load() != 1 {
		t.Fatalf("dropped put: %v, server saw %d requests; want an error after the server got it", err, hits.Load())
	}
}

func TestRuleSkipTimesAndHook(t *testing.T) {
	p := faults.New(t, target(t))
	hooked := 0
	p.Add(faults.Rule{Match: faults.ObjectRead("key"), Skip: 1, Times: 2, Fault: faults.Truncate(5).Then(func() { hooked++ })})
	var got []bool
	for range 5 {
		_, _, err := get(t, p)
		got = append(got, err == nil)
	}
	if want := []bool{true, false, false, true, true}; !slices.Equal(got, want) || hooked != 2 {
		t.Fatalf("requests ok %v (hook ran %d times); want %v, 2\n%s", got, hooked, want, p.Log())
	}
	p.Clear()
	p.Add(faults.Rule{Match: func(*http.Request) bool { return true }, Times: faults.Always, Fault: faults.Status(500)})
	for range 3 {
		if resp, _, err := get(t, p); err != nil || resp.StatusCode != 500 {
			t.Fatalf("%v %v", resp, err)
		}
	}
}

func TestMatchers(t *testing.T) {
	req := func(method, target string) *http.Request { return httptest.NewRequest(method, target, nil) }
	for _, tc := range []struct {
		r                 *http.Request
		read, write, list bool
	}{
		{req("GET", "/bkt/ds/a.jsonl?versionId=3"), true, false, false},                         // S3
		{req("HEAD", "/bkt/ds/a.jsonl"), false, false, false},                                   // S3 stat
		{req("GET", "/devstoreaccount1/c/ds/a.jsonl"), true, false, false},                      // Azure
		{req("GET", "/storage/v1/b/bkt/o/ds%2Fa.jsonl?alt=json"), false, false, false},          // GCS stat
		{req("GET", "/download/storage/v1/b/bkt/o/ds%2Fa.jsonl?alt=media"), true, false, false}, // GCS JSON read
		{req("GET", "/bkt?list-type=2&prefix=ds%2F"), false, false, true},                       // S3
		{req("GET", "/bkt?versions&prefix=ds%2F"), false, false, true},                          // S3 versioned
		{req("GET", "/devstoreaccount1/c?restype=container&comp=list"), false, false, true},     // Azure
		{req("GET", "/storage/v1/b/bkt/o?prefix=ds%2F"), false, false, true},                    // GCS
		{req("GET", "/bkt?versioning"), false, false, false},                                    // S3 probe
	} {
		if got := faults.ObjectRead("ds/a.jsonl")(tc.r); got != tc.read {
			t.Errorf("ObjectRead(%s %s) = %v", tc.r.Method, tc.r.URL, got)
		}
		if got := faults.ObjectWrite("ds/a.jsonl")(tc.r); got != tc.write {
			t.Errorf("ObjectWrite(%s %s) = %v", tc.r.Method, tc.r.URL, got)
		}
		if got := faults.List(tc.r); got != tc.list {
			t.Errorf("List(%s %s) = %v", tc.r.Method, tc.r.URL, got)
		}
	}
}
