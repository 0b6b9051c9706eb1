package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
	"github.com/pchronicle/pchronicle/internal/store/remote"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

type backend struct {
	name   string
	srv    *testservers.Server
	uri    string // bucket root URI
	cfg    objstore.Config
	bucket objstore.Bucket
}

// backends starts the three real servers and opens a fresh bucket on each
// (S3 both unversioned and versioned).
func backends(t *testing.T) []backend {
	t.Helper()
	if os.Getenv(testservers.SkipEnv) != "" {
		t.Skip(testservers.SkipEnv + " is set")
	}
	ctx := context.Background()
	s3, az, gcs := testservers.StartS3(t), testservers.StartAzurite(t), testservers.StartGCS(t)
	var out []backend
	add := func(name string, srv *testservers.Server, uri string, cfg objstore.Config) {
		b, _, err := objstore.Open(ctx, uri, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		out = append(out, backend{name: name, srv: srv, uri: uri, cfg: cfg, bucket: b})
	}
	add("s3", s3, "s3://"+s3.NewS3Bucket(t, false), s3.S3Config())
	add("s3-versioned", s3, "s3://"+s3.NewS3Bucket(t, true), s3.S3Config())
	add("azure", az, "az://"+az.NewAzureContainer(t), az.AzureConfig())
	add("gcs", gcs, "gs://"+gcs.NewGCSBucket(t), gcs.GCSConfig())
	return out
}

// storylines returns n deterministic Storylines for _file_ file.
func storylines(file string, n int) []*model.Storyline {
	var out []*model.Storyline
	for i := range n {
		sl := &model.Storyline{Run: model.Run{RunID: fmt.Sprintf("%s-r%d", file, i), SessionID: fmt.Sprintf("%s-s%d", file, i), Status: model.StatusCompleted}}
		sl.Steps = []model.Step{{Source: model.SourceUser}, {Source: model.SourceAgent}}
		sl.Finalize(file)
		out = append(out, sl)
	}
	return out
}

// publish stages, writes and publishes one generation of the given rows.
func publish(t *testing.T, b objstore.Bucket, prefix string, seed bool, file string, n int) (*storyline.Generation, error) {
	t.Helper()
	ctx := context.Background()
	s, err := remote.StageStoryline(ctx, b, prefix, t.TempDir(), seed)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Store.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	if seed && s.Current != nil {
		prev, err := s.Store.Pin()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.CopyFrom(ctx, prev, func(f, _ string) bool { return f != file }); err != nil {
			t.Fatal(err)
		}
	}
	for _, sl := range storylines(file, n) {
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	g, err := w.Commit(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, remote.PublishStoryline(ctx, b, prefix, g, s.Current)
}

// pinned discovers the store at prefix through the catalog, which pins it
// as a reader does (CURRENT or _manifest.json, then every object it names).
func pinned(t *testing.T, be backend, prefix string) catalog.Revision {
	t.Helper()
	srcs, err := catalog.DiscoverRemote(context.Background(), be.bucket, prefix, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 1 || srcs[0].Err != nil {
		t.Fatalf("want one pinned store source, got %+v", srcs)
	}
	return srcs[0].Revision
}

// counts returns the runs and steps rows and the generation the catalog
// pins for the Storyline store at prefix.
func counts(t *testing.T, be backend, prefix string) (runs, steps int64, gen string) {
	t.Helper()
	rev, ok := pinned(t, be, prefix).(catalog.RemoteStorylineRevision)
	if !ok {
		t.Fatal("not a remote Storyline store")
	}
	m := rev.Manifest
	return m.Tables[model.RelRuns].Rows, m.Tables[model.RelSteps].Rows, rev.GenerationDir
}

func TestPublishStoryline(t *testing.T) {
	ctx := context.Background()
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			const prefix = "data/store"
			if _, err := publish(t, be.bucket, prefix, false, "a.json", 3); err != nil {
				t.Fatal(err)
			}
			if runs, steps, gen := counts(t, be, prefix); runs != 3 || steps != 6 || gen != "gen-000000" {
				t.Fatalf("first publish: runs %d steps %d %s; want 3, 6, gen-000000", runs, steps, gen)
			}
			// Append mode: the seeded current rows are kept, CURRENT replaced.
			if _, err := publish(t, be.bucket, prefix, true, "b.json", 2); err != nil {
				t.Fatal(err)
			}
			if runs, _, gen := counts(t, be, prefix); runs != 5 || gen != "gen-000001" {
				t.Fatalf("second publish: runs %d %s; want 5, gen-000001", runs, gen)
			}

			// Two publishers of the same generation number: the first object
			// written decides, the other loses before touching CURRENT.
			s, err := remote.StageStoryline(ctx, be.bucket, prefix, t.TempDir(), false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := publish(t, be.bucket, prefix, false, "c.json", 1); err != nil { // the concurrent winner
				t.Fatal(err)
			}
			w, err := s.Store.NewGeneration()
			if err != nil {
				t.Fatal(err)
			}
			for _, sl := range storylines("d.json", 4) {
				w.Add(sl)
			}
			g, err := w.Commit(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = remote.PublishStoryline(ctx, be.bucket, prefix, g, s.Current)
			if !errors.Is(err, remote.ErrLostRace) {
				t.Fatalf("losing publish: %v; want ErrLostRace", err)
			}
			if runs, _, gen := counts(t, be, prefix); runs != 1 || gen != "gen-000002" {
				t.Fatalf("after the lost race: runs %d %s; want the winner's 1 row in gen-000002", runs, gen)
			}

			// CURRENT changes between the read and the conditional write:
			// the loser's complete generation (gen-000003) stays orphaned.
			s, err = remote.StageStoryline(ctx, be.bucket, prefix, t.TempDir(), false)
			if err != nil {
				t.Fatal(err)
			}
			w, err = s.Store.NewGeneration()
			if err != nil {
				t.Fatal(err)
			}
			w.Add(storylines("d.json", 4)[0])
			if g, err = w.Commit(ctx, nil); err != nil {
				t.Fatal(err)
			}
			rb := &raceBucket{Bucket: be.bucket, cp: be.bucket.(objstore.ConditionalPutter), before: func() {
				if _, err := publish(t, be.bucket, prefix, true, "e.json", 1); err != nil {
					t.Error(err)
				}
			}}
			if err := remote.PublishStoryline(ctx, rb, prefix, g, s.Current); !errors.Is(err, remote.ErrLostRace) {
				t.Fatalf("publish losing the CURRENT race: %v; want ErrLostRace", err)
			}
			if runs, _, gen := counts(t, be, prefix); runs != 2 || gen != "gen-000004" {
				t.Fatalf("after the CURRENT race: runs %d %s; want the winner's 2 rows in gen-000004", runs, gen)
			}
			// The orphan never blocks the next publication.
			if _, err := publish(t, be.bucket, prefix, true, "f.json", 1); err != nil {
				t.Fatal(err)
			}
			if runs, _, gen := counts(t, be, prefix); runs != 3 || gen != "gen-000005" {
				t.Fatalf("after the orphan: runs %d %s; want 3, gen-000005", runs, gen)
			}
		})
	}
}

func eventLine(id, session string, seq int) string {
	return fmt.Sprintf(`{"v":1,"event_id":%q,"run_id":"r-%s","session_id":%q,"seq":%d,"ts":"2025-01-01T00:00:%02dZ","kind":"message","payload":{"source":"user","content":"hello"}}`,
		id, session, session, seq, seq%60) + "\n"
}

// objects lists every key under prefix.
func objects(t *testing.T, b objstore.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	if err := b.List(context.Background(), prefix, func(o objstore.ObjectInfo) error {
		keys = append(keys, o.Key+"@"+o.Ref())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestAppendEvents(t *testing.T) {
	ctx := context.Background()
	src := format.Source{Path: "events.jsonl"}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			const prefix = "x/events.lance"
			res, err := remote.AppendEvents(ctx, be.bucket, prefix, strings.NewReader(eventLine("a1", "s1", 0)+eventLine("a2", "s1", 1)+eventLine("a3", "s2", 0)), src)
			if err != nil {
				t.Fatal(err)
			}
			if res.Appended != 3 || res.Manifest.Revision != 1 || res.Manifest.Events != 3 {
				t.Fatalf("first append: %+v", res)
			}
			res, err = remote.AppendEvents(ctx, be.bucket, prefix, strings.NewReader(eventLine("b1", "s1", 2)), src)
			if err != nil || res.Manifest.Events != 4 || res.Manifest.Revision != 2 {
				t.Fatalf("second append: %+v, %v", res, err)
			}

			// Bad lines (a duplicate id from the store, a seq going back, a
			// torn line) upload nothing.
			before := objects(t, be.bucket, "x/")
			for _, bad := range []string{
				eventLine("c1", "s3", 0) + eventLine("a3", "s4", 0),
				eventLine("c1", "s1", 1),
				eventLine("c1", "s3", 0) + eventLine("c2", "s3", 1)[:30],
			} {
				if _, err := remote.AppendEvents(ctx, be.bucket, prefix, strings.NewReader(bad), src); err == nil || !strings.Contains(err.Error(), "events.jsonl:") {
					t.Fatalf("bad input accepted or unnamed line: %v", err)
				}
			}
			if after := objects(t, be.bucket, "x/"); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("a rejected append changed the bucket:\nbefore %v\nafter  %v", before, after)
			}

			// Read back through the catalog as a reader pins it.
			rev, ok := pinned(t, be, "x/").(catalog.RemoteEventsRevision)
			if !ok || rev.Manifest.Events != 4 || len(rev.Segments) != 2 {
				t.Fatalf("catalog pins %+v", rev.Manifest)
			}
		})
	}
}

// raceBucket changes the manifest right before the conditional write.
type raceBucket struct {
	objstore.Bucket
	cp     objstore.ConditionalPutter
	before func()
}

func (r *raceBucket) PutIfAbsent(ctx context.Context, key string, rd io.Reader, size int64) (objstore.ObjectInfo, error) {
	return r.cp.PutIfAbsent(ctx, key, rd, size)
}

func (r *raceBucket) PutIfMatch(ctx context.Context, prev objstore.ObjectInfo, rd io.Reader, size int64) (objstore.ObjectInfo, error) {
	if r.before != nil {
		f := r.before
		r.before = nil
		f()
	}
	return r.cp.PutIfMatch(ctx, prev, rd, size)
}

func TestAppendEventsLostRace(t *testing.T) {
	ctx := context.Background()
	src := format.Source{Path: "events.jsonl"}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			const prefix = "events.lance"
			if _, err := remote.AppendEvents(ctx, be.bucket, prefix, strings.NewReader(eventLine("a1", "s1", 0)), src); err != nil {
				t.Fatal(err)
			}
			rb := &raceBucket{Bucket: be.bucket, cp: be.bucket.(objstore.ConditionalPutter)}
			rb.before = func() { // a concurrent writer publishes first
				if _, err := remote.AppendEvents(ctx, be.bucket, prefix, strings.NewReader(eventLine("w1", "s1", 1)), src); err != nil {
					t.Error(err)
				}
			}
			_, err := remote.AppendEvents(ctx, rb, prefix, strings.NewReader(eventLine("l1", "s1", 1)), src)
			if !errors.Is(err, remote.ErrLostRace) {
				t.Fatalf("losing append: %v; want ErrLostRace", err)
			}
			info, err := be.bucket.Stat(ctx, prefix+"/_manifest.json")
			if err != nil {
				t.Fatal(err)
			}
			rc, err := be.bucket.ReadPinned(ctx, info)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Contains(data, []byte(`"events": 2`)) || !bytes.Contains(data, []byte(`"revision": 2`)) {
				t.Fatalf("manifest after the race is not the winner's:\n%s", data)
			}
		})
	}
}

