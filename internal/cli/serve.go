package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/generation"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/redact"
	"github.com/pchronicle/pchronicle/internal/server"
	"github.com/pchronicle/pchronicle/internal/serving"
	"github.com/pchronicle/pchronicle/internal/web"
)

// serveFlags are serve's own settings beside the shared Dataset flags.
type serveFlags struct {
	listen        string
	refreshEvery  time.Duration
	maxRows       int64
	concurrent    int
	queue         int
	logFormat     string
	logLevel      string
	shutdownGrace time.Duration
	// The Directory (serve_directory.go).
	catalogConfig string
	worker        bool
	workerTimeout time.Duration
	warmWorkers   int
}

func init() {
	register(func(e *env) *cobra.Command {
		var sf serveFlags
		cmd := &cobra.Command{
			Use:   "serve [NAME=]DATASET...",
			Short: "Serve Datasets over HTTP: a read-only REST API over one shared Snapshot",
			Long: `Keep Datasets open and serve them over HTTP (docs/http-api.md): the catalog, paged
sources and runs, whole Storylines page by page, search, and read-only SQL
with the same sandbox as "query". Every request answers from one Snapshot;
a refresh (POST /api/catalog, or --refresh-every) builds a complete new one
off the request path and swaps it in atomically, and a failed refresh keeps
the old one serving.

One unnamed DATASET is the default Dataset "dataset" (unqualified SQL names
resolve to it); several must be named: NAME=DATASET (or --mount). A DATASET
is a path, an s3:// az:// gs:// URI, or @pin.

The listener is loopback only by default. Binding another address is
possible with --listen, but the server has no authentication of its own:
the network boundary is then yours to enforce.

Canonical events stores (events.lance) of local Datasets get their
Storyline projection kept up to date: at start, and whenever a store has
been idle after new events; that is the server's only write.`,
			Example: `  pchronicle serve ./runs
  pchronicle serve live=./capture archive=s3://evals/archive --listen 127.0.0.1:9000
  pchronicle serve ./capture --refresh-every 5s`,
		}
		ds := addDatasetFlags(cmd)
		f := cmd.Flags()
		f.StringVar(&sf.listen, "listen", "127.0.0.1:8080", "address to listen on (loopback by default)")
		f.DurationVar(&sf.refreshEvery, "refresh-every", 0, "poll for new or changed sources this often and publish a new Snapshot when something changed (0 = only on POST /api/catalog)")
		f.Int64Var(&sf.maxRows, "max-response-rows", 10000, "most rows one /api/query response returns (a request may ask fewer; more rows are cut and the answer says truncated)")
		f.IntVar(&sf.concurrent, "max-concurrent-queries", runtime.NumCPU(), "DuckDB instances that may run queries at once (each up to --memory-limit)")
		f.IntVar(&sf.queue, "query-queue", 32, "queries that may wait for an instance; beyond that a request gets 503 with Retry-After")
		f.StringVar(&sf.logFormat, "log-format", "text", "log format on stderr: text or json")
		f.StringVar(&sf.logLevel, "log-level", "info", "log level: debug, info, warn or error")
		f.DurationVar(&sf.shutdownGrace, "shutdown-grace", 30*time.Second, "how long SIGINT/SIGTERM waits for in-flight requests")
		f.StringVar(&sf.catalogConfig, "catalog-config", "", "serve a Directory (docs/directory.md): authenticate users, answer ticket exchanges, and run each authorized request in a one-shot worker that opens only that user's datasets; no DATASET arguments")
		f.DurationVar(&sf.workerTimeout, "worker-timeout", 5*time.Minute, "with --catalog-config: how long one worker may take to answer")
		f.IntVar(&sf.warmWorkers, "warm-workers", 2, "with --catalog-config: workers started ahead, waiting for their job (each serves one request)")
		f.BoolVar(&sf.worker, "catalog-query-worker", false, "internal: serve one request from stdin")
		f.MarkHidden("catalog-query-worker")
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			if sf.worker {
				return serveWorker(cmd.Context(), e)
			}
			return serve(cmd.Context(), e, ds, sf, args)
		}
		cmd.AddCommand(serveCatalogCommand(e))
		return cmd
	})
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	// Every line passes through the redaction the error bodies use.
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redact.ReplaceAttr}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// serveMounts turns serve's arguments into mounts: one unnamed Dataset is
// the default "dataset"; NAME=DATASET arguments (and --mount) are named.
func serveMounts(ds *datasetFlags, args []string) ([]catalog.DatasetMount, bool, error) {
	if len(args) == 1 && !strings.Contains(args[0], "=") {
		return ds.mountList(args[0])
	}
	for _, a := range args {
		if !strings.Contains(a, "=") {
			return nil, false, fmt.Errorf("Dataset %q has no name: with several Datasets each is NAME=DATASET", a)
		}
	}
	ds.mounts = append(ds.mounts, args...)
	return ds.mountList("")
}

