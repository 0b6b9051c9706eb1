package directory

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/pchronicle/pchronicle/internal/objstore"
)

// The request headers that carry a user's keys.
const (
	HeaderAccessKey = "X-Catalog-Access-Key"
	HeaderSecretKey = "X-Catalog-Secret-Key"
)

// Errors callers branch on (HTTP status in docs/directory.md).
var (
	// ErrUnauthorized: keys were sent but are partial, blank or do not
	// match. It never says which.
	ErrUnauthorized = errors.New("invalid or incomplete catalog keys")
	// ErrNotFound: no such Dataset, or not one the caller may see; the two
	// are never told apart.
	ErrNotFound = errors.New("dataset not found")
	// ErrKeysRequired: an anonymous caller asked for more than the public
	// Datasets, or for the ticket of a public s3:// Dataset (it carries
	// backend keys). Unknown and private names get the same answer.
	ErrKeysRequired = errors.New("send user keys: without them only the public datasets are open, and the tickets of public s3:// datasets need them too")
)

// Principal is an authenticated caller: a user, or anonymous (User == "")
// when no catalog headers were sent.
type Principal struct{ User string }

// Anonymous reports whether no keys were sent.
func (p Principal) Anonymous() bool { return p.User == "" }

// Ticket is what the ticket exchange hands out for one Dataset: its name,
// path and, for an s3:// Dataset, the backend settings and keys to open it.
// It is also what a data-plane worker gets per mount.
type Ticket struct {
	Name string `json:"name"`
	Dataset
}

// PathStyle reports whether S3 requests use path-style addressing: with a
// custom endpoint they do, since S3-compatible servers (and IP endpoints)
// rarely resolve bucket subdomains; against AWS itself they do not.
func (t Ticket) PathStyle() bool { return t.Endpoint != "" }

// Store returns the object-store settings that open the ticket's URI.
func (t Ticket) Store() objstore.Config {
	return objstore.Config{Endpoint: t.Endpoint, Region: t.Region, PathStyle: t.PathStyle(), AccessKey: t.AccessKey, SecretKey: t.SecretKey}
}

// Listing is one entry of the Dataset list: no keys, ever.
type Listing struct {
	Name   string `json:"name"`
	URI    string `json:"uri"`
	Public bool   `json:"public"`
}

// ACL is an immutable view of one valid config: users by access key and the
// Datasets each may see. Hot reload swaps whole ACLs.
type ACL struct {
	revision int64
	byKey    map[string]keyEntry // access key → user
	visible  map[string][]string // user → Dataset names (sorted), including public ones
	public   []string            // Datasets granted to user = "*" (sorted)
	isPublic map[string]bool
	datasets map[string]Dataset
	dummy    [sha256.Size]byte // compared against for unknown access keys
}

type keyEntry struct {
	user   string
	secret [sha256.Size]byte // SHA-256 of the secret: equal-length inputs for the constant-time compare
}

// NewACL builds the ACL of a validated config.
func NewACL(c *Config) *ACL {
	a := &ACL{
		revision: c.Meta.Revision,
		byKey:    make(map[string]keyEntry, len(c.Users)),
		visible:  make(map[string][]string, len(c.Users)),
		isPublic: map[string]bool{},
		datasets: c.Datasets,
	}
	var dummy [32]byte
	rand.Read(dummy[:])
	a.dummy = sha256.Sum256(dummy[:])
	for name, u := range c.Users {
		a.byKey[u.AccessKey] = keyEntry{user: name, secret: sha256.Sum256([]byte(u.SecretKey.Reveal()))}
	}
	for _, g := range c.Grants {
		if g.User == Public {
			a.isPublic[g.Dataset] = true
			a.public = append(a.public, g.Dataset)
			for name := range c.Users {
				a.visible[name] = append(a.visible[name], g.Dataset)
			}
			continue
		}
		a.visible[g.User] = append(a.visible[g.User], g.Dataset)
	}
	sort.Strings(a.public)
	for _, names := range a.visible {
		sort.Strings(names)
	}
	return a
}

// ACL returns a: a fixed ACL is its own source (no reload).
func (a *ACL) ACL() *ACL { return a }

// Revision is the meta.revision of the config the ACL was built from.
func (a *ACL) Revision() int64 { return a.revision }

// Authenticate maps the catalog headers to a principal. No headers at all is
// anonymous; anything else must be one non-blank access key and one
// non-blank secret that match a user, or it is ErrUnauthorized. An unknown
// access key costs the same hash and compare as a wrong secret, so neither
// the answer nor its timing tells them apart.
func (a *ACL) Authenticate(h http.Header) (Principal, error) {
	aks, sks := h.Values(HeaderAccessKey), h.Values(HeaderSecretKey)
	if len(aks) == 0 && len(sks) == 0 {
		return Principal{}, nil
	}
	if len(aks) != 1 || len(sks) != 1 {
		return Principal{}, ErrUnauthorized
	}
	ak, sk := strings.TrimSpace(aks[0]), strings.TrimSpace(sks[0])
	entry, known := a.byKey[ak]
	want := a.dummy
	if known {
		want = entry.secret
	}
	got := sha256.Sum256([]byte(sk))
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	if !known || !match || ak == "" || sk == "" {
		return Principal{}, ErrUnauthorized
	}
	return Principal{User: entry.user}, nil
}

// Visible returns the names of the Datasets p may see, sorted: an anonymous
// caller sees the public ones.
func (a *ACL) Visible(p Principal) []string {
	if p.Anonymous() {
		return a.public
	}
	return a.visible[p.User]
}

// Listings returns the Dataset list p may see.
func (a *ACL) Listings(p Principal) []Listing {
	names := a.Visible(p)
	out := make([]Listing, len(names))
	for i, n := range names {
		out[i] = Listing{Name: n, URI: a.datasets[n].URI, Public: a.isPublic[n]}
	}
	return out
}

// Ticket returns the ticket of the Dataset name for p: ErrNotFound when it
// does not exist or p may not see it; for an anonymous caller,
// ErrKeysRequired unless it is a public local Dataset.
func (a *ACL) Ticket(p Principal, name string) (Ticket, error) {
	if !a.may(p, name) {
		if p.Anonymous() {
			return Ticket{}, ErrKeysRequired
		}
		return Ticket{}, ErrNotFound
	}
	d := a.datasets[name]
	if p.Anonymous() && d.IsS3() {
		return Ticket{}, ErrKeysRequired
	}
	return Ticket{Name: name, Dataset: d}, nil
}

// Tickets returns the tickets of every Dataset p may see, in name order,
// backend keys included: this is what a data-plane worker is given, so it
// is only ever computed in the parent and written to that worker's stdin.
func (a *ACL) Tickets(p Principal) []Ticket {
	names := a.Visible(p)
	out := make([]Ticket, len(names))
	for i, n := range names {
		out[i] = Ticket{Name: n, Dataset: a.datasets[n]}
	}
	return out
}

func (a *ACL) may(p Principal, name string) bool {
	_, ok := slices.BinarySearch(a.Visible(p), name)
	return ok
}
