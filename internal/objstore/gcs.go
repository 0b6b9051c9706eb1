package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
)

// GCS is a Bucket on Google Cloud Storage. Pins are generations. A pinned
// read first compares the live generation (fake-gcs-server ignores
// generation preconditions, so the check cannot be left to the server),
// then reads that exact generation and checks the generation it got.
type GCS struct {
	client *storage.Client
	bucket *storage.BucketHandle
	name   string
	page   int
	scrub  scrubber
}

// NewGCS connects bucket with Application Default Credentials, or, when
// cfg.Endpoint names an emulator such as fake-gcs-server, without
// authentication at that endpoint.
func NewGCS(ctx context.Context, name string, cfg Config) (*GCS, error) {
	var opts []option.ClientOption
	if cfg.Endpoint != "" {
		ep := strings.TrimRight(cfg.Endpoint, "/")
		if !strings.HasSuffix(ep, "/storage/v1") {
			ep += "/storage/v1"
		}
		opts = append(opts, option.WithEndpoint(ep+"/"), option.WithoutAuthentication())
	}
	if cfg.Transport != nil {
		rt, err := htransport.NewTransport(ctx, cfg.Transport, opts...)
		if err != nil {
			return nil, fmt.Errorf("gs://%s: %w", name, err)
		}
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: rt}))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, newScrubber(cfg).wrap(err, "gs://%s: connect", name)
	}
	return &GCS{client: client, bucket: client.Bucket(name), name: name, page: cfg.PageSize, scrub: newScrubber(cfg)}, nil
}

func (b *GCS) String() string { return "gs://" + b.name }
func (b *GCS) Close() error   { return b.client.Close() }

func gcsInfo(a *storage.ObjectAttrs) ObjectInfo {
	return ObjectInfo{Key: a.Name, Size: a.Size, ModTime: a.Updated, ETag: a.Etag, Generation: a.Generation}
}

func (b *GCS) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated", "Etag", "Generation"}); err != nil {
		return fmt.Errorf("%s: list %q: %w", b, prefix, err)
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
			return b.err(err, "list %q", prefix)
		}
		if err := fn(gcsInfo(a)); err != nil {
			return err
		}
	}
}

func (b *GCS) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	a, err := b.bucket.Object(key).Attrs(ctx)
	if err != nil {
		return ObjectInfo{}, b.err(err, "stat %s", key)
	}
	return gcsInfo(a), nil
}

func (b *GCS) ReadPinned(ctx context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	obj := b.bucket.Object(pin.Key)
	if pin.Generation != 0 {
		cur, err := b.Stat(ctx, pin.Key)
		if errors.Is(err, ErrNotFound) {
			return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: "object is gone"}
		}
		if err != nil {
			return nil, err
		}
		if cur.Generation != pin.Generation {
			return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: fmt.Sprintf("generation is %d", cur.Generation)}
		}
		obj = obj.Generation(pin.Generation)
	}
	r, err := obj.NewReader(ctx)
	if err != nil {
		if s := httpStatus(err); s == http.StatusNotFound || s == http.StatusPreconditionFailed || errors.Is(err, storage.ErrObjectNotExist) {
			return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: "pinned generation is gone"}
		}
		return nil, b.err(err, "read %s", pin.Key)
	}
	seen := ObjectInfo{Key: pin.Key, Size: r.Attrs.Size, ModTime: r.Attrs.LastModified, Generation: r.Attrs.Generation}
	if reason := remoteMismatch(pin, seen); reason != "" {
		r.Close()
		return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: reason}
	}
	return newCheckedReader(r, b.String(), pin, nil), nil
}

func (b *GCS) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, b.bucket.Object(key), r, size, false)
}

func (b *GCS) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, b.bucket.Object(key).If(storage.Conditions{DoesNotExist: true}), r, size, true)
}

func (b *GCS) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	if prev.Generation == 0 {
		return ObjectInfo{}, fmt.Errorf("%s: put %s: the previous version has no generation", b, prev.Key)
	}
	return b.put(ctx, b.bucket.Object(prev.Key).If(storage.Conditions{GenerationMatch: prev.Generation}), r, size, true)
}

// put uploads in one request (ChunkSize 0): the object appears whole or not
// at all, and nothing is buffered.
func (b *GCS) put(ctx context.Context, obj *storage.ObjectHandle, r io.Reader, size int64, conditional bool) (ObjectInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // aborts the upload when the copy fails
	w := obj.NewWriter(ctx)
	w.ChunkSize = 0
	err := copyExactly(r, size)(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if conditional && httpStatus(err) == http.StatusPreconditionFailed {
			return ObjectInfo{}, fmt.Errorf("%s: put %s: %w", b, obj.ObjectName(), ErrPrecondition)
		}
		return ObjectInfo{}, b.err(err, "put %s", obj.ObjectName())
	}
	return gcsInfo(w.Attrs()), nil
}

func (b *GCS) err(err error, format string, args ...any) error {
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) || httpStatus(err) == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return b.scrub.wrap(err, "%s: "+format, append([]any{b}, args...)...)
}