// checkListen warns about an address other than loopback.
func checkListen(log *slog.Logger, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	if !loopback {
		log.Warn("listening beyond loopback: pchronicle serve has no authentication of its own; the network boundary is yours to enforce", "listen", addr)
	}
	return nil
}

func serve(ctx context.Context, e *env, ds *datasetFlags, sf serveFlags, args []string) error {
	log, err := newLogger(e.stderr, sf.logFormat, sf.logLevel)
	if err != nil {
		return err
	}
	if err := checkListen(log, sf.listen); err != nil {
		return err
	}
	if sf.catalogConfig != "" {
		if len(args) > 0 || len(ds.mounts) > 0 {
			return fmt.Errorf("--catalog-config serves the Directory's datasets: give no DATASET arguments or --mount")
		}
		if _, err := ds.catalogOptions(); err != nil {
			return err
		}
		h, stop, err := directoryHandler(ctx, log, sf.catalogConfig, sf, ds, web.DirectoryHandler())
		if err != nil {
			return err
		}
		defer stop()
		return listenAndServe(ctx, e, log, sf, withMCP(h), sf.workerTimeout, nil)
	}
	mounts, positional, err := serveMounts(ds, args)
	if err != nil {
		return err
	}
	opts, err := ds.catalogOptions()
	if err != nil {
		return err
	}
	parser, err := query.NewParser()
	if err != nil {
		return err
	}
	defer parser.Close()
	limits := engine.LimitsFrom(opts)
	cfg := generation.Config{Mounts: mounts, Positional: positional, Options: opts, Limits: limits,
		Gate: engine.NewGate(sf.concurrent, sf.queue), Parser: parser, Logger: log, Supervise: true}
	rt := &serving.Runtime{}
	srv := server.New(server.Config{Runtime: rt, Logger: log, Version: Version, MaxRows: sf.maxRows, MaxTimeout: limits.Timeout, UI: web.Handler()})
	return listenAndServe(ctx, e, log, sf, withMCP(srv), limits.Timeout, func() (func(), error) {
		started, err := generation.Start(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("building the first snapshot: %w", err)
		}
		rt.Publish(started)
		if sf.refreshEvery > 0 {
			started.Poll(sf.refreshEvery)
		}
		return started.Close, nil
	})
}

// listenAndServe listens first (so /ready can say "not yet"), then runs
// startup (nil: nothing to build), serves until ctx ends, and drains
// in-flight requests for at most the grace period. longest is the longest
// run an answer may wait for, which the write timeout must allow.
func listenAndServe(ctx context.Context, e *env, log *slog.Logger, sf serveFlags, h http.Handler, longest time.Duration, startup func() (func(), error)) error {
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		return err
	}
	hs := server.HTTPServer(h, server.DefaultTimeouts(longest), slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	if startup != nil {
		log.Info("listening; /ready answers 503 until the first snapshot is published", "url", url)
		stop, err := startup()
		if err != nil {
			hs.Close()
			return err
		}
		defer stop()
	}
	fmt.Fprintf(e.stderr, "pchronicle serving %s\n", url)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests", "grace", sf.shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), sf.shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
