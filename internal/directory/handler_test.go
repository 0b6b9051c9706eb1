package directory

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// matrixConfig is the Directory of the auth-matrix test: alice has two
// grants, bob one; pub and pubs3 are public.
const matrixConfig = meta + `
[users.alice]
access_key = "pcak_alice"
secret_key = "alice-secret-0123456789"

[users.bob]
access_key = "pcak_bob"
secret_key = "bob-secret-0123456789"

[datasets.pub]
uri = "/data/pub"

[datasets.pubs3]
uri = "s3://pub/"
endpoint = "http://127.0.0.1:9000"
access_key = "PUB_BACKEND_AK"
secret_key = "PUB_BACKEND_SK_0123456789"

[datasets.alice_only]
uri = "/data/alice"

[datasets.alice_s3]
uri = "s3://team/alice/"
endpoint = "http://127.0.0.1:9001"
region = "eu-west-1"
access_key = "A_BACKEND_AK"
secret_key = "A_BACKEND_SK_0123456789"

[datasets.bob_only]
uri = "/data/bob"
` + `
[[grants]]
user = "*"
dataset = "pub"

[[grants]]
user = "*"
dataset = "pubs3"

[[grants]]
user = "alice"
dataset = "alice_only"

[[grants]]
user = "alice"
dataset = "alice_s3"

[[grants]]
user = "bob"
dataset = "bob_only"
`

// matrixSecrets lists every key of matrixConfig: none may ever reach a log.
var matrixSecrets = []string{"pcak_alice", "alice-secret", "pcak_bob", "bob-secret", "PUB_BACKEND", "A_BACKEND"}

type fixture struct {
	t    *testing.T
	path string
	w    *Watcher
	h    http.Handler
	logs *bytes.Buffer
}

func newFixture(t *testing.T, config string) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "catalog.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := Watch(path, log)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{ACL: w, Log: log, RequestID: func(r *http.Request) string { return r.Header.Get("X-Request-Id") }}
	f := &fixture{t: t, path: path, w: w, h: h, logs: logs}
	t.Cleanup(func() {
		for _, s := range matrixSecrets {
			if strings.Contains(logs.String(), s) {
				t.Errorf("a key (%s…) reached the log:\n%s", s[:4], logs)
			}
		}
	})
	return f
}

