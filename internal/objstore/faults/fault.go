package faults

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Fault is what the proxy does to one request. Build one with Delay,
// Status, Truncate, Reset or Stall.
type Fault struct {
	kind       kind
	delay      time.Duration // before forwarding or answering
	status     int           // answer this instead of forwarding
	retryAfter string
	cut        int64 // body bytes forwarded before the cut; -1: the whole body
	stall      time.Duration
	then       func()
}

type kind int

const (
	kindDelay kind = iota
	kindStatus
	kindTruncate
	kindReset
	kindStall
	kindDrop
)

// Delay holds the request for d before forwarding it: longer than the
// client's response timeout, it is a timeout.
func Delay(d time.Duration) Fault { return Fault{kind: kindDelay, delay: d, cut: -1} }

// Status answers status (500, 503, ...) instead of forwarding.
func Status(status int) Fault { return Fault{kind: kindStatus, status: status, cut: -1} }

// StatusRetryAfter answers status with a Retry-After header.
func StatusRetryAfter(status int, retryAfter string) Fault {
	return Fault{kind: kindStatus, status: status, retryAfter: retryAfter, cut: -1}
}

// Truncate forwards the response with its headers (Content-Length
// included) but only the first n body bytes, then closes the connection.
func Truncate(n int64) Fault { return Fault{kind: kindTruncate, cut: n} }

// Reset forwards the headers and the first n body bytes, then resets the
// connection (TCP RST).
func Reset(n int64) Fault { return Fault{kind: kindReset, cut: n} }

// Stall forwards the headers and the first n body bytes, sends nothing for
// d, then the rest of the body (unless the client has given up).
func Stall(n int64, d time.Duration) Fault { return Fault{kind: kindStall, cut: n, stall: d} }

// Drop forwards the request, so the server acts on it, then resets the
// connection without answering: the client cannot tell whether it took
// effect (a put whose answer is lost).
func Drop() Fault { return Fault{kind: kindDrop, cut: -1} }

// Then runs fn at the cut of a Truncate, Reset or Stall fault, after the
// first bytes were sent: a test writes a new version of the object there.
func (f Fault) Then(fn func()) Fault {
	f.then = fn
	return f
}

func (f Fault) String() string {
	var s string
	switch f.kind {
	case kindDelay:
		s = "delay " + f.delay.String()
	case kindStatus:
		s = fmt.Sprintf("status %d", f.status)
		if f.retryAfter != "" {
			s += " Retry-After " + f.retryAfter
		}
	case kindTruncate:
		s = fmt.Sprintf("truncate after %d bytes", f.cut)
	case kindReset:
		s = fmt.Sprintf("reset after %d bytes", f.cut)
	case kindStall:
		s = fmt.Sprintf("stall %s after %d bytes", f.stall, f.cut)
	case kindDrop:
		s = "drop the answer"
	}
	if f.then != nil {
		s += " (+hook)"
	}
	return s
}

// ObjectRead matches requests for the bytes of key (not its metadata): an
// S3 or Azure GET, a GCS XML read or JSON media download.
func ObjectRead(key string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+key) && r.URL.Query().Get("alt") != "json"
	}
}

// ObjectRequest matches every request naming key (reads, stats, puts).
func ObjectRequest(key string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/"+key) }
}

// ObjectWrite matches uploads of key: an S3 or Azure PUT, a GCS upload
// (which names the object in its query).
func ObjectWrite(key string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		switch r.Method {
		case http.MethodPut:
			return strings.HasSuffix(r.URL.Path, "/"+key)
		case http.MethodPost:
			return strings.HasPrefix(r.URL.Path, "/upload/") && r.URL.Query().Get("name") == key
		}
		return false
	}
}

// List matches listing requests of S3 (ListObjectsV2, ListObjectVersions),
// Azure (List Blobs) and GCS (objects.list).
func List(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	q := r.URL.Query()
	return q.Has("list-type") || q.Has("versions") || q.Get("comp") == "list" ||
		(strings.HasPrefix(r.URL.Path, "/storage/v1/b/") && strings.HasSuffix(r.URL.Path, "/o"))
}
