// Package web is the Web Explorer that pchronicle serve shows at /: plain
// ES modules, a stylesheet and one HTML shell, embedded in the binary so
// that `go build` needs no other step and the page works offline
// (docs/web.md). The page is a client of the JSON API under /api/ only.
//
// Assets are served under /assets/<version>/, where the version is a hash
// of every embedded file: their URLs change whenever any file changes, so
// they can be cached for good, while the shell (every other path, so that
// each view's URL can be reloaded) is never cached.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every page and asset: scripts and
// styles only from this origin (no inline script, no eval), no plugins, no
// frames, requests to this origin only. Trajectory text is rendered as text
// by the page; this is the second wall.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// SecurityHeaders sets the headers every response of the Explorer carries.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// assets are the embedded files, by their path under static/.
type assets struct {
	version  string
	files    map[string][]byte
	shell    []byte // for serve over Datasets
	dirShell []byte // for serve with a Directory
}

// In index.html, versionPlaceholder is replaced by the asset version, the
// line preloadPlaceholder by a modulepreload link per module, and
// modePlaceholder by the server's mode ("datasets" or "directory").
const (
	versionPlaceholder = "__ASSET_VERSION__"
	preloadPlaceholder = "<!-- modules -->"
	modePlaceholder    = "__SERVER_MODE__"
)

func load() (*assets, error) {
	a := &assets{files: map[string][]byte{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		a.files[strings.TrimPrefix(p, "static/")] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(a.files))
	for n := range a.files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(a.files[n])
		h.Write([]byte{0})
	}
	a.version = hex.EncodeToString(h.Sum(nil))[:16]
	// Every module is announced up front, so the browser fetches the whole
	// graph at once instead of discovering it import by import.
	var preload bytes.Buffer
	for _, n := range names {
		if strings.HasSuffix(n, ".js") {
			preload.WriteString(`<link rel="modulepreload" href="/assets/` + versionPlaceholder + "/" + n + "\">\n")
		}
	}
	shell := bytes.Replace(a.files["index.html"], []byte(preloadPlaceholder+"\n"), preload.Bytes(), 1)
	shell = bytes.ReplaceAll(shell, []byte(versionPlaceholder), []byte(a.version))
	a.shell = bytes.Replace(shell, []byte(modePlaceholder), []byte("datasets"), 1)
	a.dirShell = bytes.Replace(shell, []byte(modePlaceholder), []byte("directory"), 1)
	return a, nil
}

// current returns the embedded assets, read and hashed on first use (not at
// initialization: every process of this binary, a query's worker too,
// would pay for it).
var current = sync.OnceValue(func() *assets {
	a, err := load()
	if err != nil {
		panic("web: embedded assets: " + err.Error()) // cannot happen: they are compiled in
	}
	return a
})

// Version is the hash that names the current assets (/assets/<version>/).
func Version() string { return current().version }

// Handler serves the Explorer: assets under /assets/<version>/ and the HTML
// shell for every other GET (the page routes on the path itself).
func Handler() http.Handler { return handler(current().shell) }

// DirectoryHandler serves the Explorer of a serve with a Directory: the
// page asks for keys on a 401 and does not pin a Snapshot, since each of
// its requests is answered by a worker over the caller's Datasets of the
// moment (docs/web.md, "Directory mode").
func DirectoryHandler() http.Handler { return handler(current().dirShell) }

func handler(shell []byte) http.Handler {
	a := current()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SecurityHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok {
			a.serveAsset(w, r, rest)
			return
		}
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(shell)
	})
}

func (a *assets) serveAsset(w http.ResponseWriter, r *http.Request, rest string) {
	version, name, ok := strings.Cut(rest, "/")
	b, found := a.files[path.Clean("/" + name)[1:]]
	if !ok || !found || name == "index.html" {
		http.NotFound(w, r)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if path.Ext(name) == ".js" { // some systems map .js to text/plain; modules need a JS type
		ctype = "text/javascript; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	if version == a.version {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// An older page asking for its assets after an upgrade gets today's,
		// uncached, rather than a broken page.
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Write(b)
}
