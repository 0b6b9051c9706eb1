package directory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/objstore"
)

// LocatorScheme is the scheme of a Directory locator (catalog://HOST:PORT),
// which only the pin resolver understands: it is never a Dataset URI.
const LocatorScheme = "catalog"

// ParseLocator checks and normalizes a Directory locator: scheme catalog,
// a loopback IP address with a port, nothing else (no user info, path,
// query or fragment; a lone trailing "/" is dropped). The result is
// catalog://IP:PORT.
func ParseLocator(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil { // its text would repeat raw, user info included
		return "", errors.New("invalid catalog locator: not a URL (want catalog://127.0.0.1:PORT)")
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("invalid catalog locator %q: %s (want catalog://127.0.0.1:PORT)", redactLocator(u), why)
	}
	switch {
	case !strings.EqualFold(u.Scheme, LocatorScheme):
		return bad("the scheme must be catalog")
	case u.User != nil:
		return bad("it must not contain user info; give keys with --ak and --sk")
	case u.Opaque != "" || (u.Path != "" && u.Path != "/"):
		return bad("it must not contain a path; name a dataset as @PIN/NAME instead")
	case u.RawQuery != "" || u.ForceQuery:
		return bad("it must not contain a query")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("it must not contain a fragment")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return bad("the host needs a port")
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return bad("the host must be a loopback IP address")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return bad("the port must be a number from 1 to 65535")
	}
	return LocatorScheme + "://" + net.JoinHostPort(ip.String(), port), nil
}

func redactLocator(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.Fragment = ""
	return c.String()
}

// Client talks to a Directory's HTTP routes as one user (or anonymously,
// without keys).
type Client struct {
	Locator   string // catalog://IP:PORT, as ParseLocator returns it
	AccessKey string
	SecretKey objstore.Secret
	HTTP      *http.Client // nil: a client with a 30 s timeout
}

// maxAnswerBytes bounds a Directory answer the client reads.
const maxAnswerBytes = 4 << 20

// StatusError is a Directory answer other than 200. Unwrap gives
// ErrUnauthorized or ErrNotFound for 401 and 404.
type StatusError struct {
	Status  int
	Code    string
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("catalog answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("catalog answered %d: %s", e.Status, e.Message)
}

func (e *StatusError) Unwrap() error {
	switch e.Status {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusNotFound:
		return ErrNotFound
	}
	return nil
}

// Ticket exchanges the user's keys for the ticket of the Dataset name.
func (c *Client) Ticket(ctx context.Context, name string) (Ticket, error) {
	var t Ticket
	if err := c.get(ctx, DatasetsPath+"/"+url.PathEscape(name), &t); err != nil {
		return Ticket{}, fmt.Errorf("%s: %w", c.Locator, err)
	}
	if t.URI == "" {
		return Ticket{}, fmt.Errorf("%s: dataset %q: the ticket has no uri", c.Locator, name)
	}
	return t, nil
}

// List returns the Datasets the user may see.
func (c *Client) List(ctx context.Context) ([]Listing, error) {
	var body listBody
	if err := c.get(ctx, DatasetsPath, &body); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Locator, err)
	}
	return body.Datasets, nil
}

// ErrRedirect: the Directory answered with a redirect. A client never
// follows one: the request carries the user's keys, and a Directory is
// named by its address alone, so a redirect can only be a misconfiguration
// or someone collecting keys.
var ErrRedirect = errors.New("the catalog answered with a redirect, which is never followed: the request carries your keys")

func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("%w (to %s)", ErrRedirect, redactLocator(req.URL))
}

func (c *Client) get(ctx context.Context, path string, into any) error {
	base, err := ParseLocator(c.Locator)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+strings.TrimPrefix(base, LocatorScheme+"://")+path, nil)
	if err != nil {
		return err
	}
	if c.AccessKey != "" || c.SecretKey != "" {
		req.Header.Set(HeaderAccessKey, c.AccessKey)
		req.Header.Set(HeaderSecretKey, c.SecretKey.Reveal())
	}
	hc := http.Client{Timeout: 30 * time.Second}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = refuseRedirect
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL; the locator is already in the message
		}
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if len(data) > maxAnswerBytes {
		return fmt.Errorf("the answer is larger than %d bytes", maxAnswerBytes)
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Status: resp.StatusCode}
		var eb ErrorBody
		if jsonx.Unmarshal(data, &eb) == nil {
			se.Code, se.Message = eb.Code, eb.Message
		}
		return se
	}
	if err := jsonx.Unmarshal(data, into); err != nil {
		return fmt.Errorf("the answer is not the expected JSON: %w", err)
	}
	return nil
}
