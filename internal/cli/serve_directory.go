package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/generation"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/redact"
	"github.com/pchronicle/pchronicle/internal/server"
	"github.com/pchronicle/pchronicle/internal/serving"
	"github.com/pchronicle/pchronicle/internal/worker"
)

// serve with a Directory (docs/directory.md): the parent authenticates,
// answers the Directory routes and hands every authorized data-plane
// request to a one-shot worker process; it never opens a Dataset itself.

// workerOptions are the serve settings every worker gets: catalog and
// query limits by setting name, and the server's own caps.
type workerOptions struct {
	Catalog         map[string]string `json:"catalog"`
	MaxResponseRows int64             `json:"max_response_rows"`
}

func (sf serveFlags) workerOptions(ds *datasetFlags) (jsonx.RawMessage, error) {
	o := workerOptions{Catalog: map[string]string{}, MaxResponseRows: sf.maxRows}
	for name, v := range ds.options {
		o.Catalog[name] = *v
	}
	// A worker holds only its user's Datasets: a normalization cache shared
	// by every worker would give each one the normalized rows of every
	// other user's (docs/directory.md).
	o.Catalog["cache_dir"], o.Catalog["no_cache"] = "", "true"
	return json.Marshal(o)
}

// directoryHandler is the front-only parent's handler.
func directoryHandler(ctx context.Context, log *slog.Logger, path string, sf serveFlags, ds *datasetFlags, ui http.Handler) (http.Handler, func(), error) {
	w, err := directory.Watch(path, log)
	if err != nil {
		return nil, nil, fmt.Errorf("--catalog-config: %w", err)
	}
	go w.Run(ctx, directory.ReloadInterval)
	opts, err := sf.workerOptions(ds)
	if err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	// Every worker runs its own DuckDB instances: the query bounds of plain
	// serve bound the workers answering at once and the requests waiting.
	spawner := &worker.Spawner{Path: exe, Timeout: sf.workerTimeout, Warm: sf.warmWorkers, Log: log,
		MaxRunning: sf.concurrent, MaxQueued: sf.queue}
	if wrapper := os.Getenv(worker.WrapperEnv); wrapper != "" {
		log.Warn("test hook: query workers start through a wrapper program", "variable", worker.WrapperEnv, "wrapper", wrapper)
		spawner.Path, spawner.Args = wrapper, append([]string{exe}, worker.Args...)
	}
	spawner.Prestart()
	mux := http.NewServeMux()
	dirHandler := &directory.Handler{ACL: w, RequestID: server.RequestID, Log: log}
	mux.Handle(directory.DatasetsPath, dirHandler)
	mux.Handle(directory.DatasetsPath+"/", dirHandler)
	mux.Handle("/api/", &worker.DataPlane{ACL: w, Runner: spawner, Options: opts, RequestID: server.RequestID, Log: log})
	// The probes answer without keys and without a worker: the parent is
	// alive, and ready once it holds a valid ACL (it does from the start).
	probe := func(body func() map[string]any) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				rw.Header().Set("Allow", "GET, HEAD")
				directory.WriteError(rw, http.StatusMethodNotAllowed, directory.CodeMethodNotAllowed,
					r.Method+" is not allowed on "+r.URL.Path+" (allowed: GET)", server.RequestID(r))
				return
			}
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(body())
		}
	}
	mux.Handle("/health", probe(func() map[string]any { return map[string]any{"status": "ok", "version": Version} }))
	mux.Handle("/ready", probe(func() map[string]any {
		return map[string]any{"status": "ready", "directory_revision": w.ACL().Revision()}
	}))
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		if ui != nil {
			ui.ServeHTTP(rw, r)
			return
		}
		directory.WriteError(rw, http.StatusNotFound, directory.CodeNotFound, "not found: "+r.URL.Path, server.RequestID(r))
	})
	return server.Logged(log, mux), spawner.Close, nil
}

// serveWorker is the hidden worker mode: one job on stdin, its answer on
// stdout, then exit. It opens exactly the mounts of its job, and writes
// nothing to any Dataset (no projection supervisor).
//
// The SQL parser (a DuckDB instance of its own, tens of milliseconds to
// open) is opened before the job is read, so a warm worker has it ready
// when its job arrives. It holds nothing of any user: no mount, no key,
// no request.
func serveWorker(ctx context.Context, e *env) error {
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: redact.ReplaceAttr}))
	parser, parserErr := query.NewParser()
	if parserErr == nil {
		defer parser.Close()
	}
	return worker.Serve(ctx, e.stdin, e.stdout, func(ctx context.Context, job worker.Job) (http.Handler, func(), error) {
		if parserErr != nil {
			return nil, nil, parserErr
		}
		var wo workerOptions
		if len(job.Options) > 0 {
			if err := json.Unmarshal(job.Options, &wo); err != nil {
				return nil, nil, fmt.Errorf("worker options: %w", err)
			}
		}
		opts := catalog.DefaultOptions()
		for name, v := range wo.Catalog {
			if err := opts.Set(name, v); err != nil {
				return nil, nil, fmt.Errorf("worker options: %w", err)
			}
		}
		mounts := make([]catalog.DatasetMount, len(job.Mounts))
		for i, t := range job.Mounts {
			mounts[i] = catalog.DatasetMount{Namespace: []string{t.Name}, Alias: t.Name, URI: t.URI, Config: t.Store()}
		}
		limits := engine.LimitsFrom(opts)
		rt, err := generation.Start(ctx, generation.Config{Mounts: mounts, Options: opts, Limits: limits, Parser: parser, Logger: log})
		if err != nil {
			return nil, nil, unavailable{err}
		}
		sr := &serving.Runtime{}
		sr.Publish(rt)
		h := server.New(server.Config{Runtime: sr, Logger: log, Version: Version, MaxRows: wo.MaxResponseRows, MaxTimeout: limits.Timeout})
		return h, rt.Close, nil
	})
}

// unavailable answers a Dataset that cannot be opened with 503.
type unavailable struct{ error }

func (unavailable) HTTPStatus() int { return http.StatusServiceUnavailable }
func (u unavailable) Unwrap() error { return u.error }
