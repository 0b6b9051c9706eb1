package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// backend is one object store under test: the running server, a fresh
// bucket, the Dataset settings reaching it, and the URI scheme.
type backend struct {
	name  string
	start func(t *testing.T) (srv *testservers.Server, scheme, bucket string, cfg objstore.Config)
}

var backends = []backend{
	{"s3", func(t *testing.T) (*testservers.Server, string, string, objstore.Config) {
		s := testservers.StartS3(t)
		return s, "s3", s.NewS3Bucket(t, false), s.S3Config()
	}},
	{"s3-versioned", func(t *testing.T) (*testservers.Server, string, string, objstore.Config) {
		s := testservers.StartS3(t)
		return s, "s3", s.NewS3Bucket(t, true), s.S3Config()
	}},
	{"azure", func(t *testing.T) (*testservers.Server, string, string, objstore.Config) {
		s := testservers.StartAzurite(t)
		return s, "az", s.NewAzureContainer(t), s.AzureConfig()
	}},
	{"gcs", func(t *testing.T) (*testservers.Server, string, string, objstore.Config) {
		s := testservers.StartGCS(t)
		return s, "gs", s.NewGCSBucket(t), s.GCSConfig()
	}},
}

// openBackend starts be with a fresh bucket, logging its requests, and
// opens the bucket at the Dataset prefix ds/ (closed when the test ends).
func openBackend(t *testing.T, be backend) (b objstore.Bucket, uri string, cfg objstore.Config, log *requestLog) {
	t.Helper()
	_, scheme, bucket, cfg := be.start(t)
	log = &requestLog{next: http.DefaultTransport}
	cfg.Transport = log
	uri = fmt.Sprintf("%s://%s/ds/", scheme, bucket)
	b, _, err := objstore.Open(context.Background(), uri, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, uri, cfg, log
}

// requestLog counts the HTTP requests whose path or query names a string.
type requestLog struct {
	mu    sync.Mutex
	paths []string
	next  http.RoundTripper
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.paths = append(l.paths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

func (l *requestLog) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.paths {
		if strings.Contains(p, key) || strings.Contains(p, url.PathEscape(key)) {
			n++
		}
	}
	return n
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// mixedDataset writes the repo's example trajectories, a Storyline store
// and a canonical events store under a temp root.
func mixedDataset(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	examples := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	err := filepath.WalkDir(examples, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(examples, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, "files", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := storyline.OpenOrCreate(filepath.Join(root, "stores", "live"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	chats := filepath.Join(examples, "openai", "support-chats.jsonl")
	if _, err := ingest.NormalizeFile(ctx, chats, "imported/support-chats.jsonl", ingest.Options{}, w.Add); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ev, err := events.OpenOrCreate(filepath.Join(root, "agents", "run-1", "events.lance"))
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]string{{"s-a", "s-b"}, {"s-c"}} { // two segments
		if _, err := ev.Append(ctx, sessionEvents(batch...)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func sessionEvents(sessions ...string) []model.Event {
	var evs []model.Event
	for _, sid := range sessions {
		ev := func(seq int64, kind, payload string, call *string) model.Event {
			return model.Event{EventID: fmt.Sprintf("%s-%d", sid, seq), RunID: "run-" + sid, SessionID: sid, Seq: seq,
				TS: t0.Add(time.Duration(seq) * time.Second), Kind: kind, Payload: payload, ToolCallID: call}
		}
		evs = append(evs,
			ev(0, "run.start", `{"agent_name":"gen"}`, nil),
			ev(1, "message", `{"source":"user","content":"hi `+sid+`"}`, nil),
			ev(2, "tool.call", `{"name":"bash","arguments":{"cmd":"ls"}}`, model.Str("c1")),
			ev(3, "tool.result", `{"output":"ok"}`, model.Str("c1")),
			ev(4, "run.end", `{"status":"completed"}`, nil))
	}
	return evs
}

// upload copies the local tree to prefix in b.
func upload(t *testing.T, b objstore.Bucket, root, prefix string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = b.Put(context.Background(), prefix+filepath.ToSlash(rel), bytes.NewReader(data), int64(len(data)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func build(t *testing.T, m catalog.DatasetMount, opts catalog.Options) *catalog.Snapshot {
	t.Helper()
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{m}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap
}

// withoutPins strips what legitimately differs between a local and a remote
// copy: the pins, and the mtime of plain files (the upload time).
func withoutPins(rows []model.SourceRow) []model.SourceRow {
	out := append([]model.SourceRow(nil), rows...)
	for i := range out {
		out[i].SnapshotRef, out[i].RevisionKind = nil, nil
		if out[i].Kind == "file" {
			out[i].ModifiedAt = nil
		}
	}
	return out
}

var conformanceQueries = []string{
	`SELECT _file_, session_id, step_count, tool_call_count FROM dataset.runs ORDER BY ALL`,
	`SELECT _file_, count(*) FROM dataset.steps GROUP BY ALL ORDER BY ALL`,
	`SELECT _file_, count(*) FROM dataset.tool_calls GROUP BY ALL ORDER BY ALL`,
	`SELECT _file_, session_id, count(*) FROM dataset.events GROUP BY ALL ORDER BY ALL`,
	`SELECT session_id, step_count FROM dataset.runs WHERE _file_ = 'agents/run-1/events.lance' AND session_id = 's-c'`,
}

func TestRemoteDatasetConformance(t *testing.T) {
	local := mixedDataset(t)
	parser, err := query.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer parser.Close()
	ctx := context.Background()
	opts := catalog.DefaultOptions()
	localSnap := build(t, catalog.DatasetMount{Alias: "dataset", URI: local}, opts)
	want := withoutPins(localSnap.Datasets[0].SourceRows())
	if len(want) != 5 {
		t.Fatalf("local Dataset has %d sources, want 3 files + 2 stores: %+v", len(want), want)
	}
	wantResults := runQueries(t, localSnap, parser)

	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b, uri, cfg, log := openBackend(t, be)
			upload(t, b, local, "ds/")
			// A sibling prefix the Dataset must not see.
			if _, err := b.Put(ctx, "ds-other/x.json", strings.NewReader("{}"), 2); err != nil {
				t.Fatal(err)
			}

			snap := build(t, catalog.DatasetMount{Alias: "dataset", URI: uri, Config: cfg}, opts)
			rows := snap.Datasets[0].SourceRows()
			if got := withoutPins(rows); !reflect.DeepEqual(got, want) {
				t.Fatalf("sources differ from the local copy:\n got %s\nwant %s", dump(got), dump(want))
			}
			for _, r := range rows {
				if r.Kind == "file" && *r.RevisionKind == objstore.KindKeySizeMtime {
					t.Errorf("%s: weak pin on a backend with ETags", r.File)
				}
			}
			if snap.Resolves() != 0 {
				t.Fatalf("building resolved %d sources", snap.Resolves())
			}

			// A query pruned to one file downloads only that object (the
			// build stat'ed the stores' tables and segments, never read them).
			unhit := []string{"ds/files/atif/", "ds/files/codex/", "ds/stores/live/gen-", "ds/agents/run-1/events.lance/segments/"}
			before := map[string]int{}
			for _, k := range unhit {
				before[k] = log.count(k)
			}
			eng := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)})
			if _, err := eng.Query(ctx, `SELECT count(*) FROM dataset.runs WHERE _file_ = 'files/openai/support-chats.jsonl'`, engine.QueryOptions{}); err != nil {
				t.Fatal(err)
			}
			if log.count("ds/files/openai/support-chats.jsonl") == 0 {
				t.Fatal("the hit object was never read")
			}
			for _, k := range unhit {
				if n := log.count(k) - before[k]; n != 0 {
					t.Errorf("%d requests for unhit %s*", n, k)
				}
			}

			if got := runQueries(t, snap, parser); !reflect.DeepEqual(got, wantResults) {
				t.Fatalf("query results differ from the local copy:\n got %v\nwant %v", got, wantResults)
			}
		})
	}
}

func runQueries(t *testing.T, snap *catalog.Snapshot, parser *query.Parser) []string {
	t.Helper()
	var out []string
	for _, q := range conformanceQueries {
		res, err := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)}).Query(context.Background(), q, engine.QueryOptions{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, fmt.Sprint(res.Rows))
	}
	return out
}

func dump(rows []model.SourceRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "\n  %s %s %s %s sized=%v mtime=%v err=%v", r.File, r.Kind, r.SourceType, r.Status,
			fmt.Sprint(r.SizeBytes != nil && *r.SizeBytes > 0), r.ModifiedAt, model.Deref(r.Error))
	}
	return b.String()
}

func TestRemoteOverwrittenObjectFailsTheQuery(t *testing.T) {
	parser, err := query.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer parser.Close()
	ctx := context.Background()
	for _, be := range backends {
		if be.name == "s3-versioned" {
			continue // a versioned read still returns the pinned version: see TestRemoteVersionedReadsThePinnedBytes
		}
		t.Run(be.name, func(t *testing.T) {
			b, uri, cfg, _ := openBackend(t, be)
			put(t, b, "ds/a.jsonl", chat("one"))
			put(t, b, "ds/b.jsonl", chat("two"))
			snap := build(t, catalog.DatasetMount{Alias: "dataset", URI: uri, Config: cfg}, catalog.DefaultOptions())
			put(t, b, "ds/a.jsonl", chat("changed"))

			eng := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)})
			_, err = eng.Query(ctx, `SELECT session_id FROM dataset.runs WHERE _file_ = 'a.jsonl'`, engine.QueryOptions{})
			if !errors.Is(err, objstore.ErrChanged) {
				t.Fatalf("query of the overwritten object: %v, want ErrChanged", err)
			}
			res, err := eng.Query(ctx, `SELECT count(*) FROM dataset.runs WHERE _file_ = 'b.jsonl'`, engine.QueryOptions{})
			if err != nil || fmt.Sprint(res.Rows) != "[[1]]" {
				t.Fatalf("query of the unchanged object: %v %v", res, err)
			}
		})
	}
}

