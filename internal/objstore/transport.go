package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// transport is the RoundTripper under every SDK client of a Bucket. The
// SDKs retry, but none of them bounds the wait for a hung server on its
// own, so it gives each request a deadline for its response headers and
// fails a body that stalls while being read, both as retryable timeouts. It
// also records every request of a call in the call's tally (see track), so
// errors can say how many attempts failed, and refuses requests beyond a
// pinned read's budget.
type transport struct {
	next            http.RoundTripper
	response, stall time.Duration
}

// defaultBase carries the requests of Buckets whose Config has no
// Transport: Go's default settings (proxy variables honoured), one
// connection pool for the process.
var defaultBase = http.DefaultTransport.(*http.Transport).Clone()

func newTransport(cfg Config, r Retry) *transport {
	next := cfg.Transport
	if next == nil {
		next = defaultBase
	}
	return &transport{next: next, response: r.ResponseTimeout, stall: r.StallTimeout}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tl := tallyFrom(req.Context())
	if err := tl.take(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	var late atomic.Bool
	timer := time.AfterFunc(t.response, func() { late.Store(true); cancel() })
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	timer.Stop()
	if err == nil && late.Load() { // the deadline passed as the headers came in
		resp.Body.Close()
		err = context.Canceled
	}
	if err != nil {
		cancel()
		if late.Load() {
			err = &TimeoutError{What: "no response headers", After: t.response}
		}
		tl.fail(err.Error())
		return nil, err
	}
	if retryableStatus(resp.StatusCode) {
		tl.fail(resp.Status)
	}
	resp.Body = &stallBody{body: resp.Body, cancel: cancel, stall: t.stall, tally: tl}
	return resp, nil
}

func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// stallBody fails a Read that gets no byte within stall. The clock runs
// only inside Read: a caller that pauses between reads is not a stall.
type stallBody struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	stall  time.Duration
	tally  *tally

	timer   *time.Timer // created by the first Read
	stalled atomic.Bool
}

func (b *stallBody) Read(p []byte) (int, error) {
	if b.timer == nil {
		b.timer = time.AfterFunc(b.stall, func() { b.stalled.Store(true); b.cancel() })
	} else {
		b.timer.Reset(b.stall)
	}
	n, err := b.body.Read(p)
	b.timer.Stop()
	if err != nil && err != io.EOF {
		if b.stalled.Load() {
			err = &TimeoutError{What: "response body stalled", After: b.stall}
		}
		b.tally.fail(err.Error())
	}
	return n, err
}

func (b *stallBody) Close() error {
	err := b.body.Close()
	b.cancel()
	return err
}

// TimeoutError is a request that got no response headers, or a body that
// delivered nothing, within the configured time. The SDKs retry it like a
// network timeout.
type TimeoutError struct {
	What  string
	After time.Duration
}

func (e *TimeoutError) Error() string   { return fmt.Sprintf("%s within %s", e.What, e.After) }
func (e *TimeoutError) Timeout() bool   { return true }
func (e *TimeoutError) Temporary() bool { return true }

// budgetError is returned for a request beyond a pinned read's budget. It
// tells each SDK not to retry it: it ends the read. (Its text must not
// quote the last failure: GCS retries errors whose text says "connection
// reset"; the *Error of the read says what the last failure was.)
type budgetError struct{ limit int }

func (e *budgetError) Error() string {
	return fmt.Sprintf("gave up after %d requests for one read", e.limit)
}

// RetryableError is how the AWS SDK asks whether to retry an error.
func (*budgetError) RetryableError() bool { return false }

// NonRetriable marks the error as final for the Azure SDK.
func (*budgetError) NonRetriable() {}

// ErrBudget matches the error of a pinned read that used up its
// ReadRequests.
var ErrBudget = errors.New("read request budget exhausted")

func (*budgetError) Is(target error) bool { return target == ErrBudget }

// tally counts the requests of one call and remembers the last failure;
// limit > 0 makes it refuse requests beyond that many.
type tally struct {
	mu       sync.Mutex
	limit    int
	requests int
	failures int
	last     string
}

type tallyKey struct{}

// track gives ctx a fresh tally for one call (limit 0: unbounded).
func track(ctx context.Context, limit int) (context.Context, *tally) {
	t := &tally{limit: limit}
	return context.WithValue(ctx, tallyKey{}, t), t
}

func tallyFrom(ctx context.Context) *tally {
	t, _ := ctx.Value(tallyKey{}).(*tally)
	return t
}

func (t *tally) take() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limit > 0 && t.requests >= t.limit {
		return &budgetError{limit: t.limit}
	}
	t.requests++
	return nil
}

func (t *tally) fail(what string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures++
	t.last = what
}

// failed says how many requests (or bodies) of the call failed, and how
// the last one did.
func (t *tally) failed() (int, string) {
	if t == nil {
		return 0, ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failures, t.last
}
