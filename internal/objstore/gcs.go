package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"cloud.google.com/go/storage"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
)

// GCS is a Bucket on Google Cloud Storage. Pins are generations. A pinned
// read first compares the live generation (fake-gcs-server ignores
// generation preconditions, so the check cannot be left to the server),
// then reads that exact generation and checks the generation it got.
type GCS struct {
	remoteBase
	client *storage.Client
	bucket *storage.BucketHandle
	page   int
}

// NewGCS connects bucket with Application Default Credentials, or, when
// cfg.Endpoint names an emulator such as fake-gcs-server, without
// authentication at that endpoint.
func NewGCS(ctx context.Context, name string, cfg Config) (*GCS, error) {
	b := &GCS{remoteBase: newRemoteBase("gs://"+name, cfg), page: cfg.PageSize}
	// The scopes storage.NewClient asks for when it builds its own client.
	opts := []option.ClientOption{option.WithScopes(storage.ScopeFullControl, "https://www.googleapis.com/auth/cloud-platform")}
	if cfg.Endpoint != "" {
		ep := strings.TrimRight(cfg.Endpoint, "/")
		if !strings.HasSuffix(ep, "/storage/v1") {
			ep += "/storage/v1"
		}
		opts = append(opts, option.WithEndpoint(ep+"/"), option.WithoutAuthentication())
	}
	// Authentication goes on top of our transport (timeouts, tallies).
	rt, err := htransport.NewTransport(ctx, newTransport(cfg, b.retry), opts...)
	if err != nil {
		return nil, b.err(ctx, "connect", "", err)
	}
	client, err := storage.NewClient(ctx, append(opts, option.WithHTTPClient(&http.Client{Transport: rt}))...)
	if err != nil {
		return nil, b.err(ctx, "connect", "", err)
	}
	// Left alone, the client retries until the context ends.
	client.SetRetry(storage.WithMaxAttempts(b.retry.Attempts),
		storage.WithBackoff(gax.Backoff{Initial: b.retry.BaseDelay, Max: b.retry.MaxDelay, Multiplier: 2}))
	b.client, b.bucket = client, client.Bucket(name)
	return b, nil
}

func (b *GCS) Close() error { return b.client.Close() }

func gcsInfo(a *storage.ObjectAttrs) ObjectInfo {
	return ObjectInfo{Key: a.Name, Size: a.Size, ModTime: a.Updated, ETag: a.Etag, Generation: a.Generation}
}

func (b *GCS) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	ctx, _ = track(ctx, 0)
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated", "Etag", "Generation"}); err != nil {
		return b.err(ctx, "list", prefix, err)
	}
	it := b.bucket.Objects(ctx, q)
	if b.page > 0 {
		it.PageInfo().MaxSize = b.page
	}
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return b.err(ctx, "list", prefix, err)
		}
		if err := fn(gcsInfo(a)); err != nil {
			return err
		}
	}
}

func (b *GCS) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if tallyFrom(ctx) == nil { // a pinned read's stat counts against its budget
		ctx, _ = track(ctx, 0)
	}
	a, err := b.bucket.Object(key).Attrs(ctx)
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "stat", key, err)
	}
	return gcsInfo(a), nil
}

