package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// BuildFunc builds the handler that answers a job's request from its mounts
// and options (the server's read-only routes over a Snapshot of exactly
// those mounts). close releases what it opened; it runs after the answer.
type BuildFunc func(ctx context.Context, job Job) (h http.Handler, close func(), err error)

// RequestIDHeader is the request header that carries a request id.
const RequestIDHeader = "X-Request-Id"

// StatusError lets a BuildFunc choose the status of its failure (a Dataset
// that cannot be opened may be 503 rather than 500).
type StatusError interface {
	error
	HTTPStatus() int
}

// Serve is the worker's whole life: read one Job from stdin (a parent that
// closes stdin without one, such as a warm pool shutting down, ends it
// quietly), build its handler, answer its request on stdout as a Head line
// and the body, and return. Failures before the handler runs are answered
// as a JSON error and logged to stderr; the returned error means the answer
// itself could not be written.
func Serve(ctx context.Context, stdin io.Reader, stdout io.Writer, build BuildFunc) error {
	data, err := io.ReadAll(io.LimitReader(stdin, MaxJobBytes+1))
	if err != nil {
		return fmt.Errorf("read the job: %w", err)
	}
	if len(data) == 0 {
		return nil
	}
	out := bufio.NewWriterSize(stdout, 32<<10)
	w := &envelopeWriter{out: out, header: http.Header{}}
	// A failure is answered as a JSON error and written to stderr, which the
	// parent logs; the run itself succeeded if the answer got out.
	fail := func(status int, code string, err error, requestID string) error {
		slog.Warn("query worker: the request was not served", "request_id", requestID, "status", status, "error", err.Error())
		directory.WriteError(w, status, code, err.Error(), requestID)
		return out.Flush()
	}
	if len(data) > MaxJobBytes {
		return fail(http.StatusRequestEntityTooLarge, directory.CodeBadRequest, fmt.Errorf("the job is larger than %d bytes", MaxJobBytes), "")
	}
	job, err := decodeJob(data)
	if err != nil {
		return fail(http.StatusInternalServerError, directory.CodeInternal, err, "")
	}
	r, err := job.Request.httpRequest(ctx)
	if err != nil {
		return fail(http.StatusBadRequest, directory.CodeBadRequest, err, job.RequestID)
	}
	if job.RequestID != "" {
		// The server's middleware in the worker adopts it, so the worker's
		// answer and logs carry the parent's request id.
		r.Header.Set(RequestIDHeader, job.RequestID)
	}
	h, closeFn, err := build(ctx, job)
	if err != nil {
		status := http.StatusInternalServerError
		code := directory.CodeInternal
		var se StatusError
		if errors.As(err, &se) {
			status = se.HTTPStatus()
			if status == http.StatusServiceUnavailable {
				code = directory.CodeUnavailable
			}
		}
		return fail(status, code, err, job.RequestID)
	}
	defer closeFn()
	h.ServeHTTP(w, r)
	if !w.wroteHead {
		w.WriteHeader(http.StatusOK)
	}
	return out.Flush()
}

// envelopeWriter is the worker's http.ResponseWriter: the first write (or
// WriteHeader, or Flush) emits the Head line, then the body goes to stdout
// as written; Flush pushes it through, so streamed answers stream.
type envelopeWriter struct {
	out       *bufio.Writer
	header    http.Header
	wroteHead bool
	err       error
}

func (w *envelopeWriter) Header() http.Header { return w.header }

func (w *envelopeWriter) WriteHeader(status int) {
	if w.wroteHead || status < 200 { // informational answers are not relayed
		return
	}
	w.wroteHead = true
	h := w.header.Clone()
	ct := h.Get("Content-Type")
	h.Del("Content-Type")
	if len(h) == 0 {
		h = nil
	}
	line, err := jsonx.Marshal(Head{Status: status, ContentType: ct, Header: h})
	if err == nil {
		_, err = w.out.Write(append(line, '\n'))
	}
	w.err = err
}

func (w *envelopeWriter) Write(b []byte) (int, error) {
	if !w.wroteHead {
		if w.header.Get("Content-Type") == "" {
			w.header.Set("Content-Type", http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	return w.out.Write(b)
}

func (w *envelopeWriter) Flush() {
	if !w.wroteHead {
		w.WriteHeader(http.StatusOK)
	}
	if w.err == nil {
		w.err = w.out.Flush()
	}
}
