package objstore

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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
	// counting in tests, proxies). Authentication is layered on top of it.
	Transport http.RoundTripper
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

// scrubber removes a configuration's secrets from error text. SDK errors do
// not normally carry them, but a server echoing a request back could; this
// is defense in depth for everything that leaves the package.
type scrubber struct{ secrets []string }

func newScrubber(cfg Config) scrubber {
	var s scrubber
	if v := cfg.SecretKey.Reveal(); len(v) >= 4 {
		s.secrets = append(s.secrets, v)
	}
	return s
}

// wrap formats op and err as "op: err" with the secrets removed. The
// original error stays reachable through errors.Is/As unless its text had to
// be scrubbed, in which case only the sentinel classification survives.
func (s scrubber) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, v := range s.secrets {
		if strings.Contains(msg, v) {
			return &scrubbedError{op: fmt.Sprintf(format, args...), msg: strings.ReplaceAll(msg, v, "[redacted]"), kind: classify(err)}
		}
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

type scrubbedError struct {
	op, msg string
	kind    error
}

func (e *scrubbedError) Error() string { return e.op + ": " + e.msg }
func (e *scrubbedError) Unwrap() error { return e.kind }

func classify(err error) error {
	for _, k := range []error{ErrNotFound, ErrChanged, ErrPrecondition} {
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
