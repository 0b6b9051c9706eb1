package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

var uriSeeds = []string{
	"prod=/data/evals", " Team/Prod = ./runs", "a=file:///x/y", "a=FILE://localhost/x", "a=file:///x?y", "a=file:///x#f",
	"a=file://u:p@/x", "a=file://host/x", "a=local://rel/dir", "a=local:///abs?x", "a=s3://bucket/prefix/",
	"a=s3://key:secret@bucket/p", "a=az://container/p?sig=1", "a=gs://b", "a=gs:///nobucket", "a=http://x/y",
	"main=/d", "1x=/d", "a.b-c=/d", "=/d", "a=", "a==b", "a=C:\\x", "a=\xff", "a/../b=/d",
}

// FuzzParseMount: a mount string is parsed and validated without panics,
// and what is accepted is usable: a valid, unreserved alias, a namespace of
// valid components, and a URI that ValidateMounts takes.
func FuzzParseMount(f *testing.F) {
	for _, s := range uriSeeds {
		f.Add(s)
	}
	alias := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := catalog.ParseMount(s)
		if err != nil {
			return
		}
		if !alias.MatchString(m.Alias) {
			t.Fatalf("ParseMount(%q): alias %q", s, m.Alias)
		}
		if a, err := catalog.NormalizeAlias(m.Alias); err != nil || a != m.Alias {
			t.Fatalf("ParseMount(%q): alias %q does not normalize to itself: %v", s, m.Alias, err)
		}
		if _, err := catalog.ParseNamespace(m.NamespacePath()); err != nil {
			t.Fatalf("ParseMount(%q): namespace %q: %v", s, m.NamespacePath(), err)
		}
		if m.URI == "" || m.URI != strings.TrimSpace(m.URI) {
			t.Fatalf("ParseMount(%q): URI %q", s, m.URI)
		}
		_ = catalog.ValidateMounts([]catalog.DatasetMount{m}) // must not panic
	})
}

// FuzzLocalPath: an accepted local URI is an absolute, clean path; a
// file:// or local:// URI with a query string, fragment or user info is
// never accepted (docs/object-stores.md), and what RedactURI shows never
// holds a query string or user info.
func FuzzLocalPath(f *testing.F) {
	for _, s := range uriSeeds {
		_, uri, _ := strings.Cut(s, "=")
		f.Add(uri)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		shown := catalog.RedactURI(uri)
		if strings.Contains(shown, "?") {
			t.Fatalf("RedactURI(%q) = %q keeps a query string", uri, shown)
		}
		if scheme, rest, ok := strings.Cut(shown, "://"); ok && !strings.ContainsAny(scheme, "/") {
			if at := strings.IndexByte(rest, '@'); at >= 0 && at < strings.IndexByte(rest+"/", '/') {
				t.Fatalf("RedactURI(%q) = %q keeps user info", uri, shown)
			}
		}
		p, err := catalog.LocalPath(uri)
		if err != nil {
			return
		}
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			t.Fatalf("LocalPath(%q) = %q, not an absolute clean path", uri, p)
		}
		if scheme, rest, ok := strings.Cut(uri, "://"); ok {
			switch strings.ToLower(scheme) {
			case "file", "local":
				if strings.ContainsAny(rest, "?#") || strings.ToLower(scheme) == "file" && strings.Contains(strings.SplitN(rest, "/", 2)[0], "@") {
					t.Fatalf("LocalPath(%q) = %q accepted a query, fragment or user info", uri, p)
				}
			default:
				t.Fatalf("LocalPath(%q) = %q accepted scheme %q", uri, p, scheme)
			}
		}
	})
}

