package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// transport is the RoundTripper under every SDK client of a Bucket. The
// SDKs retry, but none of them bounds the wait for a hung server on its
// own, so each attempt runs against a clock (see deadline): while its body
// is being sent, the stall timeout, restarted by every read the transport
// makes of it; then the response timeout, until the headers arrive; then,
// inside each read of the response body, the stall timeout again. Expiring
// cancels the attempt with a retryable *TimeoutError. The transport also
// records every request of a call in the call's tally (see track), so
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

// Clock phases, as the timeout error names them.
const (
	phaseSend     = "request body stalled"
	phaseResponse = "no response headers"
	phaseBody     = "response body stalled"
)

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tl := tallyFrom(req.Context())
	if err := tl.take(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	d := newDeadline(cancel)
	out := req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		d.request(phaseSend, t.stall)
		out.Body = &sendBody{ReadCloser: req.Body, read: func(eof bool) {
			if eof {
				d.request(phaseResponse, t.response)
			} else {
				d.request(phaseSend, t.stall)
			}
		}}
	} else {
		d.request(phaseResponse, t.response)
	}
	resp, err := t.next.RoundTrip(out)
	expired := d.answered()
	if err == nil && expired != nil { // the clock ran out as the headers came in
		resp.Body.Close()
	}
	if err != nil || expired != nil {
		cancel()
		if expired != nil {
			err = expired
		}
		tl.fail(err.Error())
		return nil, err
	}
	if retryableStatus(resp.StatusCode) {
		tl.fail(resp.Status)
	}
	resp.Body = &stallBody{body: resp.Body, d: d, cancel: cancel, stall: t.stall, tally: tl}
	return resp, nil
}

func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// deadline is an attempt's clock: request and start (re)arm it for a
// phase, answered and stop disarm it and say whether a phase expired;
// expiring cancels the attempt, once and for good.
type deadline struct {
	mu      sync.Mutex
	timer   *time.Timer
	phase   string
	after   time.Duration
	expired *TimeoutError
	answer  bool // the headers are in: request phases are over
	cancel  context.CancelFunc
}

func newDeadline(cancel context.CancelFunc) *deadline {
	d := &deadline{cancel: cancel}
	d.timer = time.AfterFunc(time.Hour, d.fire)
	d.timer.Stop()
	return d
}

// request arms a phase of sending the request, unless the answer is in (a
// transport may still read the body after a server answered early).
func (d *deadline) request(phase string, after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.answer {
		d.arm(phase, after)
	}
}

// answered ends the request phases.
func (d *deadline) answered() *TimeoutError {
	d.mu.Lock()
	d.answer = true
	d.mu.Unlock()
	return d.stop()
}

// start arms a phase of reading the response body.
func (d *deadline) start(phase string, after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.arm(phase, after)
}

func (d *deadline) arm(phase string, after time.Duration) {
	if d.expired == nil {
		d.phase, d.after = phase, after
		d.timer.Reset(after)
	}
}

func (d *deadline) fire() {
	d.mu.Lock()
	if d.expired == nil {
		d.expired = &TimeoutError{What: d.phase, After: d.after}
	}
	d.mu.Unlock()
	d.cancel()
}

func (d *deadline) stop() *TimeoutError {
	d.timer.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.expired
}

// sendBody reports each read the transport makes of a request body, and
// its end, to the attempt's clock.
type sendBody struct {
	io.ReadCloser
	read func(eof bool)
}

func (b *sendBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read(err == io.EOF)
	return n, err
}

// stallBody fails a Read of a response body that gets no byte within
// stall. The clock runs only inside Read: a caller that pauses between
// reads is not a stall.
type stallBody struct {
	body   io.ReadCloser
	d      *deadline
	cancel context.CancelFunc
	stall  time.Duration
	tally  *tally
}

func (b *stallBody) Read(p []byte) (int, error) {
	b.d.start(phaseBody, b.stall)
	n, err := b.body.Read(p)
	expired := b.d.stop()
	if err != nil && err != io.EOF {
		if expired != nil {
			err = expired
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

// TimeoutError is an attempt whose request body stalled, whose response
// headers did not come, or whose response body delivered nothing, within
// the configured time. The SDKs retry it like a network timeout.
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
