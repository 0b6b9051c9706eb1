package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/faults"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// faultRetry keeps the faulted queries short (docs/testing.md).
var faultRetry = objstore.Retry{Attempts: 3, BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond,
	ResponseTimeout: 5 * time.Second, StallTimeout: 5 * time.Second, ReadRequests: 8}

// TestRemoteDatasetUnderFaults queries the mixed Dataset (files, a
// Storyline store, an events store) on each object store through a
// fault-injecting proxy: transient faults on every object give the rows of
// the local copy; a persistent fault, a failing or slow listing, or an
// object changed mid-read fail with an error naming the object.
func TestRemoteDatasetUnderFaults(t *testing.T) {
	local := mixedDataset(t)
	parser, err := query.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer parser.Close()
	ctx := context.Background()
	wantResults := runQueries(t, build(t, catalog.DatasetMount{Alias: "dataset", URI: local}, catalog.DefaultOptions()), parser)

	g := testutil.Together(t) // the backends wait out start-ups and timeouts side by side
	defer g.Wait()
	for _, be := range backends {
		g.Run(be.name, func(t *testing.T) {
			srv, scheme, bucket, cfg := be.start(t)
			uri := fmt.Sprintf("%s://%s/ds/", scheme, bucket)
			direct, _, err := objstore.Open(ctx, uri, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			upload(t, direct, local, "ds/")
			var objects []objstore.ObjectInfo
			if err := direct.List(ctx, "ds/", func(o objstore.ObjectInfo) error { objects = append(objects, o); return nil }); err != nil {
				t.Fatal(err)
			}
			// through mounts the Dataset via a fresh proxy with retry bounds r.
			through := func(t *testing.T, r objstore.Retry) (catalog.DatasetMount, *faults.Proxy) {
				p := srv.Proxy(t)
				pc := cfg
				pc.Endpoint, pc.Retry = p.URL, r
				return catalog.DatasetMount{Alias: "dataset", URI: uri, Config: pc}, p
			}

			t.Run("transient", func(t *testing.T) {
				m, p := through(t, faultRetry)
				p.Add(faults.Rule{Match: faults.List, Times: 1, Fault: faults.Status(http.StatusServiceUnavailable)})
				for _, o := range objects { // every object: a 503, then its body reset a third of the way
					p.Add(faults.Rule{Match: faults.ObjectRead(o.Key), Times: 1, Fault: faults.Status(http.StatusServiceUnavailable)})
					p.Add(faults.Rule{Match: faults.ObjectRead(o.Key), Times: 1, Fault: faults.Reset(o.Size / 3)})
				}
				snap := build(t, m, catalog.DefaultOptions())
				if got := runQueries(t, snap, parser); !reflect.DeepEqual(got, wantResults) {
					t.Fatalf("results under transient faults differ from the local copy:\n got %v\nwant %v\n%s", got, wantResults, p.Log())
				}
				// Each object read went 503, reset, resumption (lock files and
				// the store's unreferenced first generation are never read).
				read := 0
				for _, o := range objects {
					switch n := p.Count(faults.ObjectRead(o.Key)); n {
					case 0:
					case 3:
						read++
					default:
						t.Errorf("%s: %d reads, want 3 (a 503, a reset, the resumption)", o.Key, n)
					}
				}
				if read < 11 {
					t.Fatalf("%d objects were read under faults, want the 11 the queries need\n%s", read, p.Log())
				}
			})

			t.Run("persistent", func(t *testing.T) {
				m, p := through(t, faultRetry)
				const file = "files/openai/support-chats.jsonl"
				var table string // the Storyline store's runs table
				for _, o := range objects {
					if strings.HasPrefix(o.Key, "ds/stores/live/") && strings.HasSuffix(o.Key, "/runs.parquet") {
						table = strings.TrimPrefix(o.Key, "ds/")
					}
				}
				p.Add(faults.Rule{Match: faults.ObjectRead("ds/" + file), Times: faults.Always, Fault: faults.Status(http.StatusServiceUnavailable)})
				p.Add(faults.Rule{Match: faults.ObjectRead("ds/" + table), Times: faults.Always, Fault: faults.Reset(100)})
				snap := build(t, m, catalog.DefaultOptions())
				for _, tc := range []struct{ source, object, says string }{
					{file, file, "503 Service Unavailable"},
					{"stores/live", table, "gave up after 8 requests"},
				} {
					start := time.Now()
					_, err := query1(snap, parser, fmt.Sprintf(`SELECT count(*) FROM dataset.runs WHERE _file_ = '%s'`, tc.source))
					object := fmt.Sprintf("%s://%s/ds/%s", scheme, bucket, tc.object)
					var oe *objstore.Error
					if err == nil || !errors.As(err, &oe) || !strings.Contains(err.Error(), "source "+tc.source+": ") ||
						!strings.Contains(err.Error(), object) || !strings.Contains(err.Error(), tc.says) {
						t.Fatalf("query of %s under a persistent fault: %v; want an *objstore.Error naming the source, %s and %q", tc.source, err, object, tc.says)
					}
					if took := time.Since(start); took > 10*time.Second {
						t.Errorf("the query failed after %s", took)
					}
					if bad := partialFiles(t, snap.TempDir, filepath.Base(tc.object)); bad != nil {
						t.Errorf("the Snapshot temp directory holds %v after the failed download", bad)
					}
				}
				// The other sources are unaffected.
				rows, err := query1(snap, parser, `SELECT count(*) FROM dataset.runs WHERE _file_ = 'files/atif/fix-failing-test.trajectory.json'`)
				if err != nil || rows != "[[1]]" {
					t.Fatalf("query of an unfaulted source: %v %v", rows, err)
				}
			})

			// A failing listing fails the build under both error policies; a
			// slow one (each page attempt times out) fails it in report mode,
			// the lenient one, as well.
			t.Run("listing", func(t *testing.T) {
				slow := faultRetry
				slow.Attempts, slow.ResponseTimeout = 2, 500*time.Millisecond
				for _, tc := range []struct {
					name   string
					fault  faults.Fault
					policy string
					says   string
				}{
					{"failing", faults.Status(http.StatusServiceUnavailable), catalog.ErrorsStrict, "503"},
					{"failing", faults.Status(http.StatusServiceUnavailable), catalog.ErrorsReport, "503"},
					{"slow", faults.Delay(2 * time.Second), catalog.ErrorsReport, "no response headers within 500ms"},
				} {
					m, p := through(t, slow)
					p.Add(faults.Rule{Match: faults.List, Times: faults.Always, Fault: tc.fault})
					opts := catalog.DefaultOptions()
					opts.Errors = tc.policy
					start := time.Now()
					snap, err := catalog.Build(ctx, []catalog.DatasetMount{m}, opts)
					if err == nil {
						snap.Close()
					}
					if err == nil || !strings.Contains(err.Error(), "list") || !strings.Contains(err.Error(), scheme+"://"+bucket+"/ds") || !strings.Contains(err.Error(), tc.says) {
						t.Fatalf("%s listing, --errors %s: Build = %v; want a failed build naming the listing", tc.name, tc.policy, err)
					}
					if took := time.Since(start); took > 10*time.Second {
						t.Errorf("%s listing: the build failed after %s", tc.name, took)
					}
				}
			})

			t.Run("changed mid-read", func(t *testing.T) {
				m, p := through(t, faultRetry)
				const key = "ds/files/openai/support-chats.jsonl"
				pinned, err := os.ReadFile(filepath.Join(local, "files", "openai", "support-chats.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				snap := build(t, m, catalog.DefaultOptions())
				changed := []byte(strings.ReplaceAll(string(pinned), "a", "b")) // same size, other bytes
				p.Add(faults.Rule{Match: faults.ObjectRead(key), Times: 1, Fault: faults.Reset(int64(len(pinned) / 2)).Then(func() {
					if _, err := direct.Put(ctx, key, strings.NewReader(string(changed)), int64(len(changed))); err != nil {
						t.Errorf("overwrite: %v", err)
					}
				})})
				const steps = `SELECT count(*) FROM dataset.steps WHERE _file_ = 'files/openai/support-chats.jsonl'`
				rows, err := query1(snap, parser, steps)
				if be.name == "s3-versioned" { // the pinned version is still there
					want, werr := query1(build(t, catalog.DatasetMount{Alias: "dataset", URI: local}, catalog.DefaultOptions()), parser, steps)
					if err != nil || werr != nil || rows != want {
						t.Fatalf("versioned read across an overwrite: %v %v; the local copy: %v %v", rows, err, want, werr)
					}
					return
				}
				if !errors.Is(err, objstore.ErrChanged) || !strings.Contains(err.Error(), "changed since the Snapshot was built") {
					t.Fatalf("query across an overwrite: %v; want ErrChanged, changed since the Snapshot was built\n%s", err, p.Log())
				}
			})
		})
	}
}

// partialFiles lists files under dir that a failed download must not have
// left: temp files of an atomic write, or a file named like the object.
func partialFiles(t *testing.T, dir, name string) []string {
	t.Helper()
	var bad []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.Contains(d.Name(), ".tmp-") || d.Name() == name {
			bad = append(bad, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad
}

// query1 runs one query on snap and prints its rows.
func query1(snap *catalog.Snapshot, parser *query.Parser, sql string) (string, error) {
	res, err := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)}).Query(context.Background(), sql, engine.QueryOptions{})
	if err != nil {
		return "", err
	}
	return fmt.Sprint(res.Rows), nil
}
