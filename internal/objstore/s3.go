package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// S3 is a Bucket on Amazon S3 or an S3-compatible endpoint. On a versioned
// bucket the listing comes from ListObjectVersions, so every pin carries the
// version id and a pinned read asks for exactly that version; otherwise pins
// are ETags and reads are conditional on If-Match.
type S3 struct {
	client *s3.Client
	bucket string
	page   int32
	scrub  scrubber

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
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.PathStyle
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			// S3-compatible servers vary in their support of the SDK's newer
			// default checksums; send and check them only where required.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
		if cfg.Transport != nil {
			o.HTTPClient = &http.Client{Transport: cfg.Transport}
		}
	})
	return &S3{client: client, bucket: bucket, page: int32(cfg.PageSize), scrub: newScrubber(cfg)}, nil
}

func (b *S3) String() string { return "s3://" + b.bucket }
func (b *S3) Close() error   { return nil }

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
	out, err := b.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &b.bucket})
	var api smithy.APIError
	versioned := false
	switch {
	case errors.As(err, &api) && (api.ErrorCode() == "AccessDenied" || api.ErrorCode() == "NotImplemented"):
	case err != nil:
		return false, b.err(err, "get versioning")
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
	if versioned {
		return b.listVersions(ctx, prefix, fn)
	}
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, MaxKeys: b.maxKeys()})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return b.err(err, "list %q", prefix)
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
			return b.err(err, "list versions %q", prefix)
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
			return fmt.Errorf("%s: list versions %q: truncated page without a continuation marker", b, prefix)
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
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return ObjectInfo{}, b.err(err, "stat %s", key)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag), VersionID: s3VersionID(out.VersionId)}, nil
}

func (b *S3) ReadPinned(ctx context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &b.bucket, Key: &pin.Key}
	if pin.VersionID != "" {
		in.VersionId = aws.String(pin.VersionID)
	}
	if pin.ETag != "" {
		in.IfMatch = aws.String(pin.ETag)
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		if s := httpStatus(err); s == http.StatusNotFound || s == http.StatusPreconditionFailed {
			return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: fmt.Sprintf("server answered %d %s", s, http.StatusText(s))}
		}
		return nil, b.err(err, "read %s", pin.Key)
	}
	seen := ObjectInfo{Key: pin.Key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag), VersionID: s3VersionID(out.VersionId)}
	if reason := remoteMismatch(pin, seen); reason != "" {
		out.Body.Close()
		return nil, &ChangedError{Bucket: b.String(), Pinned: pin, Reason: reason}
	}
	return newCheckedReader(out.Body, b.String(), pin, nil), nil
}

func (b *S3) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, nil)
}

func (b *S3) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
}

func (b *S3) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	if prev.ETag == "" {
		return ObjectInfo{}, fmt.Errorf("%s: put %s: the previous version has no ETag", b, prev.Key)
	}
	return b.put(ctx, prev.Key, r, size, func(in *s3.PutObjectInput) { in.IfMatch = aws.String(prev.ETag) })
}

func (b *S3) put(ctx context.Context, key string, r io.Reader, size int64, cond func(*s3.PutObjectInput)) (ObjectInfo, error) {
	body, done, err := seekable(r, size)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("%s: put %s: %w", b, key, err)
	}
	defer done()
	in := &s3.PutObjectInput{Bucket: &b.bucket, Key: &key, Body: body, ContentLength: aws.Int64(size)}
	if cond != nil {
		cond(in)
	}
	out, err := b.client.PutObject(ctx, in)
	if err != nil {
		if s := httpStatus(err); cond != nil && (s == http.StatusPreconditionFailed || s == http.StatusConflict) {
			return ObjectInfo{}, fmt.Errorf("%s: put %s: %w", b, key, ErrPrecondition)
		}
		return ObjectInfo{}, b.err(err, "put %s", key)
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

func (b *S3) err(err error, format string, args ...any) error {
	if httpStatus(err) == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return b.scrub.wrap(err, "%s: "+format, append([]any{b}, args...)...)
}
