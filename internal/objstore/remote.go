package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// httpStatus digs the HTTP status out of a response error (the AWS and
// Azure SDKs', the GCS backend's *gcsError); 0 when there is none.
func httpStatus(err error) int {
	var aws interface{ HTTPStatusCode() int }
	var az *azcore.ResponseError
	var gcs *gcsError
	switch {
	case errors.As(err, &aws):
		return aws.HTTPStatusCode()
	case errors.As(err, &az):
		return az.StatusCode
	case errors.As(err, &gcs):
		return gcs.Code
	}
	return 0
}

// remoteMismatch compares what a pinned read's response says it is against
// the pin. Servers that ignore a precondition (fake-gcs, gofakes3) are
// caught here, before a byte is handed out.
func remoteMismatch(pin, seen ObjectInfo) string {
	switch {
	case pin.VersionID != "" && seen.VersionID != "" && seen.VersionID != pin.VersionID:
		return "version is " + seen.VersionID
	case pin.Generation != 0 && seen.Generation != pin.Generation:
		return fmt.Sprintf("generation is %d", seen.Generation)
	case pin.ETag != "" && seen.ETag != "" && !etagEqual(pin.ETag, seen.ETag):
		return "ETag is " + seen.ETag
	case seen.Size != pin.Size:
		return fmt.Sprintf("size is %d", seen.Size)
	case pin.RevisionKind() == KindKeySizeMtime && !sameSecond(pin.ModTime, seen.ModTime):
		return "mtime is " + seen.ModTime.UTC().Format(time.RFC3339)
	}
	return ""
}

// etagEqual compares ETags as opaque values, ignoring quoting and the weak
// marker, which servers apply inconsistently between listings and reads.
func etagEqual(a, b string) bool {
	norm := func(s string) string { return strings.Trim(strings.TrimPrefix(s, "W/"), `"`) }
	return norm(a) == norm(b)
}

// sameSecond compares modification times at HTTP-date precision: listings
// carry milliseconds, Last-Modified headers only seconds.
func sameSecond(a, b time.Time) bool {
	return a.Truncate(time.Second).Equal(b.Truncate(time.Second))
}

// remoteBase is what the S3, Azure and GCS backends share: their name, the
// retry bounds their clients were built with, and the error scrubber.
type remoteBase struct {
	name  string // Bucket.String(): scheme://bucket
	retry Retry
	scrub scrubber
}

func newRemoteBase(name string, cfg Config) remoteBase {
	return remoteBase{name: name, retry: cfg.Retry.withDefaults(), scrub: newScrubber(cfg)}
}

func (b remoteBase) String() string { return b.name }

// fail is the *Error of op on key (a prefix for listings), with the
// failures the call's tally counted (see track).
func (b remoteBase) fail(ctx context.Context, op, key string, err error) error {
	return b.scrub.error(op, b.name+"/"+key, tallyFrom(ctx), err)
}

// pinned builds the pinned read of pin through open.
func (b remoteBase) pinned(pin ObjectInfo, open rangeOpener, fail func(context.Context, error) error) pinnedRead {
	return pinnedRead{bucket: b.name, pin: pin, retry: b.retry, open: open, fail: fail}
}

// changedOnRead is the *ChangedError of a pinned read the server refused:
// the version is gone (404) or no longer matches (412).
func (b remoteBase) changedOnRead(pin ObjectInfo, err error) error {
	if s := httpStatus(err); s == http.StatusNotFound || s == http.StatusPreconditionFailed {
		return &ChangedError{Bucket: b.name, Pinned: pin, Reason: fmt.Sprintf("server answered %d %s", s, http.StatusText(s))}
	}
	return nil
}

// ownWrite handles a conditional put refused (412) after one of its
// attempts failed: that attempt may have reached the server and only its
// answer been lost, so the retry was refused because of the put's own
// write. When key now holds exactly the bytes of body, the put took effect
// and its ObjectInfo is returned; otherwise ok is false and the refusal
// stands.
func ownWrite(ctx context.Context, b Bucket, key string, body io.ReadSeeker, size int64) (info ObjectInfo, ok bool) {
	if n, _ := tallyFrom(ctx).failed(); n == 0 {
		return ObjectInfo{}, false
	}
	info, err := b.Stat(ctx, key)
	if err != nil || info.Size != size {
		return ObjectInfo{}, false
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return ObjectInfo{}, false
	}
	rc, err := b.ReadPinned(ctx, info)
	if err != nil {
		return ObjectInfo{}, false
	}
	defer rc.Close()
	same, err := sameBytes(rc, body)
	return info, err == nil && same
}

// sameBytes compares two streams to their ends.
func sameBytes(a, b io.Reader) (bool, error) {
	bufA, bufB := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		n, errA := io.ReadFull(a, bufA)
		m, errB := io.ReadFull(b, bufB[:n])
		if m != n || !bytes.Equal(bufA[:n], bufB[:m]) {
			return false, nil
		}
		switch {
		case errA == io.EOF || errA == io.ErrUnexpectedEOF:
			_, err := io.ReadFull(b, bufB[:1]) // b must end too
			return err == io.EOF, nil
		case errA != nil:
			return false, errA
		case errB != nil:
			return false, errB
		}
	}
}
