package objstore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azure is a Bucket on an Azure Blob container. Pins are ETags and pinned
// reads are conditional on If-Match (Azurite keeps no version ids).
type Azure struct {
	client  *container.Client
	account string
	name    string
	page    int32
	scrub   scrubber
}

// NewAzure connects container with the account's shared key when cfg
// carries one, else anonymously (public containers). The account is
// cfg.Account, or cfg.AccessKey as the --ak of a pin; the endpoint defaults
// to https://<account>.blob.core.windows.net.
func NewAzure(_ context.Context, name string, cfg Config) (*Azure, error) {
	account := cfg.Account
	if account == "" {
		account = cfg.AccessKey
	}
	if account == "" {
		return nil, fmt.Errorf("az://%s: no storage account configured", name)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "https://" + account + ".blob.core.windows.net"
	}
	u := strings.TrimRight(endpoint, "/") + "/" + name
	var opts container.ClientOptions
	if cfg.Transport != nil {
		opts.Transport = &http.Client{Transport: cfg.Transport}
	}
	var client *container.Client
	var err error
	if key := cfg.SecretKey.Reveal(); key != "" {
		var cred *container.SharedKeyCredential
		if cred, err = container.NewSharedKeyCredential(account, key); err == nil {
			client, err = container.NewClientWithSharedKeyCredential(u, cred, &opts)
		}
	} else {
		client, err = container.NewClientWithNoCredential(u, &opts)
	}
	b := &Azure{account: account, name: name, page: int32(cfg.PageSize), scrub: newScrubber(cfg)}
	if err != nil {
		return nil, b.err(err, "connect")
	}
	b.client = client
	return b, nil
}

func (b *Azure) String() string { return "az://" + b.name }
func (b *Azure) Close() error   { return nil }

func (b *Azure) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	opts := &container.ListBlobsFlatOptions{Prefix: &prefix}
	if b.page > 0 {
		opts.MaxResults = &b.page
	}
	pager := b.client.NewListBlobsFlatPager(opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return b.err(err, "list %q", prefix)
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil || item.Properties == nil {
				continue
			}
			p := item.Properties
			info := ObjectInfo{Key: *item.Name, Size: deref(p.ContentLength), ModTime: deref(p.LastModified), ETag: etagString(p.ETag)}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

func etagString(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return string(*e)
}

func (b *Azure) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	p, err := b.client.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return ObjectInfo{}, b.err(err, "stat %s", key)
	}
	return ObjectInfo{Key: key, Size: deref(p.ContentLength), ModTime: deref(p.LastModified), ETag: etagString(p.ETag)}, nil
}

func (b *Azure) ReadPinned(ctx context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	var opts blob.DownloadStreamOptions
	if pin.ETag != "" {
		etag := azcore.ETag(pin.ETag)
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}
	}
	resp, err := b.client.NewBlobClient(pin.Key).DownloadStream(ctx, &opts)
	if err != nil {
		if s := httpStatus(err); s == http.StatusNotFound || s == http.StatusPreconditionFailed {
			return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: fmt.Sprintf("server answered %d %s", s, http.StatusText(s))}
		}
		return nil, b.err(err, "read %s", pin.Key)
	}
	seen := ObjectInfo{Key: pin.Key, Size: deref(resp.ContentLength), ModTime: deref(resp.LastModified), ETag: etagString(resp.ETag)}
	if reason := remoteMismatch(pin, seen); reason != "" {
		resp.Body.Close()
		return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: reason}
	}
	return newCheckedReader(resp.Body, b.String(), pin, nil), nil
}

func (b *Azure) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, nil)
}

func (b *Azure) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)})
}

func (b *Azure) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	if prev.ETag == "" {
		return ObjectInfo{}, fmt.Errorf("%s: put %s: the previous version has no ETag", b, prev.Key)
	}
	return b.put(ctx, prev.Key, r, size, &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag(prev.ETag))})
}

// put is one Put Blob request: the object appears whole or not at all.
func (b *Azure) put(ctx context.Context, key string, r io.Reader, size int64, cond *blob.ModifiedAccessConditions) (ObjectInfo, error) {
	body, done, err := seekable(r, size)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("%s: put %s: %w", b, key, err)
	}
	defer done()
	var opts blockblob.UploadOptions
	if cond != nil {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: cond}
	}
	resp, err := b.client.NewBlockBlobClient(key).Upload(ctx, streaming.NopCloser(body), &opts)
	if err != nil {
		if s := httpStatus(err); cond != nil && (s == http.StatusPreconditionFailed || s == http.StatusConflict) {
			return ObjectInfo{}, fmt.Errorf("%s: put %s: %w", b, key, ErrPrecondition)
		}
		return ObjectInfo{}, b.err(err, "put %s", key)
	}
	return ObjectInfo{Key: key, Size: size, ModTime: deref(resp.LastModified), ETag: etagString(resp.ETag)}, nil
}

func (b *Azure) err(err error, format string, args ...any) error {
	if httpStatus(err) == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return b.scrub.wrap(err, "%s: "+format, append([]any{b}, args...)...)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
