package remote_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/remote"
)

// countingBucket counts the bytes read from and written to a bucket.
type countingBucket struct {
	*objstore.Local
	read, written atomic.Int64
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func (b *countingBucket) ReadPinned(ctx context.Context, info objstore.ObjectInfo) (io.ReadCloser, error) {
	rc, err := b.Local.ReadPinned(ctx, info)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, &b.read}, nil
}

func (b *countingBucket) Put(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	b.written.Add(size)
	return b.Local.Put(ctx, key, r, size)
}

func (b *countingBucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	b.written.Add(size)
	return b.Local.PutIfAbsent(ctx, key, r, size)
}

func (b *countingBucket) PutIfMatch(ctx context.Context, prev objstore.ObjectInfo, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	b.written.Add(size)
	return b.Local.PutIfMatch(ctx, prev, r, size)
}

// eventLines returns n events of session s with seqs from first, each
// with its own incompressible content (so the store's size grows with its
// events).
func eventLines(prefix, s string, first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprint(prefix, i)))
		fmt.Fprintf(&b, `{"v":1,"event_id":"%s-%d","run_id":"r-%s","session_id":%q,"seq":%d,"ts":"2025-01-01T00:00:%02dZ","kind":"message","payload":{"source":"user","content":"%x"}}`+"\n",
			prefix, i, s, s, i, i%60, sum)
	}
	return b.String()
}

// With a segment cache an append transfers bytes in proportion to its
// batch: the manifest, the segments other writers added since it last saw
// the store, and its own new segment — not the store. A cached file that
// does not match its object (truncated) is not used.
func TestAppendWithSegmentCacheTransfersTheBatch(t *testing.T) {
	ctx := context.Background()
	src := format.Source{Path: "events.jsonl"}
	local, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &countingBucket{Local: local}
	const prefix = "team/events.lance"
	cache := remote.AppendOptions{SegmentCache: t.TempDir()}
	if _, err := remote.AppendEvents(ctx, b, prefix, strings.NewReader(eventLines("big", "s1", 0, 20000)), src, cache); err != nil {
		t.Fatal(err)
	}
	store := b.written.Load()
	if store < 200<<10 {
		t.Fatalf("the first append wrote only %d bytes; the test needs a store far larger than a batch", store)
	}
	appendBatch := func(t *testing.T, who string, first int, opts ...remote.AppendOptions) (read, written int64) {
		t.Helper()
		r0, w0 := b.read.Load(), b.written.Load()
		res, err := remote.AppendEvents(ctx, b, prefix, strings.NewReader(eventLines(who, "s1", first, 10)), src, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if res.Appended != 10 || res.Manifest.Events != int64(first+10) {
			t.Fatalf("appended %d, %d events in the store; want 10, %d", res.Appended, res.Manifest.Events, first+10)
		}
		return b.read.Load() - r0, b.written.Load() - w0
	}
	const batchBytes = 64 << 10 // a segment of 10 events plus a manifest, generously
	read, written := appendBatch(t, "cached", 20000, cache)
	if read > batchBytes || written > batchBytes {
		t.Fatalf("a cached append of 10 events read %d and wrote %d bytes; want at most %d each (the store has %d)", read, written, batchBytes, store)
	}
	// Another writer without the cache mirrors the whole store.
	if read, _ := appendBatch(t, "other", 20010); read < store/2 {
		t.Fatalf("an append without the cache read only %d bytes of a %d-byte store", read, store)
	}
	// The cached writer then fetches only the other writer's new segment.
	if read, _ := appendBatch(t, "cached-again", 20020, cache); read > batchBytes {
		t.Fatalf("after another writer's append, a cached append read %d bytes; want at most %d", read, batchBytes)
	}
	// A truncated cache entry is detected and the segment downloaded.
	var biggest string
	var size int64
	filepath.Walk(cache.SegmentCache, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Size() > size {
			biggest, size = p, fi.Size()
		}
		return nil
	})
	if biggest == "" || size < store/2 {
		t.Fatalf("the cache does not hold the store's big segment (largest file %d bytes)", size)
	}
	if err := os.Truncate(biggest, size/2); err != nil {
		t.Fatal(err)
	}
	if read, _ := appendBatch(t, "after-truncation", 20030, cache); read < size {
		t.Fatalf("a truncated cache entry was used: the append read %d bytes, the segment has %d", read, size)
	}
}
