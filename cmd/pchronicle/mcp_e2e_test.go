package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// headerTransport adds headers (a Directory user's keys) to every request.
type headerTransport struct{ keys []string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for i := 0; i+1 < len(h.keys); i += 2 {
		r.Header.Set(h.keys[i], h.keys[i+1])
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpHTTP connects the SDK's client to url's /mcp with keys.
func mcpHTTP(t *testing.T, url string, keys []string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "pchronicle-test", Version: "0"}, nil)
	s, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{keys}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func datasetNames(t *testing.T, s *sdk.ClientSession) []string {
	t.Helper()
	out, errText := testutil.CallTool(t, s, "list_datasets", nil)
	if errText != "" {
		t.Fatalf("list_datasets: %s", errText)
	}
	var names []string
	for _, d := range out["datasets"].([]any) {
		names = append(names, d.(map[string]any)["name"].(string))
	}
	slices.Sort(names)
	return names
}

// /mcp of `serve`: the tools over streamable HTTP, the same as over stdio;
// a cross-origin request is refused.
func TestMCPOverHTTP(t *testing.T) {
	srv := startServe(t, examples(t), "--listen", "127.0.0.1:0")
	s := mcpHTTP(t, srv.url, nil)
	if names := datasetNames(t, s); !slices.Equal(names, []string{"dataset"}) {
		t.Errorf("datasets %v", names)
	}
	out, errText := testutil.CallTool(t, s, "query", map[string]any{"sql": "SELECT count(*) AS n FROM runs"})
	if errText != "" || len(out["rows"].([]any)) != 1 || out["truncated"] != false {
		t.Fatalf("query: %v %s", out, errText)
	}
	if _, errText := testutil.CallTool(t, s, "query", map[string]any{"sql": "DROP TABLE runs"}); !strings.Contains(errText, "query_rejected") {
		t.Errorf("a write: %q", errText)
	}
	req, _ := http.NewRequest("POST", srv.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin /mcp: status %d, want 403", res.StatusCode)
	}
}

// /mcp under a Directory: each call runs with the caller's keys, so a user
// sees the public Dataset and their own grant and nothing else, cannot
// query an ungranted Dataset, and a call without keys sees only public
// Datasets.
func TestMCPOverHTTPUnderADirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.toml")
	if err := os.WriteFile(path, []byte(matrixDirectory(examples(t), bobGrant, true)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startParent(t, path, nil, []string{"alice-secret", "bob-secret"})
	as := mcpHTTP(t, p.url, alice)
	if names := datasetNames(t, as); !slices.Equal(names, []string{"alice_only", "pub"}) {
		t.Errorf("alice sees %v, want alice_only and pub", names)
	}
	out, errText := testutil.CallTool(t, as, "query", map[string]any{"sql": "SELECT count(*) FROM alice_only.runs"})
	if errText != "" || len(out["rows"].([]any)) != 1 {
		t.Fatalf("alice's query: %v %s", out, errText)
	}
	if _, errText := testutil.CallTool(t, as, "query", map[string]any{"sql": "SELECT count(*) FROM bob_only.runs"}); errText == "" || !strings.Contains(errText, "bob_only") {
		t.Errorf("alice querying bob_only: %q, want an error naming it", errText)
	}
	if names := datasetNames(t, mcpHTTP(t, p.url, bob)); !slices.Equal(names, []string{"bob_only", "pub"}) {
		t.Errorf("bob sees %v, want bob_only and pub", names)
	}
	if names := datasetNames(t, mcpHTTP(t, p.url, nil)); !slices.Equal(names, []string{"pub"}) {
		t.Errorf("no keys: sees %v, want only pub", names)
	}
}

// A columnar answer crosses a Directory worker's envelope whole: alice's
// Parquet answer reads back with her rows, and its footer says whether the
// cap cut it (trailers do not cross the envelope).
func TestColumnarAnswerUnderADirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.toml")
	if err := os.WriteFile(path, []byte(matrixDirectory(examples(t), "", true)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startParent(t, path, nil, []string{"alice-secret"})
	for _, format := range []string{"parquet", "arrow"} {
		a := p.do(t, "POST", "/api/query", `{"sql": "SELECT session_id, started_at FROM pub.runs ORDER BY 1", "format": "`+format+`", "max_rows": 2}`, alice...)
		if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "application/vnd.apache.") {
			t.Fatalf("%s: %d %s %.200s", format, a.status, a.header.Get("Content-Type"), a.body)
		}
		got := testutil.ReadColumnar(t, format, []byte(a.body))
		if len(got.Rows) != 2 || !slices.Equal(got.Types, []string{"VARCHAR", "TIMESTAMP WITH TIME ZONE"}) {
			t.Errorf("%s: %v %v", format, got.Types, got.Rows)
		}
		if format == "parquet" {
			pf, err := file.NewParquetReader(bytes.NewReader([]byte(a.body)))
			if err != nil {
				t.Fatal(err)
			}
			if v := pf.MetaData().KeyValueMetadata().FindValue("pchronicle.truncated"); v == nil || *v != "true" {
				t.Errorf("footer pchronicle.truncated = %v, want true (3 runs, cap 2)", v)
			}
		}
	}
}
