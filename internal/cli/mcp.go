package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/generation"
	"github.com/pchronicle/pchronicle/internal/mcp"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/server"
	"github.com/pchronicle/pchronicle/internal/serving"
)

func init() {
	register(func(e *env) *cobra.Command {
		var logLevel string
		cmd := &cobra.Command{
			Use:   "mcp [NAME=]DATASET...",
			Short: "Serve Datasets to an AI agent over MCP (stdio)",
			Long: `Serve Datasets to an AI agent as an MCP server (docs/mcp.md) on stdin and
stdout: tools to list the Datasets and the relations' schema, run read-only
SQL (sandboxed, row-capped, time-limited like "query"), find Storylines,
read one page by page and compare two runs.

DATASET, NAME=DATASET, --mount and the limits are those of "serve" and
"query". Register it with an MCP client as a command, e.g.
  {"command": "pchronicle", "args": ["mcp", "/path/to/runs"]}
Logs go to stderr; stdout carries the protocol only. "pchronicle serve"
serves the same tools over streamable HTTP at /mcp.`,
			Example: `  pchronicle mcp ./runs
  pchronicle mcp prod=s3://evals/prod dev=./dev --timeout 30s`,
			Args: cobra.MinimumNArgs(0),
		}
		ds := addDatasetFlags(cmd)
		cmd.Flags().StringVar(&logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(e.stderr, "text", logLevel)
			if err != nil {
				return err
			}
			api, stop, err := localAPI(cmd.Context(), ds, args, log)
			if err != nil {
				return err
			}
			defer stop()
			srv := mcp.New(mcp.Config{API: api, Version: Version})
			return srv.Run(cmd.Context(), &sdk.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopCloser{e.stdout}})
		}
		return cmd
	})
}

// localAPI is the HTTP API over the Datasets of args, as serve builds it
// (without a listener or the projection supervisor: nothing is written).
func localAPI(ctx context.Context, ds *datasetFlags, args []string, log *slog.Logger) (http.Handler, func(), error) {
	mounts, positional, err := serveMounts(ds, args)
	if err != nil {
		return nil, nil, err
	}
	opts, err := ds.catalogOptions()
	if err != nil {
		return nil, nil, err
	}
	parser, err := query.NewParser()
	if err != nil {
		return nil, nil, err
	}
	limits := engine.LimitsFrom(opts)
	cfg := generation.Config{Mounts: mounts, Positional: positional, Options: opts, Limits: limits,
		Gate: engine.NewGate(runtime.NumCPU(), 32), Parser: parser, Logger: log}
	started, err := generation.Start(ctx, cfg)
	if err != nil {
		parser.Close()
		return nil, nil, err
	}
	rt := &serving.Runtime{}
	rt.Publish(started)
	api := server.New(server.Config{Runtime: rt, Logger: log, Version: Version, MaxTimeout: limits.Timeout})
	return api, func() { started.Close(); parser.Close() }, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// withMCP serves the MCP tools over streamable HTTP at /mcp beside h, whose
// API they call with the caller's Directory keys (if any). A browser page
// of another origin is refused: it must not drive a local server's tools.
func withMCP(h http.Handler) http.Handler {
	m := mcp.New(mcp.Config{API: h, Version: Version, Credentials: []string{directory.HeaderAccessKey, directory.HeaderSecretKey}}).Handler()
	// Not a ServeMux: it would clean and redirect the paths h answers.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			h.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				http.Error(w, "cross-origin requests to /mcp are refused", http.StatusForbidden)
				return
			}
		}
		m.ServeHTTP(w, r)
	})
}