// FuzzObjectStoreURI: an accepted object-store URI names a bucket and a
// prefix and has nothing to redact (no query, fragment or credentials), so
// it is safe to show in sources rows and errors.
func FuzzObjectStoreURI(f *testing.F) {
	for _, s := range uriSeeds {
		_, uri, _ := strings.Cut(s, "=")
		f.Add(uri)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if !objstore.IsRemote(uri) {
			return
		}
		loc, err := objstore.ParseURI(uri)
		if err != nil {
			return
		}
		if loc.Bucket == "" || strings.Contains(loc.Bucket, "/") || strings.HasPrefix(loc.Prefix, "/") {
			t.Fatalf("ParseURI(%q) = %+v", uri, loc)
		}
		if strings.ContainsAny(uri, "?#") || catalog.RedactURI(uri) != uri {
			t.Fatalf("ParseURI(%q) accepted a URI that RedactURI changes to %q", uri, catalog.RedactURI(uri))
		}
	})
}

// FuzzPageToken: any token given to ListSources is either rejected with
// ErrPageToken or resumes the listing at a page boundary inside it; the
// tokens a listing issues walk it exactly once.
func FuzzPageToken(f *testing.F) {
	root := f.TempDir()
	testutil.WriteFiles(f, root, map[string]string{"a.json": "{}", "b.json": "{}", "c/d.jsonl": "{}", "e.ndjson": "{}", "f.json": "{}"})
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "d", URI: root}}, catalog.DefaultOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { snap.Close() })
	all, _, err := snap.ListSources("d", catalog.MaxPageSize, "")
	if err != nil || len(all) != 5 {
		f.Fatalf("%d sources, %v", len(all), err)
	}
	var seen []string
	for token := ""; ; {
		page, next, err := snap.ListSources("d", 2, token)
		if err != nil {
			f.Fatal(err)
		}
		for _, r := range page {
			seen = append(seen, r.File)
		}
		f.Add(next, 2)
		if next == "" {
			break
		}
		token = next
	}
	if len(seen) != len(all) {
		f.Fatalf("paging saw %v", seen)
	}
	for _, s := range []string{"x", "eyJzIjoiYSJ9", "eyJzIjoiIiwibCI6IiIsIm8iOi0xfQ", "eyJvIjoxfQ", "!!", strings.Repeat("A", 1000)} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, token string, size int) {
		page, next, err := snap.ListSources("d", size, token)
		if err != nil {
			if !errors.Is(err, catalog.ErrPageToken) {
				t.Fatalf("token %q: %v is not a page-token error", token, err)
			}
			return
		}
		if len(page) == 0 {
			t.Fatalf("token %q: an accepted token gave an empty page", token)
		}
		// The page is a window of the full listing.
		start := -1
		for i := range all {
			if all[i].File == page[0].File {
				start = i
			}
		}
		if start < 0 || start+len(page) > len(all) {
			t.Fatalf("token %q: page %v is not inside the listing", token, page)
		}
		for i, r := range page {
			if r.File != all[start+i].File {
				t.Fatalf("token %q: page is not contiguous", token)
			}
		}
		if (next == "") != (start+len(page) == len(all)) {
			t.Fatalf("token %q: next %q after %d of %d", token, next, start+len(page), len(all))
		}
	})
}

