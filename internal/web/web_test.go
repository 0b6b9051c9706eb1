package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/web"
)

func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

// TestHandler checks what the page relies on: the shell for every view's
// path (so a URL can be reloaded), hashed assets cached for good, the
// security headers on everything, and no stray files.
func TestHandler(t *testing.T) {
	h := web.Handler()
	v := web.Version()
	for _, tc := range []struct {
		path, ctype, cache string
		status             int
		body               string
	}{
		{"/", "text/html; charset=utf-8", "no-cache", 200, `src="/assets/` + v + `/js/main.js"`},
		{"/storyline?file=a&session_id=b", "text/html; charset=utf-8", "no-cache", 200, `<main id="view"`},
		{"/runs", "text/html; charset=utf-8", "no-cache", 200, `href="/assets/` + v + `/app.css"`},
		{"/sql", "text/html; charset=utf-8", "no-cache", 200, `<link rel="modulepreload" href="/assets/` + v + `/js/vlist.js">`},
		{"/assets/" + v + "/js/main.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", 200, "import"},
		{"/assets/" + v + "/app.css", "text/css; charset=utf-8", "public, max-age=31536000, immutable", 200, ":root"},
		{"/assets/0000000000000000/app.css", "text/css; charset=utf-8", "no-cache", 200, ":root"},
		{"/assets/" + v + "/index.html", "", "", 404, ""},
		{"/assets/" + v + "/js/nope.js", "", "", 404, ""},
		{"/assets/" + v + "/../web.go", "", "", 404, ""},
		{"/favicon.ico", "", "", 404, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res := get(t, h, "GET", tc.path)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if got := res.Header.Get("Content-Security-Policy"); got != web.ContentSecurityPolicy {
				t.Errorf("CSP %q", got)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v", res.Header)
			}
			if tc.status != 200 {
				return
			}
			if got := res.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := res.Header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("Cache-Control %q, want %q", got, tc.cache)
			}
			if !strings.Contains(string(b), tc.body) {
				t.Errorf("body lacks %q", tc.body)
			}
		})
	}
	if res := get(t, h, "POST", "/"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d", res.StatusCode)
	}
}

// TestPolicyIsStrict pins the policy's walls: scripts and styles from this
// origin only, no inline code, no framing, requests to this origin only.
func TestPolicyIsStrict(t *testing.T) {
	p := web.ContentSecurityPolicy
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
		"frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"} {
		if !strings.Contains(p, want+";") && !strings.HasSuffix(p, want) {
			t.Errorf("policy lacks %q: %s", want, p)
		}
	}
	if strings.Contains(p, "unsafe") || strings.Contains(p, "*") {
		t.Errorf("policy allows too much: %s", p)
	}
}

func readBody(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	res := get(t, h, "GET", path)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	return string(b)
}

// TestShellNamesTheServerMode: the page learns from its shell whether it
// talks to a Directory (keys, no pinned Snapshot) or to plain serve.
func TestShellNamesTheServerMode(t *testing.T) {
	for _, tc := range []struct {
		h    http.Handler
		mode string
	}{{web.Handler(), "datasets"}, {web.DirectoryHandler(), "directory"}} {
		if b := readBody(t, tc.h, "/runs"); !strings.Contains(b, `<meta name="pchronicle-mode" content="`+tc.mode+`">`) {
			t.Errorf("the shell does not say %s mode", tc.mode)
		}
	}
}
