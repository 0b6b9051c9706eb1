package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestServeReportsSkippedFiles: `serve` over a trajectory, a config file
// and a damaged trajectory. By default a query over the damaged file fails
// naming --exclude; with --skip-unreadable it answers from the good file
// with one summarized warning per reason, and the catalog then lists both
// skipped files with their reasons.
func TestServeReportsSkippedFiles(t *testing.T) {
	root := t.TempDir()
	good := testutil.Sample(t, "atif/nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json")
	os.WriteFile(filepath.Join(root, "good.json"), good, 0o644)
	os.WriteFile(filepath.Join(root, "broken.json"), good[:len(good)/2], 0o644)
	os.WriteFile(filepath.Join(root, "package.json"), []byte(`{"name": "x", "version": "1.0.0"}`), 0o644)
	query := func(s *served) (int, map[string]any) {
		res, err := http.Post(s.url+"/api/query", "application/json", strings.NewReader(`{"sql": "SELECT count(*) AS n FROM runs"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, body
	}

	status, body := query(startServe(t, root, "--listen", "127.0.0.1:0"))
	if msg, _ := body["message"].(string); status == 200 || !strings.Contains(msg, "--exclude 'broken.json'") {
		t.Fatalf("default: %d %v", status, body)
	}

	s := startServe(t, root, "--listen", "127.0.0.1:0", "--skip-unreadable")
	status, body = query(s)
	warnings, _ := json.Marshal(body["warnings"])
	if status != 200 || !strings.Contains(string(warnings), "1 file is not a trajectory: package.json") ||
		!strings.Contains(string(warnings), "1 file could not be read and skipped (--skip-unreadable): broken.json") {
		t.Fatalf("--skip-unreadable: %d %v", status, body)
	}
	res, err := http.Get(s.url + "/api/catalog")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var cat struct {
		Datasets []struct {
			Skipped []struct {
				File   string `json:"_file_"`
				Reason string `json:"reason"`
				Detail string `json:"detail"`
			} `json:"skipped"`
			SkippedTotal int `json:"skipped_total"`
		} `json:"datasets"`
	}
	if err := json.NewDecoder(res.Body).Decode(&cat); err != nil {
		t.Fatal(err)
	}
	d := cat.Datasets[0]
	if d.SkippedTotal != 2 || len(d.Skipped) != 2 ||
		d.Skipped[0].File != "broken.json" || d.Skipped[0].Reason != "unreadable" || !strings.Contains(d.Skipped[0].Detail, "broken.json") ||
		d.Skipped[1].File != "package.json" || d.Skipped[1].Reason != "not a trajectory" || !strings.Contains(d.Skipped[1].Detail, "unrecognized format") {
		t.Fatalf("catalog skipped: %+v", d)
	}
}
