package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3 is a Bucket on Amazon S3 or an S3-compatible endpoint. On a versioned
// bucket the listing comes from ListObjectVersions, so every pin carries the
// version id and a pinned read asks for exactly that version; otherwise pins
// are ETags and reads are conditional on If-Match.
type S3 struct {
	remoteBase
	client *s3.Client
	bucket string
	page   int32

	mu        sync.Mutex
	versioned *bool // known once a probe succeeded
}

// NewS3 builds a client for bucket from cfg alone when it carries keys (no
// environment or shared-config lookups that could mix in other settings),
// else from the SDK's standard credential chain.
func NewS3(ctx context.Context, bucket string, cfg Config) (*S3, error) {
	var awsCfg aws.Config
	if cfg.AccessKey != "" {
		awsCfg = aws.Config{
			Region:      cfg.Region,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey.Reveal(), ""),
		}
	} else {
		var opts []func(*awsconfig.LoadOptions) error
		if cfg.Region != "" {
			opts = append(opts, awsconfig.WithRegion(cfg.Region))
		}
		var err error
		if awsCfg, err = awsconfig.LoadDefaultConfig(ctx, opts...); err != nil {
			return nil, fmt.Errorf("s3://%s: load AWS configuration: %w", bucket, err)
		}
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1" // S3 needs one; custom endpoints ignore it
	}
	b := &S3{remoteBase: newRemoteBase("s3://"+bucket, cfg), bucket: bucket, page: int32(cfg.PageSize)}
	b.client = s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.PathStyle
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			// S3-compatible servers vary in their support of the SDK's newer
			// default checksums; send and check them only where required.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
		o.HTTPClient = &http.Client{Transport: newTransport(cfg, b.retry)}
		// Our bounds, whatever AWS_MAX_ATTEMPTS or a shared config says.
		o.RetryMaxAttempts, o.Retryer = 0, s3Retryer(b.retry)
	})
	return b, nil
}

// s3Retryer is the SDK's standard retryer (what it retries: timeouts,
// connection errors, 5xx, throttling) with our attempts and backoff.
func s3Retryer(r Retry) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = r.Attempts
		o.MaxBackoff = r.MaxDelay
		o.Backoff = s3Backoff(r)
	})
}

// s3Backoff waits Retry.backoff, or what the server's Retry-After asks
// for; a Retry-After beyond MaxDelay ends the retries (as Azure's SDK does).
func s3Backoff(r Retry) retry.BackoffDelayerFunc {
	return func(attempt int, err error) (time.Duration, error) {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.Response != nil {
			return r.wait(attempt, re.Response.Header.Get("Retry-After"), err)
		}
		return r.backoff(attempt), nil
	}
}

func (b *S3) Close() error { return nil }

func (b *S3) maxKeys() *int32 {
	if b.page <= 0 {
		return nil
	}
	return aws.Int32(b.page)
}

// isVersioned asks once per Bucket (a failed probe is retried by the next
// call). A principal that may not read the versioning state gets ETag pins,
// which are still exact.
func (b *S3) isVersioned(ctx context.Context) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.versioned != nil {
		return *b.versioned, nil
	}
	ctx, _ = track(ctx, 0)
	out, err := b.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &b.bucket})
	var api smithy.APIError
	versioned := false
	switch {
	case errors.As(err, &api) && (api.ErrorCode() == "AccessDenied" || api.ErrorCode() == "NotImplemented"):
	case err != nil:
		return false, b.err(ctx, "get versioning of", "", err)
	default:
		versioned = out.Status != ""
	}
	b.versioned = &versioned
	return versioned, nil
}

func (b *S3) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	versioned, err := b.isVersioned(ctx)
	if err != nil {
		return err
	}
	ctx, _ = track(ctx, 0)
	if versioned {
		return b.listVersions(ctx, prefix, fn)
	}
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, MaxKeys: b.maxKeys()})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return b.err(ctx, "list", prefix, err)
		}
		for _, o := range page.Contents {
			info := ObjectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified), ETag: aws.ToString(o.ETag)}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// listVersions keeps the latest live version of each key. Entries at or
