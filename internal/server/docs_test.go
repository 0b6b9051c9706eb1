package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/server"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// apiExample is one request of docs/http-api.md with its documented
// status and answer.
type apiExample struct {
	method, path, body string
	status             int
	answer             map[string]any // nil when the doc shows none (or not JSON)
	line               int
}

var fence = regexp.MustCompile("(?s)```http\n(.*?)```(?:\n```json\n(.*?)```)?")

func apiExamples(t *testing.T, doc string) []apiExample {
	t.Helper()
	var out []apiExample
	for _, m := range fence.FindAllStringSubmatchIndex(doc, -1) {
		block := doc[m[2]:m[3]]
		ex := apiExample{line: strings.Count(doc[:m[0]], "\n") + 1}
		lines := strings.Split(strings.TrimSpace(block), "\n")
		first := strings.Fields(lines[0])
		if len(first) != 2 {
			t.Fatalf("docs/http-api.md:%d: want METHOD PATH, got %q", ex.line, lines[0])
		}
		ex.method, ex.path = first[0], first[1]
		for _, l := range lines[1:] {
			if s, ok := strings.CutPrefix(l, "→ "); ok {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					t.Fatalf("docs/http-api.md:%d: bad status line %q", ex.line, l)
				}
				ex.status = n
				continue
			}
			ex.body += l
		}
		if ex.status == 0 {
			t.Fatalf("docs/http-api.md:%d: the example states no status (→ NNN)", ex.line)
		}
		if m[4] >= 0 {
			if err := json.Unmarshal([]byte(doc[m[4]:m[5]]), &ex.answer); err != nil {
				t.Fatalf("docs/http-api.md:%d: the example answer is not JSON: %v", ex.line, err)
			}
		}
		out = append(out, ex)
	}
	return out
}

// TestHTTPAPIExamples sends every request of docs/http-api.md to a real
// server over the bundled examples: each must get its documented status,
// and its answer every top-level field the doc shows (and the same error
// code). Every route must have an example.
func TestHTTPAPIExamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "http-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	ts := start(t, true, positional(filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")))
	examples := apiExamples(t, doc)
	for _, ex := range examples {
		var body any
		if ex.body != "" {
			if err := json.Unmarshal([]byte(ex.body), &body); err != nil {
				t.Fatalf("docs/http-api.md:%d: the request body is not JSON: %v", ex.line, err)
			}
		}
		r := ts.do(ex.method, ex.path, body)
		if r.status != ex.status {
			t.Errorf("docs/http-api.md:%d: %s %s: status %d, documented %d: %s", ex.line, ex.method, ex.path, r.status, ex.status, r.body)
			continue
		}
		for k, v := range ex.answer {
			got, ok := r.json[k]
			if !ok {
				t.Errorf("docs/http-api.md:%d: %s %s: the answer has no %q: %s", ex.line, ex.method, ex.path, k, r.body)
			}
			if k == "code" && got != v {
				t.Errorf("docs/http-api.md:%d: %s %s: code %v, documented %v", ex.line, ex.method, ex.path, got, v)
			}
		}
	}
	srv := server.New(server.Config{})
	for _, route := range srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		if !strings.Contains(doc, "### `"+method+" "+path+"`") {
			t.Errorf("route %s has no section in docs/http-api.md", route)
		}
		found := false
		for _, ex := range examples {
			p, _, _ := strings.Cut(ex.path, "?")
			found = found || (ex.method == method && p == path)
		}
		if !found {
			t.Errorf("route %s has no example in docs/http-api.md", route)
		}
	}
}
