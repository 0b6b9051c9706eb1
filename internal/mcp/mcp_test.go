package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// keysTransport sends a caller's headers with every request.
type keysTransport struct{ h http.Header }

func (k keysTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for name, v := range k.h {
		r.Header[name] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A tool call over HTTP is an API request that carries the caller's
// credential headers and nothing else of theirs; an API error is a tool
// error with its code, message and hint; long values come as previews
// with their size.
func TestToolsCallTheAPIWithTheCallersKeys(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		var q struct {
			SQL     string `json:"sql"`
			MaxRows int    `json:"max_rows"`
		}
		json.NewDecoder(r.Body).Decode(&q)
		w.Header().Set("Content-Type", "application/json")
		if q.SQL == "DROP TABLE runs" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"code": "query_rejected", "message": "query rejected: only SELECT", "request_id": "r1"}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"columns": []any{map[string]string{"name": "v", "type": "VARCHAR"}},
			"rows": [][]any{{strings.Repeat("x", 3000)}}, "row_count": 1, "truncated": q.MaxRows == 100})
	})
	s := New(Config{API: api, Version: "test", Credentials: []string{"X-Catalog-Access-Key", "X-Catalog-Secret-Key"}})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	keys := http.Header{"X-Catalog-Access-Key": {"pcak_a"}, "X-Catalog-Secret-Key": {"sk"}, "Cookie": {"session=1"}}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: keysTransport{keys}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	out, errText := testutil.CallTool(t, cs, "query", map[string]any{"sql": "SELECT v"})
	if errText != "" {
		t.Fatal(errText)
	}
	v := out["rows"].([]any)[0].([]any)[0].(string)
	if !strings.HasPrefix(v, strings.Repeat("x", defaultMaxChars)+"…") || !strings.HasSuffix(v, "[3000 bytes in all]") || out["values_cut"] != float64(1) {
		t.Errorf("a 3,000-character value came as %.40q… (values_cut %v), want a preview with its size", v, out["values_cut"])
	}
	if out["truncated"] != true {
		t.Errorf("the default 100-row cap was not asked for: %v", out)
	}
	_, errText = testutil.CallTool(t, cs, "query", map[string]any{"sql": "DROP TABLE runs"})
	if errText != "query_rejected: query rejected: only SELECT ("+hints["query_rejected"]+")" {
		t.Errorf("tool error %q", errText)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d API requests, want 2", len(seen))
	}
	for _, h := range seen {
		if h.Get("X-Catalog-Access-Key") != "pcak_a" || h.Get("X-Catalog-Secret-Key") != "sk" || h.Get("Cookie") != "" {
			t.Errorf("API request headers %v: want the keys and no cookie", h)
		}
	}
}