// Concurrent publishers to one prefix, each in append mode on what it
// staged: every one either succeeds or fails with ErrLostRace, and the
// final generation holds exactly the initial rows plus the rows of every
// publisher that succeeded (publisher i adds 2^i runs, so the total tells
// which ones are in it).
func TestConcurrentPublishers(t *testing.T) {
	ctx := context.Background()
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			const prefix = "race/store"
			if _, err := publish(t, be.bucket, prefix, false, "init.json", 1); err != nil {
				t.Fatal(err)
			}
			const writers = 4
			errs := make([]error, writers)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = appendRemote(ctx, be.bucket, prefix, t.TempDir(), fmt.Sprintf("w%d.json", i), 1<<i)
				}()
			}
			wg.Wait()
			want := 1 + winners(t, errs)
			if runs, _, _ := counts(t, be, prefix); runs != want {
				t.Fatalf("final generation has %d runs, want %d (results %v)", runs, want, errs)
			}
		})
	}
}

// winners checks that each concurrent writer i either succeeded or lost
// the race, and returns the sum of 2^i over those that succeeded (writer i
// adds 2^i rows, so the total names the winners).
func winners(t *testing.T, errs []error) int64 {
	t.Helper()
	var sum int64
	for i, err := range errs {
		switch {
		case err == nil:
			sum += 1 << i
		case !errors.Is(err, remote.ErrLostRace):
			t.Fatalf("writer %d: %v, want success or ErrLostRace", i, err)
		}
	}
	if sum == 0 {
		t.Fatal("no writer succeeded")
	}
	return sum
}

