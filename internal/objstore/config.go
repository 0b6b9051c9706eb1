package objstore

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/pchronicle/pchronicle/internal/redact"
)

// Config holds one Dataset's object-store settings. They are applied to the
// client built for that Dataset only; nothing is read from or written to the
// process-wide AWS_* settings when credentials are given here.
type Config struct {
	Endpoint  string // custom endpoint (S3-compatible server, Azurite, fake-gcs); empty for the cloud default
	Region    string // S3 region; empty lets the SDK chain decide (us-east-1 with a custom endpoint)
	PathStyle bool   // S3 path-style addressing (most S3-compatible servers need it)
	AccessKey string // S3 access key id; Azure account name when Account is empty
	SecretKey Secret // S3 secret key; Azure shared account key
	Account   string // Azure storage account

	// PageSize caps the items per listing request; 0 keeps the backend's
	// default (1,000 for S3, 5,000 for Azure, 1,000 for GCS).
	PageSize int
	// Transport, when set, carries every HTTP request of the client (request
	// counting in tests, proxies). Authentication, timeouts and retries are
	// layered on top of it.
	Transport http.RoundTripper
	// Retry bounds retries, backoff and timeouts; zero fields are defaults.
	Retry Retry
}

// Secret is a credential that never prints: fmt verbs, String and GoString
// all give "[redacted]", so a Config can be logged safely.
type Secret string

func (s Secret) String() string   { return redactedMark(s) }
func (s Secret) GoString() string { return redactedMark(s) }

// Format implements fmt.Formatter so that even %#v and %q stay redacted.
func (s Secret) Format(f fmt.State, _ rune) { fmt.Fprint(f, redactedMark(s)) }

// Reveal returns the secret for handing it to an SDK.
func (s Secret) Reveal() string { return string(s) }

func redactedMark(s Secret) string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// Error is a failed call on an object or a listing. URI names it as
// scheme://bucket/key, without credentials. Failures counts the requests
// (or response bodies) that failed before the call gave up, retries and
// resumptions included, and Last says what the last of them was. The cause
// stays reachable through errors.Is/As.
type Error struct {
	Op       string // list, stat, read, put, connect
	URI      string
	Failures int
	Last     string
	Err      error
}

func (e *Error) Error() string {
	cause := oneLine(e.Err.Error())
	msg := e.Op + " " + e.URI + ": " + cause
	switch {
	case e.Failures > 1:
		msg += fmt.Sprintf(" (%d failed attempts, the last: %s)", e.Failures, e.Last)
	case e.Failures == 1 && !strings.Contains(cause, e.Last):
		msg += fmt.Sprintf(" (after a failed attempt: %s)", e.Last)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// oneLine folds an SDK's multi-line error text (Azure prints the request,
// a ruler and the response body) into one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" && strings.Trim(l, "-=") != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// scrubber removes a configuration's secrets, and every credential form
// redact.Text knows (signed URLs, echoed Authorization headers), from error
// text. SDK errors do not normally carry
// them, but a server echoing a request back could; this is defense in depth
// for everything that leaves the package.
type scrubber struct{ secrets []string }

func newScrubber(cfg Config) scrubber {
	var s scrubber
	if v := cfg.SecretKey.Reveal(); len(v) >= 4 {
		s.secrets = append(s.secrets, v)
	}
	return s
}

// error is the *Error of op on uri, counting the failures t saw. The cause
// is kept unless its text had to be scrubbed, in which case only the
// sentinel classification survives.
func (s scrubber) error(op, uri string, t *tally, err error) error {
	e := &Error{Op: op, URI: uri, Err: s.clean(err)}
	e.Failures, e.Last = t.failed()
	if e.Last != "" {
		e.Last = oneLine(s.clean(errors.New(e.Last)).Error())
	}
	return e
}

func (s scrubber) clean(err error) error {
	msg := err.Error()
	scrubbed := redact.Text(msg)
	for _, v := range s.secrets {
		scrubbed = strings.ReplaceAll(scrubbed, v, "[redacted]")
	}
	if scrubbed == msg {
		return err
	}
	return &scrubbedError{msg: scrubbed, kind: classify(err)}
}

type scrubbedError struct {
	msg  string
	kind error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.kind }

func classify(err error) error {
	for _, k := range []error{ErrNotFound, ErrChanged, ErrPrecondition, ErrBudget} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// redactURL drops user info and query string (a presigned signature) from a
// URL-shaped string before it is shown anywhere.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
