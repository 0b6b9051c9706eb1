package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/faults"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
)

// backend describes one Bucket implementation under the conformance suite.
type backend struct {
	// create makes a fresh, empty bucket and returns its name.
	create func(t *testing.T) string
	// open connects to a bucket made by create, with cfg adjusted by tweak.
	open func(t *testing.T, name string, tweak func(*objstore.Config)) objstore.Bucket
	// keepsVersions: a pinned read of an overwritten object still returns
	// the pinned version (S3 version ids) instead of failing.
	keepsVersions bool
	// pinKind is the revision kind a listing yields.
	pinKind string
	// isList tells listing requests apart when counting requests.
	isList func(*http.Request) bool
	// proxy starts a fault-injecting proxy in front of the real server;
	// nil for the local backend.
	proxy func(testing.TB) *faults.Proxy
	// honorsRetryAfter: the SDK waits as a 503's Retry-After asks, and
	// gives up at once when that is longer than Retry.MaxDelay.
	honorsRetryAfter bool
}

func openWith(t *testing.T, uri string, cfg objstore.Config, tweak func(*objstore.Config)) objstore.Bucket {
	t.Helper()
	if tweak != nil {
		tweak(&cfg)
	}
	b, prefix, err := objstore.Open(context.Background(), uri, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "" {
		t.Fatalf("prefix %q for a bucket URI", prefix)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformanceLocal(t *testing.T) {
	runConformance(t, backend{
		create: func(t *testing.T) string { return t.TempDir() },
		open: func(t *testing.T, dir string, tweak func(*objstore.Config)) objstore.Bucket {
			return openWith(t, dir, objstore.Config{}, tweak)
		},
		pinKind: objstore.KindLocal,
	})
}

func s3Backend(srv *testservers.Server, versioned bool) backend {
	kind := objstore.KindETag
	if versioned {
		kind = objstore.KindS3Version
	}
	return backend{
		create: func(t *testing.T) string { return srv.NewS3Bucket(t, versioned) },
		open: func(t *testing.T, name string, tweak func(*objstore.Config)) objstore.Bucket {
			return openWith(t, "s3://"+name, srv.S3Config(), tweak)
		},
		keepsVersions:    versioned,
		pinKind:          kind,
		isList:           faults.List,
		proxy:            srv.Proxy,
		honorsRetryAfter: true,
	}
}

func TestConformanceS3(t *testing.T) {
	srv := testservers.StartS3(t)
	t.Run("versioned", func(t *testing.T) { runConformance(t, s3Backend(srv, true)) })
	t.Run("unversioned", func(t *testing.T) { runConformance(t, s3Backend(srv, false)) })
}

func TestConformanceAzure(t *testing.T) {
	srv := testservers.StartAzurite(t)
	runConformance(t, backend{
		create: func(t *testing.T) string { return srv.NewAzureContainer(t) },
		open: func(t *testing.T, name string, tweak func(*objstore.Config)) objstore.Bucket {
			return openWith(t, "az://"+name, srv.AzureConfig(), tweak)
		},
		pinKind:          objstore.KindETag,
		isList:           faults.List,
		proxy:            srv.Proxy,
		honorsRetryAfter: true,
	})
}

func TestConformanceGCS(t *testing.T) {
	srv := testservers.StartGCS(t)
	runConformance(t, backend{
		create: func(t *testing.T) string { return srv.NewGCSBucket(t) },
		open: func(t *testing.T, name string, tweak func(*objstore.Config)) objstore.Bucket {
			return openWith(t, "gs://"+name, srv.GCSConfig(), tweak)
		},
		pinKind:          objstore.KindGCSGeneration,
		isList:           faults.List,
		proxy:            srv.Proxy,
		honorsRetryAfter: true,
	})
}

func runConformance(t *testing.T, be backend) {
	t.Run("PutListStat", func(t *testing.T) { testPutListStat(t, be) })
	t.Run("Pages", func(t *testing.T) { testPages(t, be) })
	t.Run("ListStopsOnError", func(t *testing.T) { testListStops(t, be) })
	t.Run("PinnedRead", func(t *testing.T) { testPinnedRead(t, be) })
	t.Run("WeakPin", func(t *testing.T) { testWeakPin(t, be) })
	t.Run("ConditionalPut", func(t *testing.T) { testConditionalPut(t, be) })
	t.Run("Download", func(t *testing.T) { testDownload(t, be) })
	if be.proxy != nil {
		t.Run("Faults", func(t *testing.T) { testFaults(t, be) })
	}
}

var ctx = context.Background()

func put(t *testing.T, b objstore.Bucket, key, body string) objstore.ObjectInfo {
	t.Helper()
	// A MultiReader is not seekable: this exercises the spooling path too.
	info, err := b.Put(ctx, key, io.MultiReader(strings.NewReader(body)), int64(len(body)))
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	if info.Key != key || info.Size != int64(len(body)) {
		t.Fatalf("put %s returned %+v", key, info)
	}
	return info
}

func list(t *testing.T, b objstore.Bucket, prefix string) []objstore.ObjectInfo {
	t.Helper()
	var out []objstore.ObjectInfo
	if err := b.List(ctx, prefix, func(o objstore.ObjectInfo) error { out = append(out, o); return nil }); err != nil {
		t.Fatalf("list %q: %v", prefix, err)
	}
	return out
}

func keys(infos []objstore.ObjectInfo) []string {
	ks := make([]string, len(infos))
	for i, o := range infos {
		ks[i] = o.Key
	}
	return ks
}

func testPutListStat(t *testing.T, be backend) {
	b := be.open(t, be.create(t), nil)
	// '-' < '.' < '/' in byte order: a naive directory walk gets these wrong.
	written := []string{"other/z.json", "a/b.json", "a.json", "a-c.json", "dir/sub/y.ndjson", "dir/x.jsonl", "dir.json"}
	for i, k := range written {
		put(t, b, k, strings.Repeat("x", i+1))
	}
	want := append([]string(nil), written...)
	sort.Strings(want)
	all := list(t, b, "")
	if got := keys(all); !equal(got, want) {
		t.Fatalf("list all = %v, want %v", got, want)
	}
	for prefix, want := range map[string][]string{
		"a":       {"a-c.json", "a.json", "a/b.json"},
		"dir/":    {"dir/sub/y.ndjson", "dir/x.jsonl"},
		"dir/sub": {"dir/sub/y.ndjson"},
		"nope/":   nil,
	} {
		if got := keys(list(t, b, prefix)); !equal(got, want) {
			t.Errorf("list %q = %v, want %v", prefix, got, want)
		}
	}
	for _, o := range all {
		if o.RevisionKind() != be.pinKind {
			t.Errorf("%s: revision kind %s, want %s (%+v)", o.Key, o.RevisionKind(), be.pinKind, o)
		}
		st, err := b.Stat(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size != o.Size || st.RevisionKind() != o.RevisionKind() || !sameSecond(st.ModTime, o.ModTime) {
			t.Errorf("stat %s = %+v, listing %+v", o.Key, st, o)
		}
	}
	if _, err := b.Stat(ctx, "missing.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("stat missing: %v, want ErrNotFound", err)
	}
}

// testPages lists more objects than fit a page, with overwritten keys (old
// versions on versioned stores), and expects each live key exactly once.
func testPages(t *testing.T, be backend) {
	name := be.create(t)
	b := be.open(t, name, nil)
	var want []string
	wantSize := map[string]int64{}
	for i := 0; i < 23; i++ {
		k := fmt.Sprintf("p/%03d.json", i)
		wantSize[k] = put(t, b, k, "v1").Size
		if i%3 == 0 {
			wantSize[k] = put(t, b, k, "v2-longer").Size
		}
		want = append(want, k)
	}
	put(t, b, "q.json", "outside the prefix")
	var lists atomic.Int64
	paged := be.open(t, name, func(c *objstore.Config) {
		c.PageSize = 4
		c.Transport = counting(be.isList, &lists)
	})
	got := list(t, paged, "p/")
	if !equal(keys(got), want) {
		t.Fatalf("paged list = %v, want %v", keys(got), want)
	}
	for _, o := range got {
		if o.Size != wantSize[o.Key] {
			t.Errorf("%s: size %d, want the latest version's %d", o.Key, o.Size, wantSize[o.Key])
		}
	}
	if be.isList != nil && lists.Load() < 6 {
		t.Errorf("%d list requests for 23 keys at 4 per page", lists.Load())
	}
}

func testListStops(t *testing.T, be backend) {
	if be.isList == nil {
		t.Skip("no HTTP requests to count")
	}
	name := be.create(t)
	seed := be.open(t, name, nil)
	for i := 0; i < 20; i++ {
		put(t, seed, fmt.Sprintf("k%02d.json", i), "{}")
	}
	var lists atomic.Int64
	b := be.open(t, name, func(c *objstore.Config) {
		c.PageSize = 5
		c.Transport = counting(be.isList, &lists)
	})
	stop := errors.New("enough")
	seen := 0
	err := b.List(ctx, "", func(objstore.ObjectInfo) error {
		if seen++; seen == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("list returned %v, want the callback's error", err)
	}
	if seen != 3 || lists.Load() != 1 {
		t.Fatalf("callback ran %d times over %d list requests; want 3 over 1", seen, lists.Load())
	}
}

func readAll(b objstore.Bucket, pin objstore.ObjectInfo) ([]byte, error) {
	rc, err := b.ReadPinned(ctx, pin)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func testPinnedRead(t *testing.T, be backend) {
	b := be.open(t, be.create(t), nil)
	put(t, b, "doc.json", `{"v":1}`)
	pin := list(t, b, "doc.json")[0]
	if got, err := readAll(b, pin); err != nil || string(got) != `{"v":1}` {
		t.Fatalf("pinned read = %q, %v", got, err)
	}
	for _, next := range []string{`{"v":2}`, `{"v":3, "longer": true}`} { // same size, then another size
		time.Sleep(sleepForMtime(be))
		put(t, b, "doc.json", next)
		got, err := readAll(b, pin)
		switch {
		case be.keepsVersions:
			if err != nil || string(got) != `{"v":1}` {
				t.Fatalf("versioned pinned read after overwrite = %q, %v; want the pinned bytes", got, err)
			}
		case !errors.Is(err, objstore.ErrChanged):
			t.Fatalf("pinned read after overwrite with %s = %q, %v; want ErrChanged", next, got, err)
		}
		var ce *objstore.ChangedError
		if err != nil && (!errors.As(err, &ce) || ce.Pinned.Key != "doc.json") {
			t.Fatalf("error %v is not a *ChangedError for doc.json", err)
		}
	}
}

// testWeakPin strips the version, ETag and inode: only key, size and mtime
// remain, and a change of size must still be caught.
func testWeakPin(t *testing.T, be backend) {
	b := be.open(t, be.create(t), nil)
	put(t, b, "w.json", "[1,2,3]")
	pin := list(t, b, "w.json")[0]
	pin.ETag, pin.VersionID, pin.Generation, pin.Dev, pin.Inode = "", "", 0, 0, 0
	if pin.RevisionKind() != objstore.KindKeySizeMtime {
		t.Fatalf("kind %s", pin.RevisionKind())
	}
	if got, err := readAll(b, pin); err != nil || string(got) != "[1,2,3]" {
		t.Fatalf("weak pinned read = %q, %v", got, err)
	}
	put(t, b, "w.json", "[1,2,3,4]")
	if got, err := readAll(b, pin); !errors.Is(err, objstore.ErrChanged) {
		t.Fatalf("weak pinned read after a size change = %q, %v; want ErrChanged", got, err)
	}
}

func testConditionalPut(t *testing.T, be backend) {
	b := be.open(t, be.create(t), nil)
	cp, ok := b.(objstore.ConditionalPutter)
	if !ok {
		t.Fatalf("%T does not implement ConditionalPutter", b)
	}
	body := func(s string) (io.Reader, int64) { return strings.NewReader(s), int64(len(s)) }
	r, n := body("gen-1")
	first, err := cp.PutIfAbsent(ctx, "CURRENT", r, n)
	if err != nil {
		t.Fatalf("put if absent: %v", err)
	}
	r, n = body("gen-X")
	if _, err := cp.PutIfAbsent(ctx, "CURRENT", r, n); !errors.Is(err, objstore.ErrPrecondition) {
		t.Fatalf("second put if absent: %v, want ErrPrecondition", err)
	}
	time.Sleep(sleepForMtime(be))
	r, n = body("gen-2")
	second, err := cp.PutIfMatch(ctx, first, r, n)
	if err != nil {
		t.Fatalf("put if match: %v", err)
	}
	r, n = body("gen-3")
	if _, err := cp.PutIfMatch(ctx, first, r, n); !errors.Is(err, objstore.ErrPrecondition) {
		t.Fatalf("put if match on a stale version: %v, want ErrPrecondition", err)
	}
	cur, err := b.Stat(ctx, "CURRENT")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(b, cur); err != nil || string(got) != "gen-2" {
		t.Fatalf("CURRENT = %q, %v; want gen-2 (second put: %+v)", got, err, second)
	}
}

func testDownload(t *testing.T, be backend) {
	b := be.open(t, be.create(t), nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*objstore.ChunkSize/16+123) // > 3 chunks
	if _, err := b.Put(ctx, "big.jsonl", bytes.NewReader(big), int64(len(big))); err != nil {
		t.Fatal(err)
	}
	pin := list(t, b, "big")[0]
	dst := filepath.Join(t.TempDir(), "snap", "big.jsonl")
	if err := objstore.Download(ctx, b, pin, dst); err != nil {
		t.Fatalf("download: %v", err)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("downloaded %d bytes (%v), want %d", len(got), err, len(big))
	}
	// A pin whose size disagrees with the object must not produce a file.
	bad := pin
	bad.Size++
	dst2 := filepath.Join(filepath.Dir(dst), "bad.jsonl")
	if err := objstore.Download(ctx, b, bad, dst2); !errors.Is(err, objstore.ErrChanged) {
		t.Fatalf("download with a wrong size: %v, want ErrChanged", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dst)); len(entries) != 1 {
		t.Fatalf("destination holds %d entries after a failed download, want only big.jsonl", len(entries))
	}
}

// sleepForMtime lets a local overwrite get a new mtime on filesystems with
// coarse timestamps; remote stores pin by version, ETag or generation.
func sleepForMtime(be backend) time.Duration {
	if be.pinKind == objstore.KindLocal {
		return 10 * time.Millisecond
	}
	return 0
}

type countingTransport struct {
	match func(*http.Request) bool
	n     *atomic.Int64
}

func counting(match func(*http.Request) bool, n *atomic.Int64) http.RoundTripper {
	if match == nil {
		return nil
	}
	return countingTransport{match, n}
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.match(r) {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameSecond(a, b time.Time) bool {
	return a.Truncate(time.Second).Equal(b.Truncate(time.Second))
}