// FuzzRemoteStorePins: a bucket's CURRENT, generation manifest and events
// manifest are untrusted input. Whatever they hold, discovery never panics
// or fails the listing: the store is pinned, with every object it names
// stat'ed at the size its manifest records, or it is a candidate error.
// The bucket holds a real Storyline store and events store whose three
// pointer files are replaced by the fuzzed bytes.
func FuzzRemoteStorePins(f *testing.F) {
	files := realStores(f)
	current, genManifest, evManifest := files[currentKey], files[genManifestKey], files[eventsManifestKey]
	f.Add(current, genManifest, evManifest)
	f.Add([]byte("gen-000001"), genManifest, evManifest)
	f.Add([]byte("../x\n"), []byte("{}"), []byte(`{"segments":[{"path":"../../etc/passwd","bytes":1}]}`))
	f.Add([]byte("\xff\n"), append(append([]byte(nil), genManifest...), '{'), append(append([]byte(nil), evManifest...), ' ', '1'))
	for _, d := range discoverStores(f, files, current, genManifest, evManifest) {
		if d.Err != nil {
			f.Fatalf("the real %s does not pin: %v", d.File, d.Err)
		}
	}
	f.Fuzz(func(t *testing.T, current, genManifest, evManifest []byte) {
		for _, d := range discoverStores(t, files, current, genManifest, evManifest) {
			if (d.Err == nil) == (d.Revision == nil) {
				t.Fatalf("%s: pinned %v with error %v", d.File, d.Revision, d.Err)
			}
			switch rev := d.Revision.(type) {
			case catalog.RemoteStorylineRevision:
				for _, rel := range storyline.Tables {
					if obj, ok := rev.Tables[rel]; !ok || obj.Size != rev.Manifest.Tables[rel].Bytes {
						t.Fatalf("table %s pinned as %+v, manifest records %+v", rel, obj, rev.Manifest.Tables[rel])
					}
				}
			case catalog.RemoteEventsRevision:
				if len(rev.Segments) != len(rev.Manifest.Segments) {
					t.Fatalf("%d segment pins for %d segments", len(rev.Segments), len(rev.Manifest.Segments))
				}
			}
		}
	})
}

// discoverStores uploads files to a local bucket, with the three pointer
// files replaced, and discovers it: the listing itself must not fail.
func discoverStores(t testing.TB, files map[string][]byte, current, genManifest, evManifest []byte) []*catalog.DiscoveredSource {
	t.Helper()
	root := t.TempDir()
	tree := map[string]string{}
	for rel, data := range files {
		tree["ds/"+rel] = string(data)
	}
	tree["ds/"+currentKey], tree["ds/"+genManifestKey], tree["ds/"+eventsManifestKey] = string(current), string(genManifest), string(evManifest)
	testutil.WriteFiles(t, root, tree)
	b, err := objstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	found, err := catalog.DiscoverRemote(context.Background(), b, "ds/", catalog.DefaultOptions())
	if err != nil {
		t.Fatalf("the listing failed: %v", err)
	}
	if len(found) != 2 {
		t.Fatalf("%d sources", len(found))
	}
	return found
}

// The pointer files of the stores realStores writes, by Dataset-relative key.
const (
	currentKey        = "live/CURRENT"
	genManifestKey    = "live/gen-000001/manifest.json"
	eventsManifestKey = "x/events.lance/_manifest.json"
)

// realStores writes a Storyline store (live/, one generation) and an events
// store (x/events.lance/, one segment) and returns every file of both by
// Dataset-relative key.
func realStores(f *testing.F) map[string][]byte {
	ctx := context.Background()
	dir := f.TempDir()
	st, err := storyline.OpenOrCreate(filepath.Join(dir, "live"))
	if err != nil {
		f.Fatal(err)
	}
	w, err := st.NewGeneration()
	if err != nil {
		f.Fatal(err)
	}
	inputs := f.TempDir()
	testutil.WriteFiles(f, inputs, map[string]string{"chat.jsonl": `{"messages":[{"role":"user","content":"hi"}]}` + "\n"})
	chat := filepath.Join(inputs, "chat.jsonl")
	if _, err := ingest.NormalizeFile(ctx, chat, "chat.jsonl", ingest.Options{}, w.Add); err != nil {
		f.Fatal(err)
	}
	if _, err := w.Commit(ctx, nil); err != nil {
		f.Fatal(err)
	}
	ev, err := events.OpenOrCreate(filepath.Join(dir, "x", events.DirName))
	if err != nil {
		f.Fatal(err)
	}
	if _, err := ev.Append(ctx, sessionEvents("s-a")); err != nil {
		f.Fatal(err)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if data, err := os.ReadFile(p); err == nil {
			files[filepath.ToSlash(rel)] = data
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, k := range []string{currentKey, genManifestKey, eventsManifestKey} {
		if files[k] == nil {
			f.Fatalf("the stores have no %s (%d files)", k, len(files))
		}
	}
	return files
}