// ReadPinned compares the live generation first (fake-gcs-server serves a
// stale generation precondition), then reads exactly the pinned generation.
// The SDK's reader resumes a failed body by itself, with that generation;
// its requests count against the read's budget like ours.
func (b *GCS) ReadPinned(ctx context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	fail := func(ctx context.Context, err error) error { return b.err(ctx, "read", pin.Key, err) }
	return b.pinned(pin, func(ctx context.Context, off int64) (io.ReadCloser, ObjectInfo, int64, error) {
		obj := b.bucket.Object(pin.Key)
		if pin.Generation != 0 {
			if off == 0 {
				cur, err := b.Stat(ctx, pin.Key)
				if errors.Is(err, ErrNotFound) {
					return nil, ObjectInfo{}, 0, &ChangedError{Bucket: b.name, Pinned: pin, Reason: "object is gone"}
				}
				if err != nil {
					return nil, ObjectInfo{}, 0, err
				}
				if cur.Generation != pin.Generation {
					return nil, ObjectInfo{}, 0, &ChangedError{Bucket: b.name, Pinned: pin, Reason: fmt.Sprintf("generation is %d", cur.Generation)}
				}
			}
			obj = obj.Generation(pin.Generation)
		}
		r, err := obj.NewRangeReader(ctx, off, -1)
		if err != nil {
			if s := httpStatus(err); s == http.StatusNotFound || s == http.StatusPreconditionFailed || errors.Is(err, storage.ErrObjectNotExist) {
				return nil, ObjectInfo{}, 0, &ChangedError{Bucket: b.name, Pinned: pin, Reason: "pinned generation is gone"}
			}
			return nil, ObjectInfo{}, 0, fail(ctx, err)
		}
		return r, ObjectInfo{Key: pin.Key, Size: r.Attrs.Size, ModTime: r.Attrs.LastModified, Generation: r.Attrs.Generation}, r.Attrs.StartOffset, nil
	}, fail).start(ctx)
}

func (b *GCS) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, b.bucket.Object(key), r, size, false)
}

func (b *GCS) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, b.bucket.Object(key).If(storage.Conditions{DoesNotExist: true}), r, size, true)
}

func (b *GCS) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	if prev.Generation == 0 {
		return ObjectInfo{}, b.err(ctx, "put", prev.Key, errors.New("the previous version has no generation"))
	}
	return b.put(ctx, b.bucket.Object(prev.Key).If(storage.Conditions{GenerationMatch: prev.Generation}), r, size, true)
}

// put uploads in one request (ChunkSize 0): the object appears whole or not
// at all, and nothing is buffered in memory. The SDK cannot retry such an
// upload (it keeps no copy of the bytes), so put does, from a seekable body
// (a plain reader is spooled to a temp file first), for the errors the SDK
// counts as transient, up to Retry.Attempts times.
func (b *GCS) put(ctx context.Context, obj *storage.ObjectHandle, r io.Reader, size int64, conditional bool) (ObjectInfo, error) {
	ctx, _ = track(ctx, 0)
	body, done, err := seekable(r, size)
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "put", obj.ObjectName(), err)
	}
	defer done()
	for attempt := 1; ; attempt++ {
		info, err := b.putOnce(ctx, obj, body, size)
		switch {
		case err == nil:
			return info, nil
		case conditional && httpStatus(err) == http.StatusPreconditionFailed:
			if info, ok := ownWrite(ctx, b, obj.ObjectName(), body, size); ok {
				return info, nil
			}
			return ObjectInfo{}, b.err(ctx, "put", obj.ObjectName(), ErrPrecondition)
		case attempt >= b.retry.Attempts || !storage.ShouldRetry(err) || ctx.Err() != nil:
			return ObjectInfo{}, b.err(ctx, "put", obj.ObjectName(), err)
		}
		if err := sleepCtx(ctx, b.retry.backoff(attempt)); err != nil {
			return ObjectInfo{}, b.err(ctx, "put", obj.ObjectName(), err)
		}
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return ObjectInfo{}, b.err(ctx, "put", obj.ObjectName(), err)
		}
	}
}

func (b *GCS) putOnce(ctx context.Context, obj *storage.ObjectHandle, body io.Reader, size int64) (ObjectInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // aborts the upload when the copy fails
	w := obj.NewWriter(ctx)
	w.ChunkSize = 0
	err := copyExactly(body, size)(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ObjectInfo{}, err
	}
	return gcsInfo(w.Attrs()), nil
}

// err is the *Error of op on key; a missing object or bucket also matches
// ErrNotFound.
func (b *GCS) err(ctx context.Context, op, key string, err error) error {
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) || httpStatus(err) == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return b.fail(ctx, op, key, err)
}
