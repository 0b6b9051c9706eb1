// Package directory is the Directory of a shared pchronicle deployment: a
// TOML config of users, Datasets and grants, the ACL built from it (who may
// see which Datasets), the authentication of user keys, hot reload of users
// and grants, the HTTP routes that list Datasets and exchange tickets, and
// the client side of that exchange. See docs/directory.md.
//
// The package never opens a Dataset: it only decides which paths a caller
// may resolve. It must not import the engine, the catalog or the stores.
package directory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/objstore"
)

// Version is the only config version this build reads and writes.
const Version = 1

// MaxConfigBytes bounds the config file: it is read on every hot-reload poll
// and held in memory, and a runaway file must not take the server down.
const MaxConfigBytes = 1 << 20

// Public is the grants.user value that makes a Dataset visible to every user
// and to anonymous callers.
const Public = "*"

// Config is the content of a Directory config file.
type Config struct {
	Meta     Meta               `toml:"meta"`
	Users    map[string]User    `toml:"users,omitempty"`
	Datasets map[string]Dataset `toml:"datasets,omitempty"`
	Grants   []Grant            `toml:"grants,omitempty"`
}

// Meta identifies the config and its version.
type Meta struct {
	Version  int64  `toml:"version"`
	Revision int64  `toml:"revision"`
	Name     string `toml:"name,omitempty"`
}

// User holds one user's keys. They authenticate to the Directory only; they
// never open storage.
type User struct {
	AccessKey string          `toml:"access_key"`
	SecretKey objstore.Secret `toml:"secret_key"`
}

// Dataset is one registered path. An s3:// Dataset carries the backend
// settings and keys a ticket hands to its authorized callers.
// The JSON names are those of a ticket, which carries a Dataset.
type Dataset struct {
	URI       string          `toml:"uri" json:"uri"`
	Endpoint  string          `toml:"endpoint,omitempty" json:"endpoint,omitempty"`
	Region    string          `toml:"region,omitempty" json:"region,omitempty"`
	AccessKey string          `toml:"access_key,omitempty" json:"access_key,omitempty"`
	SecretKey objstore.Secret `toml:"secret_key,omitempty" json:"secret_key,omitempty"`
}

// IsS3 reports whether the Dataset is an s3:// URI (otherwise it is a local
// path).
func (d Dataset) IsS3() bool { return isS3(d.URI) }

func isS3(uri string) bool { return strings.HasPrefix(strings.ToLower(uri), "s3://") }

// Backend is the identity of an s3:// Dataset's object store: two Datasets
// with equal backends can be opened by one worker with one set of keys.
type Backend struct {
	Endpoint, Region, AccessKey string
	SecretKey                   objstore.Secret
}

// Backend returns the Dataset's backend identity (zero for a local path).
func (d Dataset) Backend() Backend {
	return Backend{Endpoint: d.Endpoint, Region: d.Region, AccessKey: d.AccessKey, SecretKey: d.SecretKey}
}

// Grant lets a user (or everyone, with user = "*") see a Dataset.
// Permissions are recorded but not enforced: in this version a grant is
// plain membership.
type Grant struct {
	User        string   `toml:"user"`
	Dataset     string   `toml:"dataset"`
	Permissions []string `toml:"permissions,omitempty"`
}

// Empty returns a config with only [meta], which management commands start
// from when the file does not exist yet.
func Empty() *Config {
	return &Config{Meta: Meta{Version: Version, Name: "default"}}
}

// ValidationError is a config that parsed but breaks a rule. Where names the
// offending table or key ("users.alice.access_key", "grants[2]").
type ValidationError struct {
	File  string
	Where string
	Msg   string
}

func (e *ValidationError) Error() string {
	if e.File == "" {
		return e.Where + ": " + e.Msg
	}
	return e.File + ": " + e.Where + ": " + e.Msg
}

func invalid(where, format string, args ...any) *ValidationError {
	return &ValidationError{Where: where, Msg: fmt.Sprintf(format, args...)}
}

