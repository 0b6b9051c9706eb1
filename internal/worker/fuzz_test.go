package worker

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// FuzzServe: whatever arrives on a worker's stdin, Serve never panics, and
// anything it writes is an answer the parent can read (a valid Head line).
func FuzzServe(f *testing.F) {
	good, _ := jsonx.Marshal(Job{V: Version, Mounts: []directory.Ticket{s3Ticket}, Request: Request{Method: "GET", Path: "/plain", Query: "a=1"}})
	f.Add(good)
	f.Add([]byte(`{"v":1,"request":{"method":"GET","path":"relative"}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"mounts":[{"name":""}],"request":{"method":"GET","path":"/"}}`))
	f.Add([]byte(`{"v":1,"request":{"method":"G T","path":"/\x00"}}`))
	f.Add([]byte("not json"))
	f.Fuzz(func(t *testing.T, stdin []byte) {
		var out bytes.Buffer
		if err := Serve(context.Background(), bytes.NewReader(stdin), &out, plainBuild); err != nil {
			t.Fatalf("Serve could not answer: %v", err)
		}
		if len(stdin) == 0 {
			if out.Len() != 0 {
				t.Fatalf("answered an empty stdin: %q", out.Bytes())
			}
			return
		}
		if _, err := readHead(bufio.NewReader(&out)); err != nil {
			t.Fatalf("unreadable answer %q: %v", out.Bytes(), err)
		}
	})
}

// plainBuild answers every request with its path (the echo routes of the
// other tests include ones that sleep or exit).
func plainBuild(ctx context.Context, job Job) (http.Handler, func(), error) {
	if string(job.Options) == `"fail"` {
		return nil, nil, buildFailure{http.StatusServiceUnavailable}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) }), func() {}, nil
}

// FuzzReadHead: the parent's reader of a worker's first line never panics
// and accepts only statuses it can relay.
func FuzzReadHead(f *testing.F) {
	f.Add([]byte("{\"status\":200,\"content_type\":\"application/json\"}\nbody"))
	f.Add([]byte("{\"status\":99}\n"))
	f.Add([]byte("{\"status\":200,\"header\":{\"X\":[\"a\"]}}"))
	f.Add([]byte(strings.Repeat("x", maxHeadBytes+10)))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readHead(bufio.NewReaderSize(bytes.NewReader(data), 16))
		if err == nil && (h.Status < 200 || h.Status > 599) {
			t.Fatalf("accepted status %d", h.Status)
		}
	})
}