func TestRemoteVersionedReadsThePinnedBytes(t *testing.T) {
	parser, err := query.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer parser.Close()
	ctx := context.Background()
	s := testservers.StartS3(t)
	cfg := s.S3Config()
	uri := "s3://" + s.NewS3Bucket(t, true) + "/"
	b, _, err := objstore.Open(ctx, uri, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put(t, b, "a.jsonl", chat("pinned"))
	snap := build(t, catalog.DatasetMount{Alias: "dataset", URI: uri, Config: cfg}, catalog.DefaultOptions())
	put(t, b, "a.jsonl", chat("new-bytes"))
	res, err := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)}).Query(ctx, `SELECT message_value FROM dataset.steps WHERE message_value LIKE 'task%'`, engine.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[task pinned]]" {
		t.Fatalf("read %s, want the pinned version", got)
	}
}

func TestRemoteListingLimits(t *testing.T) {
	ctx := context.Background()
	s := testservers.StartS3(t)
	cfg := s.S3Config()
	cfg.PageSize = 2
	log := &requestLog{next: http.DefaultTransport}
	cfg.Transport = log
	bucket := s.NewS3Bucket(t, false)
	uri := "s3://" + bucket + "/many/"
	b, _, err := objstore.Open(ctx, uri, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := 0; i < 7; i++ {
		put(t, b, fmt.Sprintf("many/f%02d.jsonl", i), chat(fmt.Sprint(i)))
	}
	for _, tc := range []struct {
		setting         string
		maxEntries, max int
		wantPages       int
	}{
		{"max_entries", 6, 100, 4}, // 6 entries fit in 3 pages; the 7th, on page 4, fails
		{"max_entries", 3, 100, 2},
		{"max_files", 100, 4, 3},
		{"", 7, 7, 4},
	} {
		t.Run(fmt.Sprintf("%s_%d_%d", tc.setting, tc.maxEntries, tc.max), func(t *testing.T) {
			opts := catalog.DefaultOptions()
			opts.MaxEntries, opts.MaxFiles = tc.maxEntries, tc.max
			before := log.count("prefix=many") // list requests only
			snap, err := catalog.Build(ctx, []catalog.DatasetMount{{Alias: "dataset", URI: uri, Config: cfg}}, opts)
			var le *catalog.LimitError
			switch {
			case tc.setting == "":
				if err != nil {
					t.Fatal(err)
				}
				snap.Close()
			case !errors.As(err, &le) || le.Setting != tc.setting:
				t.Fatalf("got %v, want a %s LimitError", err, tc.setting)
			case strings.Contains(err.Error(), cfg.SecretKey.Reveal()):
				t.Fatal("the error carries the secret")
			}
			if pages := log.count("prefix=many") - before; pages != tc.wantPages {
				t.Errorf("%d list requests, want %d (the listing must stop at the limit)", pages, tc.wantPages)
			}
		})
	}
}

func TestRemoteDiscoveryRules(t *testing.T) {
	ctx := context.Background()
	s := testservers.StartS3(t)
	cfg := s.S3Config()
	bucket := s.NewS3Bucket(t, false)
	b, _, err := objstore.Open(ctx, "s3://"+bucket, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, k := range []string{
		"r/0.json", "r/a-b/x.json", "r/a/x.jsonl", "r/a/y.txt",
		"r/live/A.json", "r/live/CURRENT", "r/live/sub/CURRENT", "r/live/z.json",
		"r/c/chronicle.manifest", "r/c/in.json",
		"r/notev/_manifest.json",
		"r/x/events.lance/0.json", "r/x/events.lance/_manifest.json",
		"r/z.ndjson",
	} {
		put(t, b, k, "{}")
	}
	put(t, b, "r/dir/", "") // a "directory marker" object is no source
	found, err := catalog.DiscoverRemote(ctx, b, "r/", catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range found {
		got = append(got, d.File+":"+string(d.Kind))
		if strings.Contains(d.Path, "?") || !strings.HasPrefix(d.Path, "s3://"+bucket+"/r") {
			t.Errorf("path %q", d.Path)
		}
	}
	want := []string{"0.json:file", "a/x.jsonl:file", "a-b/x.json:file", "c:compact", "live:storyline",
		"notev/_manifest.json:file", "x/events.lance:events", "z.ndjson:file"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sources\n got %v\nwant %v", got, want)
	}
	// A prefix naming an object is one source ".", a store prefix one "." too.
	for prefix, want := range map[string]string{"r/a/x.jsonl": ".:file", "r/live/": ".:storyline", "r/x/events.lance": ".:events"} {
		found, err := catalog.DiscoverRemote(ctx, b, prefix, catalog.DefaultOptions())
		if err != nil || len(found) != 1 || found[0].File+":"+string(found[0].Kind) != want {
			t.Errorf("%s: %v %v, want %s", prefix, found, err, want)
		}
	}
}

func put(t *testing.T, b objstore.Bucket, key, body string) {
	t.Helper()
	if _, err := b.Put(context.Background(), key, strings.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
}

func chat(tag string) string {
	return `{"session_id":"s-` + tag + `","messages":[{"role":"user","content":"task ` + tag + `"},{"role":"assistant","content":"done"}]}` + "\n"
}
