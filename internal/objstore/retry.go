package objstore

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Retry bounds how hard a Bucket tries before it reports a failure. The S3
// and Azure SDK retryers and the GCS backend's own are configured from it,
// and the transport under them enforces the timeouts and the read budget. Zero fields take the defaults; docs/object-stores.md ("Retries
// and timeouts") says what a user sees.
type Retry struct {
	// Attempts is the most requests one call makes, the first included,
	// when the answers are retryable (timeouts, resets, 408, 429, 5xx).
	Attempts int
	// BaseDelay is the backoff before the first retry; each later retry
	// doubles it, with jitter, up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps one backoff. A server asking (Retry-After) to wait
	// longer ends the retries at once rather than stalling the caller.
	MaxDelay time.Duration
	// ResponseTimeout bounds the wait for the response headers of one
	// request once its body is sent; it expires as a retryable timeout.
	ResponseTimeout time.Duration
	// StallTimeout fails an attempt whose request body the server takes
	// nothing of, or whose response body delivers nothing, for this long
	// (a hung connection): uploads are timed by progress, never as a
	// whole, and a pinned read resumes where its body stalled.
	StallTimeout time.Duration
	// ReadRequests is the most HTTP requests one pinned read makes in all:
	// its opens, their retries, and the resumptions of a body that failed
	// mid-way.
	ReadRequests int
}

// DefaultRetry is what a zero Retry means.
var DefaultRetry = Retry{
	Attempts:        4,
	BaseDelay:       200 * time.Millisecond,
	MaxDelay:        5 * time.Second,
	ResponseTimeout: 30 * time.Second,
	StallTimeout:    30 * time.Second,
	ReadRequests:    16,
}

// withDefaults fills the zero fields from DefaultRetry.
func (r Retry) withDefaults() Retry {
	d := DefaultRetry
	if r.Attempts > 0 {
		d.Attempts = r.Attempts
	}
	if r.BaseDelay > 0 {
		d.BaseDelay = r.BaseDelay
	}
	if r.MaxDelay > 0 {
		d.MaxDelay = r.MaxDelay
	}
	if d.MaxDelay < d.BaseDelay {
		d.MaxDelay = d.BaseDelay
	}
	if r.ResponseTimeout > 0 {
		d.ResponseTimeout = r.ResponseTimeout
	}
	if r.StallTimeout > 0 {
		d.StallTimeout = r.StallTimeout
	}
	if r.ReadRequests > 0 {
		d.ReadRequests = r.ReadRequests
	}
	return d
}

// backoff is the wait before retry n (1 for the first retry): half of
// BaseDelay·2^(n-1), capped at MaxDelay, plus a random part of the same
// size ("equal jitter"), so retries are both spread and never immediate.
func (r Retry) backoff(n int) time.Duration {
	d := r.BaseDelay
	for i := 1; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	half := d / 2
	return half + rand.N(half+1)
}

// wait is how long to wait before retrying attempt after err: the backoff,
// or what the server's Retry-After (whole seconds) asks for; one beyond
// MaxDelay ends the retries (as Azure's SDK does).
func (r Retry) wait(attempt int, retryAfter string, err error) (time.Duration, error) {
	secs, perr := strconv.Atoi(retryAfter)
	if perr != nil || secs < 0 {
		return r.backoff(attempt), nil
	}
	wait := time.Duration(secs) * time.Second
	if wait > r.MaxDelay {
		return 0, fmt.Errorf("the server asked to retry after %s, longer than the %s this client waits: %w", wait, r.MaxDelay, err)
	}
	return wait, nil
}