// appendRemote is publish without t, for goroutines: stage with the
// remote current generation, keep its rows, add n runs of file, publish.
func appendRemote(ctx context.Context, b objstore.Bucket, prefix, dir, file string, n int) error {
	s, err := remote.StageStoryline(ctx, b, prefix, dir, true)
	if err != nil {
		return err
	}
	w, base, err := s.Store.NewGenerationOnCurrent(ctx)
	if err != nil {
		return err
	}
	if base != nil {
		if err := w.CopyFrom(ctx, base, func(string, string) bool { return true }); err != nil {
			w.Abort()
			return err
		}
	}
	for _, sl := range storylines(file, n) {
		if err := w.Add(sl); err != nil {
			w.Abort()
			return err
		}
	}
	g, err := w.Commit(ctx, nil)
	if err != nil {
		return err
	}
	return remote.PublishStoryline(ctx, b, prefix, g, s.Current)
}

// Concurrent event appends to one prefix: each succeeds or fails with
// ErrLostRace, and the manifest counts exactly the initial events plus
// those of every append that succeeded (append i adds 2^i events).
func TestConcurrentEventAppends(t *testing.T) {
	ctx := context.Background()
	src := format.Source{Path: "events.jsonl"}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			const prefix = "race/events.lance"
			if _, err := remote.AppendEvents(ctx, be.bucket, prefix, strings.NewReader(eventLine("init", "s", 0)), src); err != nil {
				t.Fatal(err)
			}
			const writers = 4
			errs := make([]error, writers)
			var wg sync.WaitGroup
			for i := range writers {
				var in strings.Builder
				for j := range 1 << i {
					in.WriteString(eventLine(fmt.Sprintf("w%d-%d", i, j), fmt.Sprintf("w%d", i), j))
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = remote.AppendEvents(ctx, be.bucket, prefix, strings.NewReader(in.String()), src)
				}()
			}
			wg.Wait()
			want := 1 + winners(t, errs)
			rev, ok := pinned(t, be, "race/").(catalog.RemoteEventsRevision)
			if !ok || rev.Manifest.Events != want {
				t.Fatalf("manifest counts %d events, want %d (results %v)", rev.Manifest.Events, want, errs)
			}
		})
	}
}
