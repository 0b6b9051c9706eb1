// Package worker runs one Directory data-plane request in a one-shot child
// process: the serving parent authenticates the caller, writes a Job (only
// the Datasets that caller may open, with only the backend keys they need,
// and the raw request) to a fresh `pchronicle serve --catalog-query-worker`
// on stdin, and relays the answer the child writes to stdout. The parent
// itself never opens a Dataset; the child serves exactly one job and exits.
// The protocol is independent of the engine: the child's handler comes from
// a BuildFunc the server supplies. See docs/directory.md.
package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Args start the worker mode of the pchronicle binary. The flag is hidden
// from `serve --help`.
var Args = []string{"serve", "--catalog-query-worker"}

// Version is the protocol version a Job carries; a child refuses others, so
// a parent and a child of different builds never misread each other.
const Version = 1

// Bounds of what crosses the pipes.
const (
	MaxJobBytes  = 16 << 20 // a whole Job on stdin
	MaxBodyBytes = 8 << 20  // a request body inside it
	maxHeadBytes = 64 << 10 // the first line of stdout
)

// Job is everything a worker gets: the mounts it may open and the request
// to answer. Mounts carry backend keys, so a Job is never logged.
type Job struct {
	V         int                `json:"v"`
	RequestID string             `json:"request_id,omitempty"`
	Mounts    []directory.Ticket `json:"mounts"`
	// Options are the serve options, opaque to this package: the server
	// encodes them in the parent and decodes them in its BuildFunc.
	Options jsonx.RawMessage `json:"options,omitempty"`
	Request Request          `json:"request"`
}

// Request is the raw HTTP request the worker answers, without the headers
// that carry credentials.
type Request struct {
	Method string      `json:"method"`
	Host   string      `json:"host,omitempty"`
	Path   string      `json:"path"`
	Query  string      `json:"query,omitempty"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// Head is the first line a worker writes to stdout; the response body
// follows it unchanged until EOF, so streamed answers (NDJSON) stream.
type Head struct {
	Status      int         `json:"status"`
	ContentType string      `json:"content_type,omitempty"`
	Header      http.Header `json:"header,omitempty"`
}

// credentialHeaders are request headers a worker never sees: the caller's
// keys and any other credential.
var credentialHeaders = []string{directory.HeaderAccessKey, directory.HeaderSecretKey, "Authorization", "Proxy-Authorization", "Cookie"}

// hopByHop headers describe one connection (the parent's), not the request
// or the answer; they are never relayed either way.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// ErrBodyTooLarge: a request body is larger than MaxBodyBytes.
var ErrBodyTooLarge = fmt.Errorf("the request body is larger than %d bytes", MaxBodyBytes)

// NewRequest captures r for a Job: method, path, query, the headers a
// worker may see, and the body (read up to MaxBodyBytes).
func NewRequest(r *http.Request) (Request, error) {
	h := r.Header.Clone()
	for _, k := range append(credentialHeaders, hopByHop...) {
		h.Del(k)
	}
	req := Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery, Header: h}
	if r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err != nil {
			return Request{}, fmt.Errorf("read the request body: %w", err)
		}
		if len(body) > MaxBodyBytes {
			return Request{}, ErrBodyTooLarge
		}
		req.Body = body
	}
	return req, nil
}

// httpRequest rebuilds the request inside the worker.
func (q Request) httpRequest(ctx context.Context) (*http.Request, error) {
	target := q.Path
	if q.Query != "" {
		target += "?" + q.Query
	}
	if !strings.HasPrefix(target, "/") {
		return nil, fmt.Errorf("request path %q is not absolute", q.Path)
	}
	r, err := http.NewRequestWithContext(ctx, q.Method, "http://worker"+target, bytes.NewReader(q.Body))
	if err != nil {
		return nil, err
	}
	r.RequestURI = target
	r.Host = q.Host
	if q.Header != nil {
		r.Header = q.Header
	}
	return r, nil
}

// decodeJob reads and checks a Job.
func decodeJob(data []byte) (Job, error) {
	var job Job
	if err := jsonx.Unmarshal(data, &job); err != nil {
		return Job{}, fmt.Errorf("the job is not valid JSON: %w", err)
	}
	if job.V != Version {
		return Job{}, fmt.Errorf("job protocol version %d; this worker speaks %d", job.V, Version)
	}
	if job.Request.Method == "" {
		return Job{}, errors.New("the job has no request method")
	}
	for i, m := range job.Mounts {
		if m.Name == "" || m.URI == "" {
			return Job{}, fmt.Errorf("the job's mount %d has no name or uri", i)
		}
	}
	return job, nil
}

// sanitizedPrefixes are environment variables a worker never inherits: the
// cloud SDKs' credential settings (a worker opens storage only with the
// keys of its job) and anything naming catalog keys.
var sanitizedPrefixes = []string{"AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_", "PCHRONICLE_CATALOG_"}

// Environ returns env without the variables a worker must not inherit.
func Environ(env []string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range sanitizedPrefixes {
			if strings.HasPrefix(strings.ToUpper(name), p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
