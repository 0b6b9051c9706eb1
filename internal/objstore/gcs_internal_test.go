package objstore

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func TestGCSEscape(t *testing.T) {
	for in, want := range map[string]string{
		"a/b c.json":   "a%2Fb%20c.json",
		"x+y=z@w$&,;:": "x%2By%3Dz%40w%24%26%2C%3B%3A",
		"q?#%":         "q%3F%23%25",
		"é~_-.":        "%C3%A9~_-.",
	} {
		if got := gcsEscape(in); got != want {
			t.Errorf("gcsEscape(%q) = %q, want %q", in, got, want)
		}
		if back, err := url.PathUnescape(gcsEscape(in)); err != nil || back != in {
			t.Errorf("%q does not unescape back: %q %v", in, back, err)
		}
	}
}

func TestGCSRetryable(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&gcsError{Code: 503}, true},
		{&gcsError{Code: 500}, true},
		{&gcsError{Code: 429}, true},
		{&gcsError{Code: 408}, true},
		{&gcsError{Code: 404}, false},
		{&gcsError{Code: 412}, false},
		{&gcsError{Code: 401}, false},
		{reset, true},
		{&url.Error{Op: "Get", URL: "http://h/o", Err: reset}, true},
		{&url.Error{Op: "Post", URL: "http://h/o", Err: io.EOF}, true},
		{&url.Error{Op: "Get", URL: "http://h/o", Err: errors.New("http: server closed idle connection")}, true},
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{&url.Error{Op: "Get", URL: "http://h/o", Err: &TimeoutError{What: phaseResponse, After: time.Second}}, true},
		{&TimeoutError{What: phaseBody, After: time.Second}, true},
		// An object named like a transient error is not one.
		{&url.Error{Op: "Get", URL: "http://h/connection%20reset", Err: &budgetError{limit: 3}}, false},
		{&url.Error{Op: "Get", URL: "http://h/o", Err: context.Canceled}, false},
		{errors.New("source has 3 bytes, expected 4"), false},
		{nil, false},
	} {
		if got := gcsRetryable(tc.err); got != tc.want {
			t.Errorf("gcsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestParseGCSError(t *testing.T) {
	e := parseGCSError(404, []byte(`{"error":{"code":404,"message":"No such object: b/o","errors":[{"domain":"global","reason":"notFound"}]}}`))
	if e.Code != 404 || e.Message != "No such object: b/o" || e.Reason != "notFound" || e.Error() != "HTTP 404 Not Found: No such object: b/o (notFound)" {
		t.Fatalf("%#v: %s", e, e)
	}
	if httpStatus(fmt.Errorf("stat: %w", e)) != 404 {
		t.Fatal("httpStatus does not see a wrapped *gcsError")
	}
	if e := parseGCSError(503, []byte("<Error>\n<Code>Busy</Code>\n</Error>")); e.Message != "<Error>; <Code>Busy</Code>; </Error>" {
		t.Fatalf("non-JSON body: %q", e.Message)
	}
	if e := parseGCSError(404, []byte("Not Found\n")); e.Error() != "HTTP 404 Not Found" {
		t.Fatalf("plain body repeating the status: %q", e)
	}
	if e := parseGCSError(500, []byte(strings.Repeat("é", 400))); len(e.Message) > 303 || !utf8.ValidString(e.Message) {
		t.Fatalf("long body: %d bytes, valid UTF-8 %v", len(e.Message), utf8.ValidString(e.Message))
	}
}

func TestParseGCSList(t *testing.T) {
	l, err := parseGCSList([]byte(`{"kind":"storage#objects","nextPageToken":"tok","items":[
		{"name":"a/b c.json","size":"7","updated":"2026-12-01T17:05:20.407777Z","etag":"rD70jKoI+j7V4CXaae3GRQ==","generation":"1796144720407800"},
		{"name":"n","size":3,"generation":5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ObjectInfo{Key: "a/b c.json", Size: 7, ModTime: time.Date(2026, 12, 1, 17, 5, 20, 407777000, time.UTC), ETag: "rD70jKoI+j7V4CXaae3GRQ==", Generation: 1796144720407800}
	if l.NextPageToken != "tok" || len(l.Items) != 2 || l.Items[0].info() != want || l.Items[1].info().Size != 3 || l.Items[1].info().Generation != 5 {
		t.Fatalf("%+v", l)
	}
	if l, err := parseGCSList([]byte(`{"kind":"storage#objects"}`)); err != nil || len(l.Items) != 0 || l.NextPageToken != "" {
		t.Fatalf("empty page: %+v %v", l, err)
	}
	for _, bad := range []string{`{"items":[{"size":"1"}]}`, `{"items":[{"name":"x","size":"-1"}]}`, `{"items":[{"name":"x","size":"1e3"}]}`, `[`, `{"items":[{"name":"x","updated":"yesterday"}]}`} {
		if _, err := parseGCSList([]byte(bad)); err == nil {
			t.Errorf("parseGCSList(%s) accepted", bad)
		}
	}
}

func TestGCSCRC32C(t *testing.T) {
	sum := crc32.Checksum([]byte(`{"x":1}`), crc32cTable)
	if encodeCRC32C(sum) != "vaPQhA==" { // as fake-gcs-server computes it
		t.Fatalf("crc32c %s", encodeCRC32C(sum))
	}
	if c, ok := gcsCRC32C([]string{"crc32c=vaPQhA==,md5=rD70jKoI+j7V4CXaae3GRQ=="}); !ok || c != sum {
		t.Fatalf("JSON-style X-Goog-Hash: %d %v", c, ok)
	}
	if c, ok := gcsCRC32C([]string{"md5=rD70jKoI+j7V4CXaae3GRQ==", "crc32c=vaPQhA=="}); !ok || c != sum {
		t.Fatalf("XML-style X-Goog-Hash: %d %v", c, ok)
	}
	if _, ok := gcsCRC32C([]string{"crc32c=AAAA"}); ok {
		t.Fatal("a 3-byte crc32c accepted")
	}
}

// fakeGCS serves one object over the JSON API, lying about checksums as
// asked, and records the requests.
type fakeGCS struct {
	mu                 sync.Mutex
	data               string
	readHash, putCRC   string
	reqs               []*http.Request
	uploadLen          []int64
	uploadTransferEncs [][]string
}

func (f *fakeGCS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r.Clone(context.Background()))
	obj := fmt.Sprintf(`{"name":"o","size":"%d","generation":"7","updated":"2026-12-01T17:05:20Z","etag":"e","crc32c":%q}`, len(f.data), f.putCRC)
	switch {
	case r.Method == http.MethodPost:
		f.uploadLen = append(f.uploadLen, r.ContentLength)
		f.uploadTransferEncs = append(f.uploadTransferEncs, r.TransferEncoding)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, obj)
	case r.URL.Query().Get("alt") == "media":
		w.Header().Set("X-Goog-Generation", "7")
		w.Header().Set("X-Goog-Hash", "crc32c="+f.readHash)
		io.WriteString(w, f.data)
	default:
		io.WriteString(w, obj)
	}
}

func newFakeGCS(t *testing.T, f *fakeGCS) *GCS {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	b, err := NewGCS(context.Background(), "bkt", Config{Endpoint: srv.URL + "/storage/v1/", Retry: Retry{Attempts: 2, BaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGCSChecksums(t *testing.T) {
	const data = `{"x":1}`
	good := encodeCRC32C(crc32.Checksum([]byte(data), crc32cTable))
	f := &fakeGCS{data: data, readHash: good, putCRC: good}
	b := newFakeGCS(t, f)
	ctx := context.Background()
	pin := ObjectInfo{Key: "o", Size: int64(len(data)), Generation: 7}
	read := func() error {
		rc, err := b.ReadPinned(ctx, pin)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.ReadAll(rc)
		return err
	}
	if err := read(); err != nil {
		t.Fatalf("read with a good crc32c: %v", err)
	}
	if _, err := b.Put(ctx, "o", strings.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("put with a good crc32c: %v", err)
	}
	f.mu.Lock()
	f.readHash, f.putCRC = "AAAAAA==", "AAAAAA=="
	f.mu.Unlock()
	if err := read(); err == nil || !strings.Contains(err.Error(), "bad CRC32C") {
		t.Fatalf("read with a bad crc32c: %v", err)
	}
	if _, err := b.Put(ctx, "o", strings.NewReader(data), int64(len(data))); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("put with a bad crc32c: %v", err)
	}
}

// TestGCSRequests pins the shape of the requests: unauthenticated at an
// endpoint, a single media upload with a Content-Length and its
// preconditions, names escaped as one segment.
func TestGCSRequests(t *testing.T) {
	f := &fakeGCS{data: "abc"}
	b := newFakeGCS(t, f)
	ctx := context.Background()
	if _, err := b.Put(ctx, "d/x+y.json", io.MultiReader(strings.NewReader("abc")), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutIfAbsent(ctx, "d/x+y.json", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutIfMatch(ctx, ObjectInfo{Key: "d/x+y.json", Generation: 42}, strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "empty", strings.NewReader(""), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "d/x+y.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "short", strings.NewReader("ab"), 3); err == nil || !strings.Contains(err.Error(), "source has 2 bytes, expected 3") {
		t.Fatalf("put of a short body: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var got []string
	for _, r := range f.reqs {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("%s %s carries credentials at an emulator endpoint", r.Method, r.URL)
		}
		q := r.URL.Query()
		got = append(got, r.Method+" "+r.URL.EscapedPath()+" "+q.Get("uploadType")+" "+q.Get("name")+" "+q.Get("ifGenerationMatch")+" "+r.Header.Get("Content-Type")+" "+q.Get("alt"))
	}
	want := []string{
		"POST /upload/storage/v1/b/bkt/o media d/x+y.json  text/plain; charset=utf-8 ",
		"POST /upload/storage/v1/b/bkt/o media d/x+y.json 0 text/plain; charset=utf-8 ",
		"POST /upload/storage/v1/b/bkt/o media d/x+y.json 42 text/plain; charset=utf-8 ",
		"POST /upload/storage/v1/b/bkt/o media empty  text/plain; charset=utf-8 ",
		"GET /storage/v1/b/bkt/o/d%2Fx%2By.json     json",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, n := range f.uploadLen {
		if want := []int64{3, 3, 3, 0}[i]; n != want || len(f.uploadTransferEncs[i]) != 0 {
			t.Errorf("upload %d: Content-Length %d, Transfer-Encoding %v; want %d, none", i, n, f.uploadTransferEncs[i], want)
		}
	}
}

// FuzzGCSResponses: any answer body parses or is refused without a panic;
// an error keeps its status and a one-line, bounded message; an accepted
// listing or object has names and non-negative sizes and generations.
func FuzzGCSResponses(f *testing.F) {
	for _, seed := range []struct {
		status int
		body   string
	}{
		{200, `{"kind":"storage#objects","nextPageToken":"CgVrMDQuag==","items":[{"name":"a/b c.json","size":"7","updated":"2026-12-01T17:05:20.407777Z","etag":"rD70jKoI+j7V4CXaae3GRQ==","generation":"1796144720407800"}]}`},
		{200, `{"kind":"storage#object","name":"o.json","size":"3","crc32c":"vaPQhA==","generation":"1","updated":"2026-12-01T17:05:20Z"}`},
		{200, `{"items":[{"name":"n","size":3,"generation":null}]}`},
		{404, `{"error":{"code":404,"message":"No such object: b/o","errors":[{"domain":"global","reason":"notFound","message":"No such object: b/o"}]}}`},
		{412, `{"error":{"code":412,"message":"Precondition failed","errors":[{"domain":"global","reason":"conditionNotMet"}]}}`},
		{503, "<?xml version=\"1.0\"?>\n<Error><Code>InjectedFault</Code></Error>"},
		{404, "Not Found\n"},
		{500, ""},
	} {
		f.Add(seed.status, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := parseGCSError(status, body)
		if e.Code != status || strings.ContainsAny(e.Message, "\r\n") || len(e.Message) > 303 || len(e.Reason) > 63 {
			t.Fatalf("error %#v from %q", e, body)
		}
		_ = e.Error()
		if l, err := parseGCSList(body); err == nil {
			for _, o := range l.Items {
				if o.Name == "" || o.Size < 0 || o.Generation < 0 {
					t.Fatalf("accepted item %+v", o)
				}
			}
		}
		if o, err := parseGCSObject(body); err == nil && (o.Name == "" || o.Size < 0 || o.Generation < 0) {
			t.Fatalf("accepted object %+v", o)
		}
		if c, ok := gcsCRC32C([]string{string(body)}); ok {
			if d, err := decodeCRC32C(encodeCRC32C(c)); err != nil || d != c {
				t.Fatalf("crc32c %d does not round-trip", c)
			}
		}
	})
}

// TestGCSDefaultCredentials runs the cloud path: Application Default
// Credentials (a service-account file whose token endpoint is a test
// server) with the SDK's scopes, the token on every request, the file's
// quota project as X-Goog-User-Project, storage.googleapis.com as the host.
func TestGCSDefaultCredentials(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var scopes []string
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		parts := strings.Split(r.PostForm.Get("assertion"), ".")
		var claims struct {
			Scope string `json:"scope"`
		}
		if len(parts) == 3 {
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			json.Unmarshal(payload, &claims)
		}
		mu.Lock()
		scopes = strings.Fields(claims.Scope)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"test-token","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(tokens.Close)
	file, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "sa@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokens.URL,
		"quota_project_id": "quota-p",
	})
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	t.Setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "")

	f := &fakeGCS{data: "abc"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var hosts []string
	redirect := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		hosts = append(hosts, r.URL.Scheme+"://"+r.URL.Host)
		mu.Unlock()
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
		return http.DefaultTransport.RoundTrip(r)
	})
	b, err := NewGCS(context.Background(), "bkt", Config{Transport: redirect})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(context.Background(), "o"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), "o", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(scopes, " ") != strings.Join(gcsScopes, " ") {
		t.Errorf("token asked for scopes %q, want %q", scopes, gcsScopes)
	}
	for i, r := range f.reqs {
		if r.Header.Get("Authorization") != "Bearer test-token" || r.Header.Get("X-Goog-User-Project") != "quota-p" || hosts[i] != "https://storage.googleapis.com" {
			t.Errorf("%s %s to %s: Authorization %q, X-Goog-User-Project %q", r.Method, r.URL, hosts[i], r.Header.Get("Authorization"), r.Header.Get("X-Goog-User-Project"))
		}
	}
	if len(f.reqs) != 2 {
		t.Fatalf("%d requests", len(f.reqs))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