// Parse decodes and validates a config. name labels errors (usually the
// file path). Decoding is strict: an unknown key is an error naming it.
// Error messages never repeat a value from the file, since the file holds
// secrets.
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%s: config is %d bytes; the limit is %d", name, len(data), MaxConfigBytes)
	}
	var c Config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, safeTOMLError(err))
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return nil, fmt.Errorf("%s: unknown key %q", name, undecoded[0].String())
	}
	if err := c.Validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.File = name
		}
		return nil, err
	}
	return &c, nil
}

// quoted matches a quoted fragment of a TOML syntax error message.
var quoted = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'`) })

// safeTOMLError keeps a TOML error's position and key path but drops any
// fragment of the input its message quotes, which may be part of a secret.
// The parser's messages quote keys (they start with the key); the lexer's
// quote the input it stumbled over. Decoding errors (wrong types) name keys
// and types only.
func safeTOMLError(err error) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return errors.New(strings.TrimPrefix(err.Error(), "toml: "))
	}
	msg := pe.Message
	if !strings.HasPrefix(msg, "Key '") && !strings.HasPrefix(msg, `"`) {
		msg = quoted().ReplaceAllStringFunc(msg, func(q string) string {
			if len([]rune(q)) <= 4 { // one quoted character, such as '=' or '\n'
				return q
			}
			return "…"
		})
	}
	where := "line " + strconv.Itoa(pe.Position.Line)
	if pe.LastKey != "" {
		where += " (after key " + pe.LastKey + ")"
	}
	return fmt.Errorf("%s: invalid TOML: %s", where, msg)
}

// nameRE is the form of user and Dataset names: they appear in grants, logs
// and @pin/NAME references.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]*$`) })

// ValidName checks a user or Dataset name.
func ValidName(kind, name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("invalid %s name %q: use lowercase letters, digits and _, not starting with a digit", kind, name)
	}
	return nil
}

// Validate checks every rule of the config (see docs/directory.md). The
// first broken rule is returned, naming its table or key.
func (c *Config) Validate() error {
	if c.Meta.Version != Version {
		if c.Meta.Version == 0 {
			return invalid("meta.version", "is required (supported: %d)", Version)
		}
		return invalid("meta.version", "version %d is not supported (supported: %d)", c.Meta.Version, Version)
	}
	if c.Meta.Revision < 0 {
		return invalid("meta.revision", "must not be negative")
	}
	owner := map[string]string{} // access key → user
	for _, name := range sortedKeys(c.Users) {
		u := c.Users[name]
		where := "users." + name
		if err := ValidName("user", name); err != nil {
			return invalid(where, "%v", err)
		}
		if strings.TrimSpace(u.AccessKey) == "" {
			return invalid(where+".access_key", "is required")
		}
		if strings.TrimSpace(u.SecretKey.Reveal()) == "" {
			return invalid(where+".secret_key", "is required")
		}
		if other, dup := owner[u.AccessKey]; dup {
			return invalid(where+".access_key", "is the same as users.%s.access_key; access keys must be unique", other)
		}
		owner[u.AccessKey] = name
	}
	for _, name := range sortedKeys(c.Datasets) {
		if err := ValidName("dataset", name); err != nil {
			return invalid("datasets."+name, "%v", err)
		}
		if err := c.Datasets[name].Validate("datasets." + name); err != nil {
			return err
		}
	}
	seen := map[[2]string]int{} // (user, dataset) after * expansion → grant index
	for i, g := range c.Grants {
		where := fmt.Sprintf("grants[%d]", i)
		switch {
		case g.User == "":
			return invalid(where+".user", "is required")
		case g.Dataset == "":
			return invalid(where+".dataset", "is required")
		}
		if _, ok := c.Datasets[g.Dataset]; !ok {
			return invalid(where+".dataset", "no dataset %q in [datasets]", g.Dataset)
		}
		users := []string{g.User}
		if g.User == Public {
			users = append(sortedKeys(c.Users), Public)
		} else if _, ok := c.Users[g.User]; !ok {
			return invalid(where+".user", "no user %q in [users]", g.User)
		}
		for _, u := range users {
			key := [2]string{u, g.Dataset}
			if j, dup := seen[key]; dup {
				return invalid(where, "grants dataset %q to user %q again (grants[%d] already does, counting user = \"*\" as every user)", g.Dataset, u, j)
			}
			seen[key] = i
		}
	}
	return nil
}

