package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"
)

type ctxKey int

const requestIDKey ctxKey = 0

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-Id"

// validRequestID accepts a caller's id only when it is short and plain, so
// a header cannot inject anything into logs.
var validRequestID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WithRequestID returns ctx carrying a request id (workers continue the
// parent's id).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// RequestID returns the id the middleware gave a request ("" outside it).
func RequestID(r *http.Request) string { return requestID(r.Context()) }

// Logged wraps a handler that is not the Server (the Directory's parent
// routes) in the same middleware: request ids, panic recovery, one access
// log line per request.
func Logged(log *slog.Logger, next http.Handler) http.Handler {
	return (&Server{log: log}).middleware(next)
}

// APIContentSecurityPolicy is the policy of every answer that is not a
// Web Explorer page: an answer opened as a page must not run or load
// anything.
const APIContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'; sandbox"

// SecurityHeaders sets the headers every answer carries, whatever its
// type (JSON, errors, exports, text, CSV) and whichever process wrote it
// (serve, a Directory parent, its workers). The Web Explorer replaces the
// policy with its own for its pages (docs/http-api.md, "Conventions").
func SecurityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", APIContentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// CheckSecurityHeaders reports the first of SecurityHeaders missing from h,
// for the tests of every process that answers HTTP.
func CheckSecurityHeaders(h http.Header) error {
	want := http.Header{}
	SecurityHeaders(want)
	for k := range want {
		if k == "Content-Security-Policy" && h.Get(k) != "" {
			continue // the Web Explorer's pages have their own
		}
		if h.Get(k) != want.Get(k) {
			return fmt.Errorf("header %s is %q, want %q", k, h.Get(k), want.Get(k))
		}
	}
	return nil
}

// statusWriter records what a handler wrote, for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// middleware gives every request an id (the caller's, if well-formed) and
// the security headers, recovers a panic into a 500 and logs one line per request: method, path
// (never the query string or headers, which may carry keys or search text),
// status, bytes, duration.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID().MatchString(id) {
			id = requestID(r.Context())
			if id == "" {
				id = newRequestID()
			}
		}
		r = r.WithContext(WithRequestID(r.Context(), id))
		w.Header().Set(RequestIDHeader, id)
		SecurityHeaders(w.Header())
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				s.log.ErrorContext(r.Context(), "handler panic", "request_id", id, "panic", p)
				if sw.status == 0 {
					s.writeError(sw, r, &apiError{status: http.StatusInternalServerError, code: CodeInternal, msg: "internal error"})
				}
			}
			s.log.InfoContext(r.Context(), "request", "request_id", id, "method", r.Method, "path", r.URL.Path,
				"status", sw.status, "bytes", sw.bytes, "duration_ms", float64(time.Since(start).Microseconds())/1000)
		}()
		next.ServeHTTP(sw, r)
	})
}