// before the last key emitted are dropped: versitygw repeats the last
// version of a page at the start of the next one.
func (b *S3) listVersions(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	in := &s3.ListObjectVersionsInput{Bucket: &b.bucket, Prefix: &prefix, MaxKeys: b.maxKeys()}
	last, emitted := "", false
	for {
		page, err := b.client.ListObjectVersions(ctx, in)
		if err != nil {
			return b.err(ctx, "list versions of", prefix, err)
		}
		for _, v := range page.Versions {
			key := aws.ToString(v.Key)
			if !aws.ToBool(v.IsLatest) || (emitted && key <= last) {
				continue
			}
			info := ObjectInfo{Key: key, Size: aws.ToInt64(v.Size), ModTime: aws.ToTime(v.LastModified), ETag: aws.ToString(v.ETag), VersionID: s3VersionID(v.VersionId)}
			if err := fn(info); err != nil {
				return err
			}
			last, emitted = key, true
		}
		if !aws.ToBool(page.IsTruncated) {
			return nil
		}
		if page.NextKeyMarker == nil && page.NextVersionIdMarker == nil {
			return b.err(ctx, "list versions of", prefix, errors.New("truncated page without a continuation marker"))
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}

// s3VersionID drops "null", the id of an object written before versioning
// was enabled: it does not name one immutable version.
func s3VersionID(v *string) string {
	if s := aws.ToString(v); s != "null" {
		return s
	}
	return ""
}

func (b *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	ctx, _ = track(ctx, 0)
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "stat", key, err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag), VersionID: s3VersionID(out.VersionId)}, nil
}

func (b *S3) ReadPinned(ctx context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	fail := func(ctx context.Context, err error) error { return b.err(ctx, "read", pin.Key, err) }
	return b.pinned(pin, func(ctx context.Context, off int64) (io.ReadCloser, ObjectInfo, int64, error) {
		in := &s3.GetObjectInput{Bucket: &b.bucket, Key: &pin.Key}
		if pin.VersionID != "" {
			in.VersionId = aws.String(pin.VersionID)
		}
		if pin.ETag != "" {
			in.IfMatch = aws.String(pin.ETag)
		}
		if off > 0 {
			in.Range = aws.String(rangeHeader(off))
		}
		out, err := b.client.GetObject(ctx, in)
		if err != nil {
			if changed := b.changedOnRead(pin, err); changed != nil {
				return nil, ObjectInfo{}, 0, changed
			}
			return nil, ObjectInfo{}, 0, fail(ctx, err)
		}
		seen := ObjectInfo{Key: pin.Key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag), VersionID: s3VersionID(out.VersionId)}
		var start int64
		if off > 0 {
			if start, seen.Size, err = parseContentRange(aws.ToString(out.ContentRange)); err != nil {
				out.Body.Close()
				return nil, ObjectInfo{}, 0, fail(ctx, err)
			}
		}
		return out.Body, seen, start, nil
	}, fail).start(ctx)
}

func (b *S3) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, nil)
}

func (b *S3) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
}

func (b *S3) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	if prev.ETag == "" {
		return ObjectInfo{}, b.err(ctx, "put", prev.Key, errors.New("the previous version has no ETag"))
	}
	return b.put(ctx, prev.Key, r, size, func(in *s3.PutObjectInput) { in.IfMatch = aws.String(prev.ETag) })
}

func (b *S3) put(ctx context.Context, key string, r io.Reader, size int64, cond func(*s3.PutObjectInput)) (ObjectInfo, error) {
	ctx, _ = track(ctx, 0)
	body, done, err := seekable(r, size)
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "put", key, err)
	}
	defer done()
	in := &s3.PutObjectInput{Bucket: &b.bucket, Key: &key, Body: body, ContentLength: aws.Int64(size)}
	if cond != nil {
		cond(in)
	}
	out, err := b.client.PutObject(ctx, in)
	if err != nil {
		if s := httpStatus(err); cond != nil && (s == http.StatusPreconditionFailed || s == http.StatusConflict) {
			if info, ok := ownWrite(ctx, b, key, body, size); ok {
				return info, nil
			}
			return ObjectInfo{}, b.err(ctx, "put", key, ErrPrecondition)
		}
		return ObjectInfo{}, b.err(ctx, "put", key, err)
	}
	return ObjectInfo{Key: key, Size: size, ETag: aws.ToString(out.ETag), VersionID: s3VersionID(out.VersionId)}, nil
}

// seekable gives the SDK a body it can rewind (needed to sign and retry
// over plain HTTP), spooling a plain reader to a temp file, never to memory.
func seekable(r io.Reader, size int64) (io.ReadSeeker, func(), error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		return rs, func() {}, nil
	}
	f, err := os.CreateTemp("", "pchronicle-put-*")
	if err != nil {
		return nil, nil, err
	}
	done := func() { f.Close(); os.Remove(f.Name()) }
	if err := copyExactly(r, size)(f); err != nil {
		done()
		return nil, nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		done()
		return nil, nil, err
	}
	return f, done, nil
}

// err is the *Error of op on key; a 404 also matches ErrNotFound.
func (b *S3) err(ctx context.Context, op, key string, err error) error {
	if httpStatus(err) == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return b.fail(ctx, op, key, err)
}
