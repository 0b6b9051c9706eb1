package objstore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Location is a parsed Dataset URI.
type Location struct {
	Scheme string // "s3", "az", "gs" or "file"
	Bucket string // bucket or container; for "file", the root directory
	Prefix string // key prefix inside the bucket, no leading '/'
}

// ParseURI splits a Dataset URI: s3://bucket/prefix, az://container/prefix,
// gs://bucket/prefix, file:///path, local:///path (or local://relative), or
// a plain path. A query string is rejected rather than kept: credentials and
// signatures belong in the Config, never in a URI.
func ParseURI(uri string) (Location, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || strings.ContainsAny(scheme, `/\`) || len(scheme) < 2 { // "C:\x" is a path
		return localLocation(uri)
	}
	switch strings.ToLower(scheme) {
	case "file", "local":
		u, err := url.Parse(uri)
		if err != nil {
			return Location{}, fmt.Errorf("bad URI %q: %w", redactURL(uri), err)
		}
		if u.RawQuery != "" {
			return Location{}, fmt.Errorf("URI %s: query strings are not supported", redactURL(uri))
		}
		host := u.Host
		if host == "localhost" && scheme == "file" {
			host = ""
		}
		if scheme == "file" && host != "" {
			return Location{}, fmt.Errorf("URI %s: file URIs must not name a host", redactURL(uri))
		}
		return localLocation(host + u.Path)
	case "s3", "az", "gs":
		if strings.ContainsAny(rest, "?#") {
			return Location{}, fmt.Errorf("URI %s: query strings and fragments are not supported; put credentials in the Dataset settings", redactURL(uri))
		}
		if i := strings.IndexByte(rest, '@'); i >= 0 && i < strings.IndexByte(rest+"/", '/') {
			return Location{}, fmt.Errorf("URI %s://...: credentials in the URI are not supported; use the Dataset settings", scheme)
		}
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return Location{}, fmt.Errorf("URI %s: missing bucket", uri)
		}
		return Location{Scheme: strings.ToLower(scheme), Bucket: bucket, Prefix: strings.TrimLeft(prefix, "/")}, nil
	default:
		return Location{}, fmt.Errorf("URI %s: unsupported scheme %q (want s3, az, gs, file or a path)", redactURL(uri), scheme)
	}
}

// localLocation roots a local Bucket at the directory and lists all of it,
// or, for a file, at its parent with the file name as the prefix.
func localLocation(path string) (Location, error) {
	if path == "" {
		return Location{}, fmt.Errorf("empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Location{}, err
	}
	if fi, err := os.Lstat(abs); err == nil && !fi.IsDir() {
		return Location{Scheme: "file", Bucket: filepath.Dir(abs), Prefix: filepath.Base(abs)}, nil
	}
	return Location{Scheme: "file", Bucket: abs}, nil
}

// Open parses uri and connects the Bucket it names with cfg. The returned
// prefix is the key prefix the URI selects inside that Bucket.
func Open(ctx context.Context, uri string, cfg Config) (Bucket, string, error) {
	loc, err := ParseURI(uri)
	if err != nil {
		return nil, "", err
	}
	b, err := OpenLocation(ctx, loc, cfg)
	if err != nil {
		return nil, "", err
	}
	return b, loc.Prefix, nil
}

// OpenLocation connects the Bucket of a parsed location.
func OpenLocation(ctx context.Context, loc Location, cfg Config) (Bucket, error) {
	switch loc.Scheme {
	case "file":
		return NewLocal(loc.Bucket)
	case "s3":
		return NewS3(ctx, loc.Bucket, cfg)
	case "az":
		return NewAzure(ctx, loc.Bucket, cfg)
	case "gs":
		return NewGCS(ctx, loc.Bucket, cfg)
	}
	return nil, fmt.Errorf("unsupported scheme %q", loc.Scheme)
}

// IsRemote reports whether uri names an object-store location (s3://,
// az://, gs://) rather than a local path.
func IsRemote(uri string) bool {
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "s3", "az", "gs":
		return true
	}
	return false
}