// edit rewrites the config file and reloads it once.
func (f *fixture) edit(config string) error {
	f.t.Helper()
	if err := os.WriteFile(f.path, []byte(config), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return f.w.Reload()
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(method, path string, headers ...string) answer {
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("X-Request-Id", "req-1")
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	return answer{rec.Code, rec.Header(), rec.Body.Bytes()}
}

var (
	asAlice = []string{HeaderAccessKey, "pcak_alice", HeaderSecretKey, "alice-secret-0123456789"}
	asBob   = []string{HeaderAccessKey, "pcak_bob", HeaderSecretKey, "bob-secret-0123456789"}
)

// TestAuthMatrix checks the exact status of every kind of caller against the
// list and the ticket exchange.
func TestAuthMatrix(t *testing.T) {
	f := newFixture(t, matrixConfig)
	list, ticket := DatasetsPath, func(n string) string { return DatasetsPath + "/" + n }
	tests := []struct {
		name    string
		method  string
		path    string
		headers []string
		status  int
		want    string // the list's names, or the ticket's name, or the error code
	}{
		{"no headers: list", "GET", list, nil, 200, "pub,pubs3"},
		{"no headers: public local ticket", "GET", ticket("pub"), nil, 200, "pub"},
		{"no headers: public s3 ticket needs keys", "GET", ticket("pubs3"), nil, 401, CodeUnauthorized},
		{"no headers: granted to someone", "GET", ticket("alice_only"), nil, 401, CodeUnauthorized},
		{"no headers: unknown dataset", "GET", ticket("nope"), nil, 401, CodeUnauthorized},
		{"access key only", "GET", list, []string{HeaderAccessKey, "pcak_alice"}, 401, CodeUnauthorized},
		{"secret key only", "GET", list, []string{HeaderSecretKey, "alice-secret-0123456789"}, 401, CodeUnauthorized},
		{"both blank", "GET", list, []string{HeaderAccessKey, "", HeaderSecretKey, ""}, 401, CodeUnauthorized},
		{"blank secret", "GET", list, []string{HeaderAccessKey, "pcak_alice", HeaderSecretKey, " "}, 401, CodeUnauthorized},
		{"wrong secret", "GET", list, []string{HeaderAccessKey, "pcak_alice", HeaderSecretKey, "bob-secret-0123456789"}, 401, CodeUnauthorized},
		{"unknown user", "GET", list, []string{HeaderAccessKey, "pcak_carol", HeaderSecretKey, "alice-secret-0123456789"}, 401, CodeUnauthorized},
		{"repeated header", "GET", list, append(append([]string{}, asAlice...), HeaderSecretKey, "alice-secret-0123456789"), 401, CodeUnauthorized},
		{"wrong secret on a public ticket", "GET", ticket("pub"), []string{HeaderAccessKey, "pcak_alice", HeaderSecretKey, "x"}, 401, CodeUnauthorized},
		{"alice: list", "GET", list, asAlice, 200, "alice_only,alice_s3,pub,pubs3"},
		{"alice: granted", "GET", ticket("alice_only"), asAlice, 200, "alice_only"},
		{"alice: granted s3", "GET", ticket("alice_s3"), asAlice, 200, "alice_s3"},
		{"alice: public s3", "GET", ticket("pubs3"), asAlice, 200, "pubs3"},
		{"alice: not granted", "GET", ticket("bob_only"), asAlice, 404, CodeNotFound},
		{"alice: unknown dataset", "GET", ticket("nope"), asAlice, 404, CodeNotFound},
		{"bob: list", "GET", list, asBob, 200, "bob_only,pub,pubs3"},
		{"bob: not granted", "GET", ticket("alice_s3"), asBob, 404, CodeNotFound},
		{"POST list", "POST", list, asAlice, 405, CodeMethodNotAllowed},
		{"DELETE ticket", "DELETE", ticket("alice_only"), asAlice, 405, CodeMethodNotAllowed},
		{"nested path", "GET", ticket("alice_only/x"), asAlice, 404, CodeNotFound},
		{"empty name", "GET", ticket(""), asAlice, 404, CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.do(tt.method, tt.path, tt.headers...)
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			if got := a.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if got := summary(t, a); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if tt.status == 405 && a.header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", a.header.Get("Allow"))
			}
		})
	}
}

