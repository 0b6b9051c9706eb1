package config

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pchronicle/pchronicle/internal/directory"
)

const directoryConfig = `
[meta]
version = 1

[users.alice]
access_key = "pcak_alice"
secret_key = "ALICE_SECRET"

[datasets.pub]
uri = "/data/pub"

[datasets.prod]
uri = "s3://prod/evals/"
endpoint = "http://127.0.0.1:9000"
region = "us-east-1"
access_key = "BACKEND_AK"
secret_key = "BACKEND_SK"

[datasets.hidden]
uri = "/data/hidden"

[[grants]]
user = "*"
dataset = "pub"

[[grants]]
user = "alice"
dataset = "prod"
`

// startDirectory serves directoryConfig and counts the ticket exchanges.
func startDirectory(t *testing.T) (locator string, exchanges *atomic.Int64) {
	t.Helper()
	c, err := directory.Parse("catalog.toml", []byte(directoryConfig))
	if err != nil {
		t.Fatal(err)
	}
	h := &directory.Handler{ACL: directory.NewACL(c)}
	exchanges = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != directory.DatasetsPath {
			exchanges.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return "catalog://" + strings.TrimPrefix(srv.URL, "http://"), exchanges
}

func TestNormalizeCatalogPin(t *testing.T) {
	tests := []struct {
		name string
		pin  Pin
		want string // the normalized URI, or the error
	}{
		{"keys", Pin{URI: "catalog://127.0.0.1:8081/", AccessKey: "ak", SecretKey: "sk"}, "catalog://127.0.0.1:8081"},
		{"anonymous", Pin{URI: "catalog://127.0.0.1:8081"}, "catalog://127.0.0.1:8081"},
		{"endpoint", Pin{URI: "catalog://127.0.0.1:8081", Endpoint: "http://x"}, "a catalog:// pin takes only --ak and --sk"},
		{"region", Pin{URI: "catalog://127.0.0.1:8081", Region: "r"}, "a catalog:// pin takes only --ak and --sk"},
		{"format", Pin{URI: "catalog://127.0.0.1:8081", Format: "atif"}, "a catalog:// pin takes only --ak and --sk"},
		{"half keys", Pin{URI: "catalog://127.0.0.1:8081", AccessKey: "ak"}, "a catalog:// pin needs both --ak and --sk"},
		{"not loopback", Pin{URI: "catalog://192.168.1.2:8081"}, "the host must be a loopback IP address"},
		{"path", Pin{URI: "catalog://127.0.0.1:8081/prod"}, "it must not contain a path"},
	}
	for _, tt := range tests {
		got, err := NormalizeCatalogPin(tt.pin)
		if err != nil {
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
			}
			continue
		}
		if got.URI != tt.want || got.AccessKey != tt.pin.AccessKey || got.SecretKey != tt.pin.SecretKey {
			t.Errorf("%s: %+v, want uri %s", tt.name, got, tt.want)
		}
	}
}

func TestResolveDirectoryPins(t *testing.T) {
	loc, exchanges := startDirectory(t)
	path := filepath.Join(t.TempDir(), "config.toml")
	f := &File{Pins: map[string]Pin{
		"team":  {URI: loc, AccessKey: "pcak_alice", SecretKey: "ALICE_SECRET"},
		"anon":  {URI: loc},
		"wrong": {URI: loc, AccessKey: "pcak_alice", SecretKey: "nope"},
		"local": {URI: "/srv/x"},
	}}
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	p, err := cfg.ResolvePinContext(ctx, "@team/prod")
	if err != nil {
		t.Fatal(err)
	}
	want := Pin{URI: "s3://prod/evals/", Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", PathStyle: true, AccessKey: "BACKEND_AK", SecretKey: "BACKEND_SK"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("@team/prod = %+v, want %+v", p, want)
	}
	if p, err := cfg.ResolvePinContext(ctx, "@team/prod/nightly/run1"); err != nil || p.URI != "s3://prod/evals/nightly/run1" {
		t.Errorf("@team/prod/nightly/run1 = %+v %v", p, err)
	}
	if n := exchanges.Load(); n != 1 {
		t.Errorf("%d ticket exchanges for one dataset, want 1 (the per-process cache)", n)
	}
	if p, err := cfg.ResolvePinContext(ctx, "@anon/pub"); err != nil || !reflect.DeepEqual(p, Pin{URI: "/data/pub"}) {
		t.Errorf("@anon/pub = %+v %v", p, err)
	}

	for ref, wantErr := range map[string]string{
		"@team":           "@team is a Directory (" + loc + "), not a Dataset: name one of its datasets as @team/NAME; visible to you: prod, pub",
		"@team/":          "name one of its datasets as @team/NAME",
		"@team/hidden":    `@team/hidden: ` + loc + `: catalog answered 404: dataset "hidden" not found`,
		"@team/nope":      `dataset "nope" not found`,
		"@team/Prod":      `@team/Prod: invalid dataset name "Prod"`,
		"@team/prod/../x": `must not contain ..`,
		"@anon/prod":      "catalog answered 401: send user keys",
		"@wrong/prod":     "catalog answered 401: invalid or incomplete catalog keys",
		"@anon":           "visible to you: pub",
		"@nope/x":         "unknown pin @nope",
	} {
		_, err := cfg.ResolvePinContext(ctx, ref)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want %q", ref, err, wantErr)
		}
	}
	// The plain resolver, used where Datasets are written, refuses Directory pins.
	if _, err := cfg.ResolvePin("@team/prod"); err == nil || !strings.Contains(err.Error(), "@team is a Directory") {
		t.Errorf("ResolvePin: %v", err)
	}
	if p, err := cfg.ResolvePinContext(ctx, "@local/a"); err != nil || p.URI != "/srv/x/a" {
		t.Errorf("@local/a = %+v %v", p, err)
	}

	after, _ := os.ReadFile(path)
	if string(after) != string(before) || strings.Contains(string(after), "BACKEND") {
		t.Errorf("resolution changed the config or wrote backend keys:\n%s", after)
	}
}
