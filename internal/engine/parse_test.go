package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/query"
)

// TestEngineWithoutParserParsesOnItsLockedInstance: an engine without a
// parser of its own (a one-shot command's) hands user SQL only to an
// instance whose sandbox is already locked, makes the instance's schemas
// after the parse, and passes the SQL text to the worker as an argument,
// so that a quote or a second statement in it stays text.
func TestEngineWithoutParserParsesOnItsLockedInstance(t *testing.T) {
	ctx := context.Background()
	opts := catalog.DefaultOptions()
	opts.Threads = 1
	snap, err := catalog.Build(ctx, []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: fixture(t, 2)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := New(snap, nil, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
	t.Cleanup(func() { e.Close(); snap.Close() })

	inst, err := e.fresh(ctx, nil, e.cfg.Limits)
	if err != nil {
		t.Fatal(err)
	}
	var locked, external, autoload, autoinstall, threads string
	if err := inst.conn.QueryRowContext(ctx, `SELECT current_setting('lock_configuration')::VARCHAR, current_setting('enable_external_access')::VARCHAR,
		current_setting('autoload_known_extensions')::VARCHAR, current_setting('autoinstall_known_extensions')::VARCHAR, current_setting('threads')::VARCHAR`).Scan(&locked, &external, &autoload, &autoinstall, &threads); err != nil {
		t.Fatal(err)
	}
	if locked != "true" || external != "false" || autoload != "false" || autoinstall != "false" {
		t.Fatalf("the instance a query parses on has lock_configuration=%s, enable_external_access=%s, autoload_known_extensions=%s, autoinstall_known_extensions=%s; want true, false, false, false",
			locked, external, autoload, autoinstall)
	}
	if want := e.cfg.Limits.Threads; threads != strconv.Itoa(want) {
		t.Fatalf("threads=%s, want the limits' %d (set as the worker opens DuckDB)", threads, want)
	}
	if len(inst.schema) == 0 {
		t.Fatal("the schemas were made before the query parsed its SQL")
	}
	var n int
	if err := inst.conn.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'dataset'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("schema dataset present before the parse (%d, %v)", n, err)
	}
	e.release(inst, true)

	// The same answers and rejections as an engine with a shared parser.
	_, shared := open(t, snap.Datasets[0].Mount.URI, catalog.DefaultOptions())
	for _, sql := range []string{
		"SELECT count(*) FROM steps",
		"SELECT _file_, count(*) FROM runs WHERE _file_ = 'a/f000.jsonl' GROUP BY 1",
		"SELECT 'it''s'",
		"SELECT '1'); COPY steps TO '/tmp/x.csv'; SELECT ('",
		"SELECT 1; SELECT 2",
		"COPY steps TO '/tmp/x.csv'",
		"SELECT * FROM read_text('/etc/passwd')",
		"SELEC 1",
		"EXPLAIN SELECT count(*) FROM tool_calls", // plans may differ: a batch's files are per worker
		"SELECT count(*) FROM steps",              // the analysis is reused, and the instance
	} {
		want, wantErr := shared.Query(ctx, sql, QueryOptions{})
		got, err := e.Query(ctx, sql, QueryOptions{})
		var rejected *query.ValidationError
		switch {
		case wantErr != nil:
			if err == nil || err.Error() != wantErr.Error() || errors.As(err, &rejected) != errors.As(wantErr, &rejected) {
				t.Errorf("%s: got %v, want %v", sql, err, wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", sql, err)
		case strings.HasPrefix(sql, "EXPLAIN"):
			if fmt.Sprint(got.Columns) != fmt.Sprint(want.Columns) || len(got.Rows) != len(want.Rows) {
				t.Errorf("%s: got %v and %d rows, want %v and %d", sql, got.Columns, len(got.Rows), want.Columns, len(want.Rows))
			}
		case fmt.Sprint(got.Columns, got.Rows) != fmt.Sprint(want.Columns, want.Rows):
			t.Errorf("%s: got %v %v, want %v %v", sql, got.Columns, got.Rows, want.Columns, want.Rows)
		}
	}
	for _, sql := range []string{"SELECT 1; SELECT 2", "SELECT * FROM read_text('/etc/passwd')"} {
		var rejected *query.ValidationError
		if _, err := e.Query(ctx, sql, QueryOptions{}); !errors.As(err, &rejected) {
			t.Errorf("%s: got %v, want a rejection", sql, err)
		}
	}
	an, err := e.Analyze(ctx, "SELECT * FROM tool_calls WHERE _file_ = 'b.jsonl'")
	if err != nil || len(an.Refs) != 1 || an.Refs[0].Relation != "tool_calls" {
		t.Fatalf("Analyze without a parser: %+v, %v", an, err)
	}
}

// TestPrefetchResolvesOnlyWhatThePlanWould: while a parserless engine's
// instance starts, it resolves ahead only what its query's plan resolves
// too, as an engine with a shared parser (which resolves nothing ahead)
// does: nothing for a statement that reads no rows, only the chosen
// source when the text narrows them (without a cache, nothing ahead),
// every source otherwise.
func TestPrefetchResolvesOnlyWhatThePlanWould(t *testing.T) {
	ctx := context.Background()
	resolves := func(p *query.Parser, sql string) int64 {
		snap, err := catalog.Build(ctx, []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: fixture(t, 4)}}, catalog.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		e := New(snap, p, Config{Positional: true, Limits: LimitsFrom(snap.Options)})
		defer e.Close()
		if _, err := e.Query(ctx, sql, QueryOptions{}); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
		return snap.Resolves()
	}
	for _, c := range []struct {
		sql  string
		want int64
	}{
		{"DESCRIBE steps", 0},
		{"SHOW TABLES", 0},
		{"SELECT count(*) FROM steps WHERE _file_ = 'a/f000.jsonl'", 1},
		{"SELECT count(*) FROM runs r JOIN steps s USING (_file_, session_id) WHERE r._file_ IN ('a/f000.jsonl', 'b/f001.jsonl')", 2},
		{"SELECT count(*) FROM steps", 4},
		{"  (SELECT count(*) FROM tool_calls)", 4},
	} {
		if got, shared := resolves(nil, c.sql), resolves(parser, c.sql); got != c.want || shared != c.want {
			t.Errorf("%s: %d sources normalized, with a shared parser %d; want %d", c.sql, got, shared, c.want)
		}
	}
}