// Validate checks one Dataset's rules; where names its table in errors.
func (d Dataset) Validate(where string) error {
	uri := d.URI
	if strings.TrimSpace(uri) == "" {
		return invalid(where+".uri", "is required")
	}
	hasKeys := d.AccessKey != "" || d.SecretKey != ""
	if !d.IsS3() {
		if strings.Contains(uri, "://") {
			scheme, _, _ := strings.Cut(uri, "://")
			return invalid(where+".uri", "scheme %q is not supported: use an absolute local path or s3://bucket/prefix", scheme)
		}
		if !filepath.IsAbs(uri) {
			return invalid(where+".uri", "a local path must be absolute")
		}
		if hasKeys || d.Endpoint != "" || d.Region != "" {
			return invalid(where, "a local path must not set endpoint, region, access_key or secret_key")
		}
		return nil
	}
	loc, err := objstore.ParseURI(uri)
	if err != nil {
		return invalid(where+".uri", "%v", err)
	}
	if loc.Scheme != "s3" {
		return invalid(where+".uri", "not an s3:// URI")
	}
	if d.AccessKey == "" || d.SecretKey == "" {
		return invalid(where, "an s3:// dataset must set both access_key and secret_key")
	}
	if d.Endpoint != "" {
		if err := checkEndpoint(d.Endpoint); err != nil {
			return invalid(where+".endpoint", "%v", err)
		}
	}
	return nil
}

// checkEndpoint accepts an http(s) URL with a host and nothing that could
// hide credentials.
func checkEndpoint(raw string) error {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return errors.New("must be an http:// or https:// URL")
	}
	host, _, _ := strings.Cut(rest, "/")
	switch {
	case host == "":
		return errors.New("has no host")
	case strings.Contains(host, "@"), strings.ContainsAny(rest, "?#"):
		return errors.New("must not contain user info, a query or a fragment")
	}
	return nil
}

// Load reads and validates the config at path. A missing file is an error
// wrapping os.ErrNotExist (serve refuses to start without its config).
func Load(path string) (*Config, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// LoadOrEmpty is Load, except that a missing file is an empty config, as the
// management commands create it on their first write.
func LoadOrEmpty(path string) (*Config, error) {
	c, err := Load(path)
	if errors.Is(err, os.ErrNotExist) {
		return Empty(), nil
	}
	return c, err
}

// readBounded reads at most MaxConfigBytes+1 bytes, so an oversized file is
// refused without reading it all.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%s: config is larger than the limit of %d bytes", path, MaxConfigBytes)
	}
	return data, nil
}

// Save validates the config, advances meta.revision and atomically replaces
// path with it (0600: it holds secrets), creating the directory. On any
// failure the previous file is left as it was.
func (c *Config) Save(path string) error {
	next := *c
	next.Meta.Revision++
	if err := next.Validate(); err != nil {
		return fmt.Errorf("%s: not written: %w", path, err)
	}
	data, err := next.Encode()
	if err != nil {
		return err
	}
	if len(data) > MaxConfigBytes {
		return fmt.Errorf("%s: not written: the config would be %d bytes; the limit is %d", path, len(data), MaxConfigBytes)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := fsx.WriteFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("%s: not written: %w", path, err)
	}
	c.Meta.Revision = next.Meta.Revision
	return nil
}

// Encode renders the config as TOML: [meta], then users, datasets and grants
// in name order.
func (c *Config) Encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// LockFile is the lock a management command holds while it reads, edits and
// writes path, so that two concurrent edits cannot lose one another.
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return fsx.Lock(ctx, path+".lock")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
