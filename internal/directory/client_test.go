package directory

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseLocator(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "catalog://127.0.0.1:8081", want: "catalog://127.0.0.1:8081"},
		{in: "CATALOG://127.0.0.1:8081/", want: "catalog://127.0.0.1:8081"},
		{in: "catalog://127.1.2.3:1", want: "catalog://127.1.2.3:1"},
		{in: "catalog://[::1]:8081", want: "catalog://[::1]:8081"},
		{in: "catalog://[0:0:0:0:0:0:0:1]:8081", want: "catalog://[::1]:8081"},
		{in: "http://127.0.0.1:8081", err: "the scheme must be catalog"},
		{in: "catalog://localhost:8081", err: "the host must be a loopback IP address"},
		{in: "catalog://10.0.0.1:8081", err: "the host must be a loopback IP address"},
		{in: "catalog://0.0.0.0:8081", err: "the host must be a loopback IP address"},
		{in: "catalog://127.0.0.1", err: "the host needs a port"},
		{in: "catalog://127.0.0.1:0", err: "the port must be a number from 1 to 65535"},
		{in: "catalog://127.0.0.1:70000", err: "the port must be a number from 1 to 65535"},
		{in: "catalog://u:hunter2@127.0.0.1:8081", err: `invalid catalog locator "catalog://127.0.0.1:8081": it must not contain user info; give keys with --ak and --sk`},
		{in: "catalog://127.0.0.1:8081/prod", err: "it must not contain a path; name a dataset as @PIN/NAME instead"},
		{in: "catalog:127.0.0.1:8081", err: "it must not contain a path"},
		{in: "catalog://127.0.0.1:8081?x=1", err: "it must not contain a query"},
		{in: "catalog://127.0.0.1:8081?", err: "it must not contain a query"},
		{in: "catalog://127.0.0.1:8081#x", err: "it must not contain a fragment"},
		{in: "catalog://127.0.0.1:8081#", err: "it must not contain a fragment"},
		{in: "catalog://u:hunter2 x@127.0.0.1:8081", err: "invalid catalog locator: not a URL (want catalog://127.0.0.1:PORT)"},
	}
	for _, tt := range tests {
		got, err := ParseLocator(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.err == "" && got != tt.want:
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want %q", tt.in, err, tt.err)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error repeats the password: %v", tt.in, err)
		}
	}
}

func startDirectory(t *testing.T, config string) (locator string, f *fixture) {
	f = newFixture(t, config)
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	return "catalog://" + strings.TrimPrefix(srv.URL, "http://"), f
}

func TestClient(t *testing.T) {
	loc, _ := startDirectory(t, matrixConfig)
	ctx := context.Background()
	alice := &Client{Locator: loc, AccessKey: "pcak_alice", SecretKey: "alice-secret-0123456789"}

	tk, err := alice.Ticket(ctx, "alice_s3")
	if err != nil {
		t.Fatal(err)
	}
	if tk.URI != "s3://team/alice/" || tk.SecretKey.Reveal() != "A_BACKEND_SK_0123456789" || !tk.Store().PathStyle {
		t.Errorf("ticket %+v", tk)
	}
	ls, err := alice.List(ctx)
	if err != nil || len(ls) != 4 {
		t.Errorf("list %v %v", ls, err)
	}

	_, err = alice.Ticket(ctx, "bob_only")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("ungranted: %v", err)
	}
	if want := loc + `: catalog answered 404: dataset "bob_only" not found`; err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}

	wrong := &Client{Locator: loc, AccessKey: "pcak_alice", SecretKey: "hunter2hunter2"}
	if _, err := wrong.Ticket(ctx, "alice_only"); !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("wrong secret: %v", err)
	}

	anon := &Client{Locator: loc}
	if _, err := anon.Ticket(ctx, "pub"); err != nil {
		t.Errorf("anonymous public: %v", err)
	}
	if _, err := anon.Ticket(ctx, "pubs3"); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("anonymous public s3: %v", err)
	}
}

func TestClientUnreachable(t *testing.T) {
	srv := httptest.NewServer(nil)
	loc := "catalog://" + strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	c := &Client{Locator: loc, AccessKey: "pcak_x", SecretKey: "hunter2hunter2"}
	_, err := c.Ticket(context.Background(), "prod")
	if err == nil || !strings.HasPrefix(err.Error(), loc+": ") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unreachable: %v", err)
	}
}

// TestRunPolls: the poll loop picks up an edit without an explicit Reload.
func TestRunPolls(t *testing.T) {
	f := newFixture(t, matrixConfig)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.w.Run(ctx, 10*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	if err := os.WriteFile(f.path, []byte(strings.Replace(matrixConfig, "version = 1\n", "version = 1\nrevision = 5\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.w.ACL().Revision() != 5 {
		if time.Now().After(deadline) {
			t.Fatal("the edit was not picked up")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Directory that redirects never gets the keys sent anywhere: not to
// another origin, not to its own; the client fails naming the redirect.
func TestClientRefusesRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderAccessKey) != "" || r.Header.Get(HeaderSecretKey) != "" {
			elsewhere.Add(1)
		}
		w.Write([]byte(`{"name":"prod","uri":"/tmp"}`))
	}))
	defer other.Close()
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, target := range []string{other.URL, ""} {
			dir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("followed") != "" {
					elsewhere.Add(1)
				}
				http.Redirect(w, r, target+r.URL.Path+"?followed=1", status)
			}))
			c := &Client{Locator: "catalog://" + strings.TrimPrefix(dir.URL, "http://"), AccessKey: "pcak_x", SecretKey: "hunter2hunter2"}
			_, terr := c.Ticket(context.Background(), "prod")
			_, lerr := c.List(context.Background())
			dir.Close()
			for _, err := range []error{terr, lerr} {
				if !errors.Is(err, ErrRedirect) || strings.Contains(err.Error(), "hunter2") {
					t.Errorf("%d to %q: %v", status, target, err)
				}
			}
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("%d requests followed a redirect", n)
	}
}
