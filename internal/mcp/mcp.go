// Package mcp is pchronicle's MCP server (docs/mcp.md): tools with which an
// agent lists the Datasets and the relations' schema, runs read-only SQL,
// finds Storylines, reads one page by page and compares two runs.
//
// Every tool call is a request to the HTTP API it is given (internal/
// server, or the Directory's front), made in process with the caller's
// credentials: the tools have exactly the API's sandbox, caps, limits and
// errors, and under a Directory each call runs in the caller's own worker
// and sees only the caller's Datasets. The package knows nothing else: it
// never opens a store, an adapter or DuckDB.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config sets up a Server.
type Config struct {
	// API answers the tools' requests: the HTTP API's handler.
	API     http.Handler
	Version string
	// Credentials are the request headers a call over HTTP passes on to
	// the API (the Directory's keys); nothing else of the caller's request
	// reaches it.
	Credentials []string
}

// Server is the MCP server: its tools over the API.
type Server struct {
	cfg Config
	srv *sdk.Server
}

// Bounds of what one tool call returns, so an answer fits an agent's
// context: rows of a query, steps of a page, characters of a cell or body
// (a longer one comes as a preview with its true size).
const (
	defaultQueryRows = 100
	maxQueryRows     = 1000
	defaultPageSteps = 10
	maxPageSteps     = 50
	defaultMaxChars  = 2000
	maxAnswerBytes   = 8 << 20
)

// New returns the server with its tools.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, srv: sdk.NewServer(&sdk.Implementation{Name: "pchronicle", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "pchronicle holds AI-agent trajectories (Storylines: a run with its steps and tool calls) from many formats in one SQL model. " +
			"Start with list_datasets and describe_relations; find_storylines and read_storyline browse; query runs read-only DuckDB SQL; compare_runs aligns two runs.",
	})}
	s.tools()
	return s
}

// Run serves the tools over one connection (stdio) until it closes.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error { return s.srv.Run(ctx, t) }

// Handler serves the tools over streamable HTTP (the /mcp route), one
// stateless exchange per request: every call carries its own credentials.
func (s *Server) Handler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// ToolError is what a tool reports to the agent: the API's stable code,
// its message, and what to do about it.
type ToolError struct {
	Code    string
	Message string
	Hint    string
}

func (e *ToolError) Error() string {
	if e.Hint == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + ": " + e.Message + " (" + e.Hint + ")"
}

// hints say what an agent can do about an API error, by its code.
var hints = map[string]string{
	"query_rejected":           "only one read-only SELECT over the Datasets' relations is allowed; the message says what to change",
	"query_error":              "fix the SQL; describe_relations lists the columns",
	"query_timeout":            "narrow the query (a _file_ or session_id filter, a LIMIT) or pass a larger timeout_ms",
	"query_resources_exceeded": "aggregate or filter more, or select fewer columns",
	"not_found":                "find_storylines lists the Storylines and their dataset, _file_ and session_id",
	"ambiguous_storyline":      "give dataset as well",
	"bad_request":              "check the arguments against the tool's schema",
	"busy":                     "the server runs its most queries at once: try again shortly",
}

// call sends one request to the API with the caller's credentials and
// decodes its JSON answer; an error answer is a *ToolError.
func (s *Server) call(ctx context.Context, req *sdk.CallToolRequest, method, path string, params url.Values, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	r, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	r.RemoteAddr = "127.0.0.1:0" // the tool's own request, in process
	r.Header.Set("Accept", "application/json")
	if req != nil && req.Extra != nil {
		for _, h := range s.cfg.Credentials {
			if v := req.Extra.Header.Get(h); v != "" {
				r.Header.Set(h, v)
			}
		}
	}
	w := &answer{header: http.Header{}, status: http.StatusOK}
	s.cfg.API.ServeHTTP(w, r)
	if w.over {
		return nil, &ToolError{Code: "answer_too_large", Message: fmt.Sprintf("the answer is larger than %d bytes", maxAnswerBytes), Hint: "ask for fewer rows or steps"}
	}
	var out map[string]any
	if err := json.Unmarshal(w.body.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("%s %s: status %d, not a JSON object: %.200s", method, path, w.status, w.body.Bytes())
	}
	if w.status >= 400 {
		code, _ := out["code"].(string)
		msg, _ := out["message"].(string)
		return nil, &ToolError{Code: code, Message: msg, Hint: hints[code]}
	}
	delete(out, "request_id")
	return out, nil
}

// answer is the in-process response of an API request, bounded.
type answer struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
	over   bool
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(status int) {
	if !a.wrote {
		a.status, a.wrote = status, true
	}
}

func (a *answer) Write(p []byte) (int, error) {
	a.wrote = true
	if a.body.Len()+len(p) > maxAnswerBytes {
		a.over = true
		return 0, errors.New("answer too large")
	}
	return a.body.Write(p)
}

// clip cuts every string in v longer than max characters to a preview
// that says its true size, and counts the strings it cut.
func clip(v any, max int, cut *int) any {
	switch t := v.(type) {
	case string:
		if utf8.RuneCountInString(t) <= max {
			return t
		}
		*cut++
		r := []rune(t)
		return string(r[:max]) + "… [" + strconv.Itoa(len(t)) + " bytes in all]"
	case []any:
		for i := range t {
			t[i] = clip(t[i], max, cut)
		}
	case map[string]any:
		for k := range t {
			t[k] = clip(t[k], max, cut)
		}
	}
	return v
}

func bounded(v, def, max int) int {
	switch {
	case v <= 0:
		return def
	case v > max:
		return max
	}
	return v
}

func setIf(p url.Values, k, v string) {
	if v != "" {
		p.Set(k, v)
	}
}
