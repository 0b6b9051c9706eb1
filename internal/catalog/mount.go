// Package catalog builds Snapshots (the spec's Dataset Catalog): it
// validates mounts, discovers every trajectory source under each mount's
// root, pins their members and versions, and hands out readers fixed to those
// pins. Nothing below a Snapshot ever looks up "the latest" anything.
package catalog

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/objstore"
)

// DefaultAlias is the schema of a positional Dataset.
const DefaultAlias = "dataset"

var (
	aliasRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	componentRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+$`) })
	// reserved are the schema and catalog names DuckDB gives a meaning of
	// its own: a Dataset mounted under one would clash with them.
	reserved = map[string]bool{"public": true, "information_schema": true, "main": true, "pg_catalog": true,
		"system": true, "temp": true, "memory": true}
)

// DatasetMount names one Dataset: a hierarchical namespace (its identity), a
// SQL alias (its schema name in queries), a root URI and an optional format
// hint. The namespace and the alias are deliberately separate fields.
type DatasetMount struct {
	Namespace  []string
	Alias      string
	URI        string
	FormatHint string
	// Config holds the object-store settings of an s3://, az:// or gs://
	// Dataset (remote.go); it is applied to that Dataset's client only.
	Config objstore.Config
	// Filter keeps only the sources its --include/--exclude globs select.
	Filter PathFilter
	// Unrecognized, when set, is this Dataset's policy for files no adapter
	// recognizes (Options.Unrecognized otherwise): a pin can ask for it.
	Unrecognized string
}

// NamespacePath is the namespace joined with '/'.
func (m DatasetMount) NamespacePath() string { return strings.Join(m.Namespace, "/") }

// NormalizeAlias trims and lowercases an alias and checks it.
func NormalizeAlias(a string) (string, error) {
	a = strings.ToLower(strings.TrimSpace(a))
	if !aliasRe().MatchString(a) {
		return "", fmt.Errorf("invalid Dataset alias %q: must match [A-Za-z_][A-Za-z0-9_]*", a)
	}
	if reserved[a] {
		return "", fmt.Errorf("Dataset alias %q is reserved (DuckDB has a schema or catalog of that name); mount the Dataset under another name", a)
	}
	return a, nil
}

// ReservedAlias reports whether a is a name DuckDB gives a meaning of its
// own (NormalizeAlias refuses it as a Dataset alias).
func ReservedAlias(a string) bool { return reserved[strings.ToLower(strings.TrimSpace(a))] }

// ParseNamespace splits "a/b.c" into components and checks each.
func ParseNamespace(s string) ([]string, error) {
	parts := strings.Split(strings.Trim(strings.TrimSpace(s), "/"), "/")
	for _, p := range parts {
		if !componentRe().MatchString(p) || p == "." || p == ".." {
			return nil, fmt.Errorf("invalid namespace component %q in %q: use letters, digits, _, - and .", p, s)
		}
	}
	return parts, nil
}

// ParseMount parses the CLI form NAME=URI. NAME is a namespace path whose
// last component, normalized, is the SQL alias.
func ParseMount(s string) (DatasetMount, error) {
	name, uri, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(uri) == "" {
		return DatasetMount{}, fmt.Errorf("invalid --mount %q: want NAME=URI", s)
	}
	ns, err := ParseNamespace(name)
	if err != nil {
		return DatasetMount{}, err
	}
	alias, err := NormalizeAlias(strings.ReplaceAll(strings.ReplaceAll(ns[len(ns)-1], "-", "_"), ".", "_"))
	if err != nil {
		return DatasetMount{}, err
	}
	return DatasetMount{Namespace: ns, Alias: alias, URI: strings.TrimSpace(uri)}, nil
}

// ValidateMounts checks every mount and rejects duplicate namespaces or
// aliases, before any discovery starts.
func ValidateMounts(mounts []DatasetMount) error {
	if len(mounts) == 0 {
		return fmt.Errorf("no Dataset to open")
	}
	byNS, byAlias := map[string]bool{}, map[string]bool{}
	for i := range mounts {
		m := &mounts[i]
		alias, err := NormalizeAlias(m.Alias)
		if err != nil {
			return err
		}
		m.Alias = alias
		if len(m.Namespace) == 0 {
			m.Namespace = []string{alias}
		}
		if _, err := ParseNamespace(m.NamespacePath()); err != nil {
			return err
		}
		if byNS[m.NamespacePath()] {
			return fmt.Errorf("duplicate Dataset namespace %q", m.NamespacePath())
		}
		if byAlias[alias] {
			return fmt.Errorf("duplicate Dataset alias %q", alias)
		}
		byNS[m.NamespacePath()], byAlias[alias] = true, true
		if err := checkMountURI(m.URI); err != nil { // remote.go: local or object-store URI
			return err
		}
		if err := m.Filter.Validate(); err != nil {
			return fmt.Errorf("Dataset %s: %w", m.NamespacePath(), err)
		}
		if u := m.Unrecognized; u != "" && u != UnrecognizedWarn && u != UnrecognizedFail {
			return fmt.Errorf("Dataset %s: unrecognized = %q is not warn or error", m.NamespacePath(), u)
		}
	}
	return nil
}

// LocalPath turns a local root URI (/path, relative path, local://,
// file://; the scheme is case-insensitive) into an absolute filesystem
// path. A URI's query string, fragment or user info is rejected rather than
// dropped: a path that silently lost part of what the user wrote could name
// another Dataset (docs/object-stores.md, URI forms).
func LocalPath(uri string) (string, error) {
	p := uri
	if scheme, rest, ok := strings.Cut(uri, "://"); ok {
		switch strings.ToLower(scheme) {
		case "local":
			if strings.ContainsAny(rest, "?#") {
				return "", fmt.Errorf("invalid URI %q: query strings and fragments are not supported", RedactURI(uri))
			}
			p = rest
		case "file":
			u, err := url.Parse(uri)
			switch {
			case err != nil:
				return "", fmt.Errorf("invalid URI %q: %w", RedactURI(uri), err)
			case u.RawQuery != "" || u.ForceQuery || strings.Contains(uri, "#"):
				return "", fmt.Errorf("invalid URI %q: query strings and fragments are not supported", RedactURI(uri))
			case u.User != nil:
				return "", fmt.Errorf("invalid URI %q: file URIs must not carry user info", RedactURI(uri))
			case u.Host != "" && u.Host != "localhost":
				return "", fmt.Errorf("invalid URI %q: file URIs must not name a host", RedactURI(uri))
			}
			p = u.Path
		default:
			return "", fmt.Errorf("unsupported Dataset URI scheme %q in %q (local paths, local:// and file:// are supported)", scheme, RedactURI(uri))
		}
	}
	if p == "" {
		return "", fmt.Errorf("empty Dataset path in %q", RedactURI(uri))
	}
	return filepath.Abs(p)
}

// RedactURI strips a query string and user info, which may carry signatures
// or credentials, from a URI before it is shown anywhere.
func RedactURI(s string) string {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if at := strings.IndexByte(rest, '@'); at >= 0 && at < strings.IndexByte(rest+"/", '/') {
			rest = rest[at+1:]
		}
		s = scheme + "://" + rest
	}
	return s
}
