// Package objstore is the one small interface pchronicle uses to reach
// object stores (S3 and S3-compatible endpoints, Azure Blob, GCS) and the
// local filesystem: a streamed listing, stat, a read pinned to the exact
// version observed at listing time, and puts for writers. Optional
// capabilities (conditional puts) are separate interfaces that callers test
// for, so a backend never pretends to a guarantee it lacks.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Bucket is one bucket, container or local root. Keys are '/'-separated and
// relative to it.
type Bucket interface {
	// List streams the objects whose key starts with prefix, sorted by key,
	// page by page. It stops at the first error fn returns and returns it
	// (wrapped); no further page is requested after that.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Stat returns the current metadata of key; a missing key is ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// ReadPinned reads exactly the version info describes. If the object has
	// changed since, it fails with a *ChangedError (errors.Is ErrChanged) —
	// on open, or at the latest when the reader reaches EOF — and never
	// returns bytes of another version as a complete read.
	ReadPinned(ctx context.Context, info ObjectInfo) (io.ReadCloser, error)
	// Put writes size bytes from r to key, replacing any object there.
	Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error)
	// String names the bucket as a URI without credentials.
	String() string
	// Close releases the client.
	Close() error
}

// ConditionalPutter is implemented by backends that can publish an object
// atomically on a precondition: writers use it for CURRENT and manifests.
// A failed precondition is ErrPrecondition.
type ConditionalPutter interface {
	// PutIfAbsent writes key only if no object exists there.
	PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error)
	// PutIfMatch replaces key only if it is still the version prev pins.
	PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error)
}

var (
	// ErrNotFound is returned by Stat (and wrapped by other calls) for a
	// missing key or bucket.
	ErrNotFound = errors.New("object not found")
	// ErrChanged is matched by *ChangedError.
	ErrChanged = errors.New("object changed since it was pinned")
	// ErrPrecondition is returned by a ConditionalPutter whose condition
	// failed: the object exists, or is no longer the expected version.
	ErrPrecondition = errors.New("precondition failed")
)

// ChangedError reports that a pinned object no longer is the pinned version.
type ChangedError struct {
	Bucket string     // Bucket.String()
	Pinned ObjectInfo // what the Snapshot pinned
	Reason string     // what was seen instead
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s/%s is not the pinned version (%s %s): %s",
		e.Bucket, e.Pinned.Key, e.Pinned.RevisionKind(), e.Pinned.Ref(), e.Reason)
}

func (e *ChangedError) Is(target error) bool { return target == ErrChanged }

// ObjectInfo is an object's metadata as one listing or stat observed it:
// the pin a Snapshot records.
type ObjectInfo struct {
	Key        string
	Size       int64
	ModTime    time.Time
	ETag       string // as the server sent it, quotes included
	VersionID  string // S3 version id of a versioned bucket
	Generation int64  // GCS generation
	Dev, Inode uint64 // local files (Unix)
}

// Revision kinds, weakest last.
const (
	KindS3Version     = "s3_version"
	KindGCSGeneration = "gcs_generation"
	KindETag          = "etag"
	KindLocal         = "local_fingerprint"
	KindKeySizeMtime  = "key_size_mtime" // no version or ETag: a weaker pin
)

// RevisionKind names the strongest pin info carries; it is what the
// sources.revision_kind column reports.
func (o ObjectInfo) RevisionKind() string {
	switch {
	case o.VersionID != "":
		return KindS3Version
	case o.Generation != 0:
		return KindGCSGeneration
	case o.ETag != "":
		return KindETag
	case o.Inode != 0:
		return KindLocal
	default:
		return KindKeySizeMtime
	}
}

// Ref is the pin's deterministic string form (sources.snapshot_ref).
func (o ObjectInfo) Ref() string {
	var b strings.Builder
	switch o.RevisionKind() {
	case KindS3Version:
		fmt.Fprintf(&b, "version=%s;", o.VersionID)
	case KindGCSGeneration:
		fmt.Fprintf(&b, "generation=%d;", o.Generation)
	case KindETag:
		fmt.Fprintf(&b, "etag=%s;", o.ETag)
	case KindLocal:
		fmt.Fprintf(&b, "dev=%d;ino=%d;", o.Dev, o.Inode)
	}
	b.WriteString("size=" + strconv.FormatInt(o.Size, 10))
	if !o.ModTime.IsZero() {
		b.WriteString(";mtime=" + o.ModTime.UTC().Format(time.RFC3339Nano))
	}
	return b.String()
}

// checkedReader counts the bytes of a pinned read and turns a short or long
// body, or a failed end-of-read check, into a *ChangedError at EOF, so a
// caller that reads to EOF never takes another version for the pinned one.
type checkedReader struct {
	io.ReadCloser
	bucket string
	pin    ObjectInfo
	n      int64
	atEOF  func() error // optional extra check (local: fstat again)
}

func newCheckedReader(rc io.ReadCloser, bucket string, pin ObjectInfo, atEOF func() error) io.ReadCloser {
	return &checkedReader{ReadCloser: rc, bucket: bucket, pin: pin, atEOF: atEOF}
}

func (r *checkedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n += int64(n)
	if r.n > r.pin.Size {
		return n, r.changed(fmt.Sprintf("more than the pinned %d bytes", r.pin.Size))
	}
	if err == io.EOF {
		if r.n != r.pin.Size {
			return n, r.changed(fmt.Sprintf("read %d bytes, pinned %d", r.n, r.pin.Size))
		}
		if r.atEOF != nil {
			if cerr := r.atEOF(); cerr != nil {
				return n, cerr
			}
		}
	}
	return n, err
}

func (r *checkedReader) changed(reason string) error {
	return &ChangedError{Bucket: r.bucket, Pinned: r.pin, Reason: reason}
}
