//go:build unix

package objstore

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallBuffers keeps a socket's kernel buffer at 16 KiB, so that a body
// the server has not taken yet stays with the client instead of vanishing
// into megabytes of loopback buffers.
func smallBuffers(opt int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 16<<10) }); err != nil {
			return err
		}
		return serr
	}
}

// zeros is n bytes of zeros, produced on demand.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	clear(p[:k])
	z.n -= int64(k)
	return k, nil
}

// TestTransportClock: a request body still being sent is not a late
// answer, however long it takes, as long as it moves; a body the server
// stops taking, missing headers and a stalled response body are timeouts.
func TestTransportClock(t *testing.T) {
	const tick = 500 * time.Millisecond // a loaded machine can pause a goroutine for 200 ms
	// hold outlasts the client's one-tick patience (a request whose body
	// was not read gets no Done from its context, so a timer ends it).
	hold := func(r *http.Request) {
		select {
		case <-time.After(2 * tick):
		case <-r.Context().Done():
		}
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow-upload": // takes the body in small steps over 3 ticks
			buf := make([]byte, 16<<10)
			for {
				time.Sleep(tick / 10)
				if _, err := r.Body.Read(buf); err != nil {
					break
				}
			}
		case "/no-reading", "/no-answer": // answers late, reading nothing
			hold(r)
		case "/stalled-body":
			w.Header().Set("Content-Length", "10")
			w.Write([]byte("12345"))
			w.(http.Flusher).Flush()
			hold(r)
		}
	}))
	l, err := (&net.ListenConfig{Control: smallBuffers(syscall.SO_RCVBUF)}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	base := &http.Transport{DialContext: (&net.Dialer{Control: smallBuffers(syscall.SO_SNDBUF)}).DialContext}
	client := &http.Client{Transport: newTransport(Config{Transport: base}, Retry{ResponseTimeout: tick, StallTimeout: tick}.withDefaults())}
	do := func(method, path string, body io.Reader, size int64) error {
		req, err := http.NewRequest(method, srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = size
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	for _, tc := range []struct {
		path  string
		body  int64 // request body bytes; 0 for none
		error string
	}{
		{"/slow-upload", 480 << 10, ""}, // 30 reads, one a tick/10: 3 ticks in all
		{"/no-reading", 64 << 20, "request body stalled within 500ms"},
		{"/no-answer", 0, "no response headers within 500ms"},
		{"/stalled-body", 0, "response body stalled within 500ms"},
	} {
		var body io.Reader
		method := http.MethodGet
		if tc.body > 0 {
			body, method = &zeros{tc.body}, http.MethodPut
		}
		start := time.Now()
		err := do(method, tc.path, body, tc.body)
		var te *TimeoutError
		switch {
		case tc.error == "" && err != nil:
			t.Errorf("%s: %v after %s", tc.path, err, time.Since(start))
		case tc.error != "" && (!errors.As(err, &te) || !strings.Contains(err.Error(), tc.error)):
			t.Errorf("%s: %v; want a TimeoutError %q", tc.path, err, tc.error)
		case tc.error != "" && time.Since(start) > 4*tick:
			t.Errorf("%s: timed out after %s", tc.path, time.Since(start))
		}
	}
}
