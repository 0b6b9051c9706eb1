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
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/generation"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/server"
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
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			return serve(cmd.Context(), e, ds, sf, args)
		}
		return cmd
	})
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
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
	mounts, positional, err := serveMounts(ds, args)
	if err != nil {
		return err
	}
	opts, err := ds.catalogOptions()
	if err != nil {
		return err
	}
	if err := checkListen(log, sf.listen); err != nil {
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
	rt := &servedRuntime{}
	srv := server.New(server.Config{Runtime: rt, Logger: log, Version: Version, MaxRows: sf.maxRows, MaxTimeout: limits.Timeout, UI: web.Handler()})
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info("listening; /ready answers 503 until the first snapshot is published", "url", url)
	started, err := generation.Start(ctx, cfg)
	if err != nil {
		hs.Close()
		return fmt.Errorf("building the first snapshot: %w", err)
	}
	rt.publish(started)
	defer started.Close()
	if sf.refreshEvery > 0 {
		started.Poll(sf.refreshEvery)
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

// servedRuntime adapts a generation.Runtime to the server's interfaces,
// answering "not ready" until the first generation is published.
type servedRuntime struct {
	rt atomic.Pointer[generation.Runtime]
}

func (s *servedRuntime) publish(rt *generation.Runtime) { s.rt.Store(rt) }

func (s *servedRuntime) Acquire() (server.Generation, func(), error) {
	rt := s.rt.Load()
	if rt == nil {
		return nil, nil, server.ErrNotReady
	}
	g, release, err := rt.Acquire()
	if errors.Is(err, generation.ErrClosed) {
		return nil, nil, server.ErrNotReady
	}
	if err != nil {
		return nil, nil, err
	}
	return servedGeneration{g}, release, nil
}

func (s *servedRuntime) Refresh(ctx context.Context) (any, error) {
	rt := s.rt.Load()
	if rt == nil {
		return nil, server.ErrNotReady
	}
	return rt.Refresh(ctx, generation.TriggerAPI, true)
}

func (s *servedRuntime) Status() any {
	if rt := s.rt.Load(); rt != nil {
		return rt.Status()
	}
	return nil
}

// servedGeneration gives a generation the server's StorylineReader.
type servedGeneration struct{ *generation.Generation }

func (g servedGeneration) StorylineReader() server.StorylineReader { return g.Storylines() }
