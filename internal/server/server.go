// Package server is pchronicle serve's HTTP layer: a read-only JSON API
// over the current generation of a runtime (docs/http-api.md). It knows
// the runtime only through the small interfaces below and never opens a
// store, an adapter or DuckDB itself. Every request acquires one
// generation and answers from it alone, so one response never mixes two
// Snapshots, and a refresh never changes data under a running request.
//
// The server is an http.Handler and holds no per-connection state, so the
// same routes can serve a request that arrives on a worker process's stdin
// as well as one from the listener.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/route"
)

// Runtime publishes generations.
type Runtime interface {
	// Acquire returns the current generation and its release function.
	Acquire() (Generation, func(), error)
	// Refresh builds and publishes a new generation (POST /api/catalog);
	// the report is JSON-encodable.
	Refresh(ctx context.Context) (any, error)
	// Status is the runtime's state for GET /api/catalog (JSON-encodable).
	Status() any
}

// Generation is one immutable view of the mounted Datasets.
type Generation interface {
	ID() string
	Number() int64
	Built() time.Time
	Snapshot() *catalog.Snapshot
	Limits() engine.Limits
	Analyze(ctx context.Context, sql string) (*query.Analysis, error)
	Stream(ctx context.Context, sql string, opts engine.QueryOptions) (*engine.Rows, error)
	StreamArrow(ctx context.Context, sql string, opts engine.QueryOptions) (*engine.ArrowRows, error)
	Route(ctx context.Context, an *query.Analysis) route.Decision
	Acceleration() (built, failed []route.LayerState)
	Memo(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error)
	StorylineReader() StorylineReader
}

// StorylineReader reads one Storyline by its full identity.
type StorylineReader interface {
	Run(ctx context.Context, key engine.StorylineKey) (*model.Run, error)
	StepHeaders(ctx context.Context, key engine.StorylineKey, from, limit int64) ([]engine.StepHeader, error)
	StepBodies(ctx context.Context, key engine.StorylineKey, from, limit int64, maxChars int) ([]engine.StepBody, error)
	FindSteps(ctx context.Context, key engine.StorylineKey, text string, from, limit int64) ([]int64, error)
	Load(ctx context.Context, key engine.StorylineKey) (*model.Storyline, error)
	Events(ctx context.Context, key engine.StorylineKey) ([]model.Event, error)
}

// Config sets up a Server.
type Config struct {
	Runtime Runtime
	Logger  *slog.Logger
	Version string
	// MaxRows caps the rows of every query response (default 10,000); a
	// request may ask for fewer. EvidenceMaxRows caps /api/query/evidence
	// (default 100).
	MaxRows         int64
	EvidenceMaxRows int64
	// MaxTimeout caps a request's query timeout (default: the engine's).
	MaxTimeout time.Duration
	// UI serves everything outside /api/ and the probes (the Web
	// Explorer); nil answers 404 there.
	UI http.Handler
}

// Server is the HTTP API.
type Server struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
}

// New returns a server over cfg.Runtime.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = 10_000
	}
	if cfg.EvidenceMaxRows <= 0 {
		cfg.EvidenceMaxRows = 100
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	s.routes()
	return s
}

// ServeHTTP serves one request with a request id, access logging and
// panic recovery.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.middleware(s.mux).ServeHTTP(w, r)
}

// route is one API endpoint: a method, a path and its handler. Handlers of
// data routes get the generation the request acquired.
type routeDef struct {
	method, path string
	handle       func(w http.ResponseWriter, r *http.Request, g Generation) error
	// noGeneration routes (probes, refresh) do not acquire one up front.
	plain func(w http.ResponseWriter, r *http.Request) error
	// etag routes answer 304 to a matching If-None-Match.
	etag bool
}

// Routes lists every route, for the docs test and the 405 answers.
func (s *Server) Routes() []string {
	var out []string
	for _, rt := range s.table() {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}

func (s *Server) table() []routeDef {
	return []routeDef{
		{method: "GET", path: "/health", plain: s.health},
		{method: "GET", path: "/ready", plain: s.ready},
		{method: "GET", path: "/api/catalog", handle: s.getCatalog, etag: true},
		{method: "POST", path: "/api/catalog", plain: s.postCatalog},
		{method: "GET", path: "/api/namespaces", handle: s.namespaces, etag: true},
		{method: "GET", path: "/api/schema", plain: s.schema},
		{method: "GET", path: "/api/sources", handle: s.sources, etag: true},
		{method: "GET", path: "/api/source", handle: s.source, etag: true},
		{method: "GET", path: "/api/runs", handle: s.runs, etag: true},
		{method: "GET", path: "/api/storyline", handle: s.storyline, etag: true},
		{method: "GET", path: "/api/storyline/steps", handle: s.storylineSteps, etag: true},
		{method: "GET", path: "/api/storyline/bodies", handle: s.storylineBodies, etag: true},
		{method: "GET", path: "/api/storyline/find", handle: s.storylineFind, etag: true},
		{method: "GET", path: "/api/storyline/events", handle: s.storylineEvents, etag: true},
		{method: "GET", path: "/api/storyline/export", handle: s.storylineExport, etag: true},
		{method: "GET", path: "/api/storyline/text", handle: s.storylineText, etag: true},
		{method: "GET", path: "/api/compare", handle: s.compare, etag: true},
		{method: "GET", path: "/api/search", handle: s.search, etag: true},
		{method: "POST", path: "/api/query", handle: s.query},
		{method: "POST", path: "/api/query/evidence", handle: s.evidence},
	}
}

func (s *Server) routes() {
	byPath := map[string][]routeDef{}
	var order []string
	for _, rt := range s.table() {
		if byPath[rt.path] == nil {
			order = append(order, rt.path)
		}
		byPath[rt.path] = append(byPath[rt.path], rt)
	}
	for _, path := range order {
		defs := byPath[path]
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			for _, rt := range defs {
				if r.Method == rt.method || (r.Method == http.MethodHead && rt.method == http.MethodGet) {
					s.serve(w, r, rt)
					return
				}
			}
			allow := ""
			for i, rt := range defs {
				if i > 0 {
					allow += ", "
				}
				allow += rt.method
			}
			w.Header().Set("Allow", allow)
			s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
				msg: r.Method + " is not allowed on " + path + " (allowed: " + allow + ")"})
		})
	}
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: "not_found", msg: "no API route " + r.URL.Path})
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.UI != nil {
			s.cfg.UI.ServeHTTP(w, r)
			return
		}
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: "not_found", msg: "not found: " + r.URL.Path})
	})
}

// serve runs one route: it acquires the generation (data routes), answers
// 304 for a matching ETag, and maps a returned error to its status.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt routeDef) {
	if rt.plain != nil {
		if err := rt.plain(w, r); err != nil {
			s.writeError(w, r, err)
		}
		return
	}
	g, release, err := s.cfg.Runtime.Acquire()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	w.Header().Set("X-Snapshot-Id", g.ID())
	if rt.etag {
		tag := `"` + g.ID() + `"`
		w.Header().Set("ETag", tag)
		if etagMatches(r.Header.Get("If-None-Match"), tag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if err := rt.handle(w, r, g); err != nil {
		s.writeError(w, r, hidePaths(g.Snapshot(), err))
	}
}
