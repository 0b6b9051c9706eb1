package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/redact"
)

// Error codes are stable: clients branch on them (docs/http-api.md).
const (
	CodeBadRequest       = "bad_request"
	CodeBodyTooLarge     = "request_too_large"
	CodeInvalidUTF8      = "invalid_utf8"
	CodeNotFound         = "not_found"
	CodeMethod           = "method_not_allowed"
	CodeInvalidToken     = "invalid_page_token"
	CodeStaleToken       = "stale_page_token"
	CodeQueryRejected    = "query_rejected"
	CodeQueryError       = "query_error"
	CodeQueryTimeout     = "query_timeout"
	CodeQueryResources   = "query_resources_exceeded"
	CodeAmbiguous        = "ambiguous_storyline"
	CodeSourceChanged    = "source_changed"
	CodeBusy             = "busy"
	CodeNotReady         = "not_ready"
	CodeRefreshFailed    = "refresh_failed"
	CodeInternal         = "internal"
	CodeRequestCancelled = "request_cancelled"
)

// apiError is an error with its HTTP status and code already decided.
type apiError struct {
	status int
	code   string
	msg    string
	extra  map[string]any
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: CodeBadRequest, msg: fmt.Sprintf(format, args...)}
}

// classify maps an error to its status and code: the one place where the
// typed errors of the packages below become HTTP.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return &apiError{status: ae.status, code: ae.code, msg: redact.Text(ae.msg), extra: ae.extra}
	}
	var pt *catalog.PageTokenError
	var ve *query.ValidationError
	var qe *engine.QueryError
	var changed *catalog.ErrSourceChanged
	// The same redaction as the log's (redact.ReplaceAttr): a backend
	// that echoes a request's Authorization header must not hand its key
	// id to the caller.
	msg := redact.Text(catalog.RedactURI(err.Error()))
	switch {
	case errors.As(err, &pt) && pt.Stale:
		return &apiError{status: http.StatusConflict, code: CodeStaleToken, msg: msg}
	case errors.As(err, &pt):
		return &apiError{status: http.StatusBadRequest, code: CodeInvalidToken, msg: msg}
	case errors.As(err, &ve):
		return &apiError{status: http.StatusBadRequest, code: CodeQueryRejected, msg: msg}
	case errors.Is(err, engine.ErrBusy):
		return &apiError{status: http.StatusServiceUnavailable, code: CodeBusy, msg: msg}
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusRequestTimeout, code: CodeQueryTimeout, msg: msg}
	case errors.Is(err, context.Canceled):
		return &apiError{status: 499, code: CodeRequestCancelled, msg: msg}
	case errors.As(err, &qe) && qe.Kind == engine.KindStatement:
		return &apiError{status: http.StatusBadRequest, code: CodeQueryError, msg: msg}
	case errors.As(err, &qe) && qe.Kind == engine.KindResources:
		return &apiError{status: http.StatusUnprocessableEntity, code: CodeQueryResources, msg: msg}
	case errors.Is(err, engine.ErrTooManyRows):
		return &apiError{status: http.StatusUnprocessableEntity, code: CodeQueryResources, msg: msg}
	case errors.Is(err, engine.ErrAmbiguous):
		return &apiError{status: http.StatusConflict, code: CodeAmbiguous, msg: msg}
	case errors.As(err, &changed):
		return &apiError{status: http.StatusConflict, code: CodeSourceChanged, msg: msg}
	case errors.Is(err, catalog.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: msg}
	case errors.Is(err, errNotReady):
		return &apiError{status: http.StatusServiceUnavailable, code: CodeNotReady, msg: msg}
	}
	return &apiError{status: http.StatusInternalServerError, code: CodeInternal, msg: msg}
}

// pathsHidden is an error whose text names files by their _file_ and the
// Snapshot's temp directory by a mark, never by the server's paths: parse
// errors and OS errors below name the absolute path they opened.
type pathsHidden struct {
	msg string
	err error
}

func (e *pathsHidden) Error() string { return e.msg }
func (e *pathsHidden) Unwrap() error { return e.err }

// hidePaths rewrites err's text for an answer from snap: a path under a
// Dataset's local root becomes the _file_ it is, one under the temp
// directory "[snapshot]".
func hidePaths(snap *catalog.Snapshot, err error) error {
	if snap == nil {
		return err
	}
	var pairs []string
	for _, d := range snap.Datasets {
		if filepath.IsAbs(d.Root) {
			pairs = append(pairs, strings.TrimSuffix(d.Root, "/")+"/", "")
		}
	}
	if snap.TempDir != "" {
		pairs = append(pairs, snap.TempDir, "[snapshot]")
	}
	hide := strings.NewReplacer(pairs...).Replace
	var ae *apiError
	if errors.As(err, &ae) {
		return &apiError{status: ae.status, code: ae.code, msg: hide(ae.msg), extra: ae.extra}
	}
	if msg := err.Error(); hide(msg) != msg {
		return &pathsHidden{msg: hide(msg), err: err}
	}
	return err
}

// errNotReady is what a runtime without a published generation answers.
var errNotReady = errors.New("no snapshot is published yet")

// ErrNotReady can be returned by a Runtime's Acquire before the first
// generation is published.
var ErrNotReady = errNotReady

type errorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if ae.code == CodeBusy {
		w.Header().Set("Retry-After", "1")
	}
	if ae.status >= 500 && ae.code != CodeBusy && ae.code != CodeNotReady {
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()), "code", ae.code, "error", ae.msg)
	}
	body := map[string]any{"code": ae.code, "message": ae.msg, "request_id": requestID(r.Context())}
	for k, v := range ae.extra {
		body[k] = v
	}
	writeJSON(w, ae.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true) // trajectory text is hostile: never let it read as markup
	enc.Encode(v)
}

// etagMatches reports whether an If-None-Match header matches tag.
func etagMatches(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == tag || t == "W/"+tag {
			return true
		}
	}
	return false
}

// intParam reads an integer query parameter within [lo, hi], def when absent.
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("parameter %s=%q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
}