// summary reduces an answer to the list's names, the ticket's name or the
// error code, checking the error body's shape on the way.
func summary(t *testing.T, a answer) string {
	t.Helper()
	if a.status != 200 {
		var e map[string]string
		if err := json.Unmarshal(a.body, &e); err != nil {
			t.Fatalf("error body %s: %v", a.body, err)
		}
		if len(e) != 3 || e["message"] == "" || e["request_id"] != "req-1" {
			t.Errorf("error body %s: want exactly code, message, request_id", a.body)
		}
		return e["code"]
	}
	var body struct {
		Name     string
		Datasets []Listing
	}
	if err := json.Unmarshal(a.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Name != "" {
		return body.Name
	}
	var names []string
	for _, d := range body.Datasets {
		names = append(names, d.Name)
	}
	return strings.Join(names, ",")
}

// TestRefusalsLookAlike: an unknown user and a bad secret get the same
// answer, and so do an unknown and an ungranted Dataset (up to its name, or
// exactly, for an anonymous caller).
func TestRefusalsLookAlike(t *testing.T) {
	f := newFixture(t, matrixConfig)
	bad := f.do("GET", DatasetsPath, HeaderAccessKey, "pcak_alice", HeaderSecretKey, "nope")
	unknown := f.do("GET", DatasetsPath, HeaderAccessKey, "pcak_nobody", HeaderSecretKey, "nope")
	if !bytes.Equal(bad.body, unknown.body) || bad.status != unknown.status {
		t.Errorf("bad secret: %d %s\nunknown user: %d %s", bad.status, bad.body, unknown.status, unknown.body)
	}
	if a, b := f.do("GET", DatasetsPath+"/nope"), f.do("GET", DatasetsPath+"/bob_only"); !bytes.Equal(a.body, b.body) {
		t.Errorf("anonymous, unknown: %s\nanonymous, private: %s", a.body, b.body)
	}
	unknownDS := f.do("GET", DatasetsPath+"/bob_onlx", asAlice...)
	ungranted := f.do("GET", DatasetsPath+"/bob_only", asAlice...)
	if !bytes.Equal(bytes.Replace(unknownDS.body, []byte("bob_onlx"), []byte("bob_only"), 1), ungranted.body) {
		t.Errorf("unknown: %s\nungranted: %s", unknownDS.body, ungranted.body)
	}
}

// TestTicketContents: an s3 ticket carries exactly its own backend's
// settings and keys and is marked no-store; a local ticket carries no keys.
func TestTicketContents(t *testing.T) {
	f := newFixture(t, matrixConfig)
	a := f.do("GET", DatasetsPath+"/alice_s3", asAlice...)
	var got Ticket
	if err := json.Unmarshal(a.body, &got); err != nil {
		t.Fatal(err)
	}
	want := Ticket{Name: "alice_s3", Dataset: Dataset{URI: "s3://team/alice/", Endpoint: "http://127.0.0.1:9001", Region: "eu-west-1", AccessKey: "A_BACKEND_AK", SecretKey: "A_BACKEND_SK_0123456789"}}
	if got != want {
		t.Errorf("ticket %+v, want %+v", got, want)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", a.header.Get("Cache-Control"))
	}
	a = f.do("GET", DatasetsPath+"/alice_only", asAlice...)
	if want := `{"name":"alice_only","uri":"/data/alice"}` + "\n"; string(a.body) != want {
		t.Errorf("local ticket %s, want %s", a.body, want)
	}
	a = f.do("GET", DatasetsPath, asAlice...)
	for _, s := range matrixSecrets[4:] {
		if bytes.Contains(a.body, []byte(s)) {
			t.Errorf("the list carries a backend key: %s", a.body)
		}
	}
	if !bytes.Contains(a.body, []byte(`"user":"alice"`)) {
		t.Errorf("the list does not name the user: %s", a.body)
	}
}

// TestHotReload: users and grants edits apply on the next reload; Dataset
// changes and broken edits keep the last valid ACL, with a warning that
// names what changed and no key.
func TestHotReload(t *testing.T) {
	f := newFixture(t, matrixConfig)
	ticket := DatasetsPath + "/alice_only"
	if a := f.do("GET", ticket, asAlice...); a.status != 200 {
		t.Fatalf("before: %d", a.status)
	}

	// Revoking the grant takes effect.
	revoked := strings.Replace(matrixConfig, "[[grants]]\nuser = \"alice\"\ndataset = \"alice_only\"\n", "", 1)
	if err := f.edit(revoked); err != nil {
		t.Fatal(err)
	}
	if a := f.do("GET", ticket, asAlice...); a.status != 404 {
		t.Fatalf("after revoke: %d %s", a.status, a.body)
	}

	// A newly issued user inherits the public grants.
	withCarol := revoked + "\n[users.carol]\naccess_key = \"pcak_carol\"\nsecret_key = \"carol-secret\"\n"
	if err := f.edit(withCarol); err != nil {
		t.Fatal(err)
	}
	carol := []string{HeaderAccessKey, "pcak_carol", HeaderSecretKey, "carol-secret"}
	if a := f.do("GET", DatasetsPath, carol...); a.status != 200 || summary(t, a) != "pub,pubs3" {
		t.Fatalf("new user: %d %s", a.status, a.body)
	}

	// A broken edit keeps the last valid ACL (carol, no alice_only grant).
	err := f.edit(withCarol + "\n[[grants]]\nuser = \"alice\"\ndataset = \"alice_only\"\npermissions = [\n")
	if err == nil {
		t.Fatal("broken edit accepted")
	}
	if a := f.do("GET", DatasetsPath, carol...); a.status != 200 {
		t.Errorf("after a broken edit, carol: %d", a.status)
	}
	if a := f.do("GET", ticket, asAlice...); a.status != 404 {
		t.Errorf("after a broken edit, alice_only: %d", a.status)
	}

	// An edit that breaks a rule keeps it too.
	if err := f.edit(withCarol + grant("dave", "pub")); err == nil {
		t.Fatal("invalid edit accepted")
	}

	// A Dataset change is refused even alongside a valid grant change.
	moved := strings.Replace(withCarol, `uri = "/data/bob"`, `uri = "/data/elsewhere"`, 1) + grant("alice", "alice_only")
	rekeyed := strings.Replace(withCarol, "A_BACKEND_SK_0123456789", "A_BACKEND_SK_rotated", 1)
	for _, edit := range []string{moved, rekeyed} {
		if err := f.edit(edit); !errors.Is(err, ErrRestartRequired) {
			t.Fatalf("dataset change: %v", err)
		}
		if a := f.do("GET", ticket, asAlice...); a.status != 404 {
			t.Errorf("a refused edit applied its grant: %d", a.status)
		}
	}
	logs := f.logs.String()
	for _, want := range []string{
		"bob_only changed (uri)", "alice_s3 changed (secret_key)", "invalid TOML", `no user \"dave\" in [users]`,
		"keeping the last valid ACL", "revision=0",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}

	// The same refused content is logged once, not every poll.
	n := strings.Count(f.logs.String(), "level=WARN")
	if err := f.w.Reload(); err != nil {
		t.Errorf("unchanged content reloaded again: %v", err)
	}
	if strings.Count(f.logs.String(), "level=WARN") != n {
		t.Error("an unchanged refused edit was logged again")
	}

	// A deleted file keeps the ACL.
	os.Remove(f.path)
	if err := f.w.Reload(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if a := f.do("GET", DatasetsPath, carol...); a.status != 200 {
		t.Errorf("after the file vanished, carol: %d", a.status)
	}
}

func TestWatchRefusesInvalidStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.toml")
	if _, err := Watch(path, slog.Default()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	os.WriteFile(path, []byte(meta+grant("alice", "x")), 0o600)
	if _, err := Watch(path, slog.Default()); err == nil || !strings.Contains(err.Error(), "grants[0].dataset") {
		t.Errorf("invalid: %v", err)
	}
}

// No answer reflects request text as markup: a name taken from the path
// comes back JSON-escaped, <, > and & included.
func TestAnswersNeverReflectMarkup(t *testing.T) {
	f := newFixture(t, matrixConfig)
	const hostile = "/%3Cimg%20src=x%20onerror=alert(1)%3E&"
	for _, tt := range []struct {
		path    string
		headers []string
		status  int
	}{
		{DatasetsPath + hostile, asAlice, http.StatusNotFound},
		{DatasetsPath + hostile, nil, http.StatusUnauthorized},
		{DatasetsPath + hostile + "/x", asAlice, http.StatusNotFound},
	} {
		a := f.do("GET", tt.path, tt.headers...)
		if a.status != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.path, a.status, a.body, tt.status)
		}
		if bytes.ContainsAny(a.body, "<>&") {
			t.Errorf("%s: the answer reflects markup: %s", tt.path, a.body)
		}
	}
	if a := f.do("GET", DatasetsPath+hostile, asAlice...); !bytes.Contains(a.body, []byte(`\u003cimg`)) {
		t.Errorf("the 404 does not name the dataset asked for: %s", a.body)
	}
}
