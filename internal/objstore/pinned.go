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

// rangeOpener opens a pinned object's bytes from off to the end with one
// call conditioned on the pin (version id, If-Match ETag or generation). It
// returns the body, what the response says the object is (Size: the whole
// object's) and the offset the body starts at. Its errors are final: the
// backend's error for the read, or a *ChangedError.
type rangeOpener func(ctx context.Context, off int64) (body io.ReadCloser, seen ObjectInfo, start int64, err error)

// pinnedRead is one remote backend's pinned read of one object.
type pinnedRead struct {
	bucket string // Bucket.String()
	pin    ObjectInfo
	retry  Retry
	open   rangeOpener
	fail   func(ctx context.Context, err error) error // the backend's error for a failed read
}

// start opens the read. Every response is checked against the pin before a
// byte of it is handed out; a body that fails mid-way (reset, cut short,
// stalled) is resumed from the byte it reached with the same condition,
// after a backoff. A change of the object in between fails the resumption
// (412, a missing version, another ETag or generation), so bytes of two
// versions are never mixed. All requests of the read, retries and
// resumptions included, count against Retry.ReadRequests.
func (p pinnedRead) start(ctx context.Context) (io.ReadCloser, error) {
	ctx, _ = track(ctx, p.retry.ReadRequests)
	body, err := p.openAt(ctx, 0)
	if err != nil {
		return nil, err
	}
	return newCheckedReader(&resumingReader{ctx: ctx, p: p, body: body}, p.bucket, p.pin, nil), nil
}

func (p pinnedRead) openAt(ctx context.Context, off int64) (io.ReadCloser, error) {
	body, seen, start, err := p.open(ctx, off)
	if err != nil {
		return nil, err
	}
	if reason := remoteMismatch(p.pin, seen); reason != "" {
		body.Close()
		return nil, &ChangedError{Bucket: p.bucket, Pinned: p.pin, Reason: reason}
	}
	if start != off {
		body.Close()
		return nil, p.fail(ctx, fmt.Errorf("asked for the bytes from offset %d, the server sent them from %d", off, start))
	}
	return body, nil
}

// resumingReader reads a pinned object across resumptions. The
// checkedReader around it counts the bytes and checks the size at EOF.
type resumingReader struct {
	ctx     context.Context
	p       pinnedRead
	body    io.ReadCloser
	off     int64 // bytes delivered so far
	resumes int
	err     error // sticky: the read failed for good
}

func (r *resumingReader) Read(b []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for {
		n, err := r.body.Read(b)
		r.off += int64(n)
		if err == nil || err == io.EOF {
			return n, err
		}
		if r.err = r.resume(err); r.err != nil {
			return n, r.err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// resume replaces a failed body by a new one starting at r.off, or says
// why the read ends.
func (r *resumingReader) resume(cause error) error {
	r.body.Close()
	r.body = io.NopCloser(strings.NewReader(""))
	if errors.Is(cause, ErrChanged) {
		return cause
	}
	if r.ctx.Err() != nil || errors.Is(cause, ErrBudget) {
		return r.p.fail(r.ctx, cause)
	}
	if r.off >= r.p.pin.Size {
		return nil // every byte arrived before the failure; EOF is next
	}
	r.resumes++
	if err := sleepCtx(r.ctx, r.p.retry.backoff(r.resumes)); err != nil {
		return r.p.fail(r.ctx, err)
	}
	body, err := r.p.openAt(r.ctx, r.off)
	if err != nil {
		return err
	}
	r.body = body
	return nil
}

func (r *resumingReader) Close() error { return r.body.Close() }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rangeHeader is the HTTP Range of the bytes from off to the end.
func rangeHeader(off int64) string { return "bytes=" + strconv.FormatInt(off, 10) + "-" }

// parseContentRange reads "bytes first-last/total" (206 responses).
func parseContentRange(s string) (first, total int64, err error) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	rng, size, ok2 := strings.Cut(spec, "/")
	a, _, ok3 := strings.Cut(rng, "-")
	if ok && ok2 && ok3 {
		first, err = strconv.ParseInt(a, 10, 64)
		if err == nil {
			total, err = strconv.ParseInt(size, 10, 64)
		}
		if err == nil && 0 <= first && first < total {
			return first, total, nil
		}
	}
	return 0, 0, fmt.Errorf("bad Content-Range %.80q in a ranged response", s)
}
