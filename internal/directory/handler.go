package directory

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/redact"
)

// DatasetsPath is the Directory route: the list, and with /{name} the ticket
// exchange.
const DatasetsPath = "/api/v1/catalog/datasets"

// Stable error codes of the JSON error body.
const (
	CodeUnauthorized     = "unauthorized"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeBadRequest       = "bad_request"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// ACLSource hands out the current ACL (a *Watcher, or a fixed *ACL).
type ACLSource interface{ ACL() *ACL }

// RequestIDFunc returns the id the server gave a request, for error bodies
// and logs; the server's request-id middleware supplies it.
type RequestIDFunc func(*http.Request) string

// Of returns r's id; without a RequestIDFunc, "".
func (f RequestIDFunc) Of(r *http.Request) string {
	if f == nil {
		return ""
	}
	return f(r)
}

// Handler serves the Directory routes: GET DatasetsPath (the Datasets the
// caller may see) and GET DatasetsPath/{name} (the ticket exchange). Mount it
// at DatasetsPath and DatasetsPath+"/".
type Handler struct {
	ACL       ACLSource
	RequestID RequestIDFunc // nil: no request ids
	Log       *slog.Logger  // nil: slog.Default()
}

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// WriteError answers with status and the JSON error body, its message
// redacted as the log is.
func WriteError(w http.ResponseWriter, status int, code, message, requestID string) {
	writeJSON(w, status, ErrorBody{Code: code, Message: redact.Text(message), RequestID: requestID})
}

// writeJSON escapes <, > and & too (encoding/json's default), so that text
// taken from a request can never read as markup.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only plain structs of strings are written here
		status, body = http.StatusInternalServerError, []byte(`{"code":"internal","message":"cannot encode the answer","request_id":""}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// listBody is the answer of GET DatasetsPath.
type listBody struct {
	User     string    `json:"user,omitempty"` // the authenticated user; absent for anonymous callers
	Datasets []Listing `json:"datasets"`
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := h.RequestID.Of(r)
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	name, isTicket := strings.CutPrefix(r.URL.Path, DatasetsPath+"/")
	if !isTicket && r.URL.Path != DatasetsPath || isTicket && (name == "" || strings.Contains(name, "/")) {
		WriteError(w, http.StatusNotFound, CodeNotFound, "no such route", rid)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		WriteError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use GET", rid)
		return
	}
	acl := h.ACL.ACL()
	p, err := acl.Authenticate(r.Header)
	if err != nil {
		log.Info("catalog request refused", "request_id", rid, "status", http.StatusUnauthorized)
		WriteError(w, http.StatusUnauthorized, CodeUnauthorized, err.Error(), rid)
		return
	}
	if !isTicket {
		writeJSON(w, http.StatusOK, listBody{User: p.User, Datasets: acl.Listings(p)})
		return
	}
	t, err := acl.Ticket(p, name)
	switch {
	case errors.Is(err, ErrNotFound):
		log.Info("catalog ticket refused", "request_id", rid, "user", p.User, "dataset", name, "status", http.StatusNotFound)
		WriteError(w, http.StatusNotFound, CodeNotFound, "dataset "+QuoteName(name)+" not found", rid)
		return
	case errors.Is(err, ErrKeysRequired):
		WriteError(w, http.StatusUnauthorized, CodeUnauthorized, err.Error(), rid)
		return
	}
	log.Info("catalog ticket issued", "request_id", rid, "user", p.User, "dataset", name)
	// A ticket may carry backend keys: no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, t)
}

// QuoteName quotes a name taken from a request for an error message,
// bounded so that a long path cannot bloat the answer.
func QuoteName(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	b, _ := jsonx.Marshal(s)
	return string(b)
}
