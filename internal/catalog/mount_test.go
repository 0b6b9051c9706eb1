package catalog

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalPath(t *testing.T) {
	cwd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ uri, want, err string }{
		{"/data/evals", "/data/evals", ""},
		{"runs", filepath.Join(cwd, "runs"), ""},
		{"a?b#c", filepath.Join(cwd, "a?b#c"), ""}, // a plain path may hold any byte
		{"file:///data/evals", "/data/evals", ""},
		{"FILE:///data/evals", "/data/evals", ""},
		{"file://localhost/data", "/data", ""},
		{"file:///data/a%20b", "/data/a b", ""},
		{"local:///data", "/data", ""},
		{"Local://rel/dir", filepath.Join(cwd, "rel/dir"), ""},
		{"file:///data?x=1", "", "query strings and fragments are not supported"},
		{"file:///data?", "", "query strings and fragments are not supported"},
		{"file:///data#frag", "", "query strings and fragments are not supported"},
		{"file:///data#", "", "query strings and fragments are not supported"},
		{"local:///data?x", "", "query strings and fragments are not supported"},
		{"local:///data#x", "", "query strings and fragments are not supported"},
		{"file://user:pw@/data", "", "must not carry user info"},
		{"file://host/data", "", "must not name a host"},
		{"file://", "", "empty Dataset path"},
		{"http://example.com/x", "", `unsupported Dataset URI scheme "http"`},
	} {
		got, err := LocalPath(tt.uri)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("LocalPath(%q) = %q, %v; want error %q", tt.uri, got, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("LocalPath(%q): error %q shows the password", tt.uri, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("LocalPath(%q) = %q, %v; want %q", tt.uri, got, err, tt.want)
		}
	}
}
