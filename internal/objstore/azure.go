package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azure is a Bucket on an Azure Blob container. Pins are ETags and pinned
// reads are conditional on If-Match (Azurite keeps no version ids).
type Azure struct {
	remoteBase
	client  *container.Client
	account string
	name    string
	page    int32
}

// NewAzure connects container with the account's shared key when cfg
// carries one, else anonymously (public containers). The account is
// cfg.Account, or cfg.AccessKey as the --ak of a pin; the endpoint defaults
// to https://<account>.blob.core.windows.net.
func NewAzure(ctx context.Context, name string, cfg Config) (*Azure, error) {
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
	b := &Azure{remoteBase: newRemoteBase("az://"+name, cfg), account: account, name: name, page: int32(cfg.PageSize)}
	var opts container.ClientOptions
	opts.Transport = &http.Client{Transport: newTransport(cfg, b.retry)}
	opts.Retry = policy.RetryOptions{
		MaxRetries:    int32(b.retry.Attempts - 1),
		RetryDelay:    b.retry.BaseDelay,
		MaxRetryDelay: b.retry.MaxDelay,
	}
	if opts.Retry.MaxRetries == 0 {
		opts.Retry.MaxRetries = -1 // 0 would mean the SDK default of 3
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
	if err != nil {
		return nil, b.err(ctx, "connect", "", err)
	}
	b.client = client
	return b, nil
}

func (b *Azure) Close() error { return nil }

func (b *Azure) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	ctx, _ = track(ctx, 0)
	opts := &container.ListBlobsFlatOptions{Prefix: &prefix}
	if b.page > 0 {
		opts.MaxResults = &b.page
	}
	pager := b.client.NewListBlobsFlatPager(opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return b.err(ctx, "list", prefix, err)
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
	ctx, _ = track(ctx, 0)
	p, err := b.client.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "stat", key, err)
	}
	return ObjectInfo{Key: key, Size: deref(p.ContentLength), ModTime: deref(p.LastModified), ETag: etagString(p.ETag)}, nil
}

func (b *Azure) ReadPinned(ctx context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	fail := func(ctx context.Context, err error) error { return b.err(ctx, "read", pin.Key, err) }
	return b.pinned(pin, func(ctx context.Context, off int64) (io.ReadCloser, ObjectInfo, int64, error) {
		var opts blob.DownloadStreamOptions
		if pin.ETag != "" {
			etag := azcore.ETag(pin.ETag)
			opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}
		}
		if off > 0 {
			opts.Range = blob.HTTPRange{Offset: off} // Count 0: to the end
		}
		resp, err := b.client.NewBlobClient(pin.Key).DownloadStream(ctx, &opts)
		if err != nil {
			if changed := b.changedOnRead(pin, err); changed != nil {
				return nil, ObjectInfo{}, 0, changed
			}
			return nil, ObjectInfo{}, 0, fail(ctx, err)
		}
		seen := ObjectInfo{Key: pin.Key, Size: deref(resp.ContentLength), ModTime: deref(resp.LastModified), ETag: etagString(resp.ETag)}
		var start int64
		if off > 0 {
			if start, seen.Size, err = parseContentRange(deref(resp.ContentRange)); err != nil {
				resp.Body.Close()
				return nil, ObjectInfo{}, 0, fail(ctx, err)
			}
		}
		return resp.Body, seen, start, nil
	}, fail).start(ctx)
}

func (b *Azure) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, nil)
}

func (b *Azure) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)})
}

func (b *Azure) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	if prev.ETag == "" {
		return ObjectInfo{}, b.err(ctx, "put", prev.Key, errors.New("the previous version has no ETag"))
	}
	return b.put(ctx, prev.Key, r, size, &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag(prev.ETag))})
}

// put is one Put Blob request: the object appears whole or not at all.
func (b *Azure) put(ctx context.Context, key string, r io.Reader, size int64, cond *blob.ModifiedAccessConditions) (ObjectInfo, error) {
	ctx, _ = track(ctx, 0)
	body, done, err := seekable(r, size)
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "put", key, err)
	}
	defer done()
	var opts blockblob.UploadOptions
	if cond != nil {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: cond}
	}
	resp, err := b.client.NewBlockBlobClient(key).Upload(ctx, streaming.NopCloser(body), &opts)
	if err != nil {
		if s := httpStatus(err); cond != nil && (s == http.StatusPreconditionFailed || s == http.StatusConflict) {
			if info, ok := ownWrite(ctx, b, key, body, size); ok {
				return info, nil
			}
			return ObjectInfo{}, b.err(ctx, "put", key, ErrPrecondition)
		}
		return ObjectInfo{}, b.err(ctx, "put", key, err)
	}
	return ObjectInfo{Key: key, Size: size, ModTime: deref(resp.LastModified), ETag: etagString(resp.ETag)}, nil
}

// err is the *Error of op on key; a 404 also matches ErrNotFound.
func (b *Azure) err(ctx context.Context, op, key string, err error) error {
	if httpStatus(err) == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return b.fail(ctx, op, key, err)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
