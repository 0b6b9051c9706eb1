package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/server"
)

// A file deleted or rewritten after the Snapshot pinned it is a changed
// source: 409 source_changed naming its _file_, never a 500 or a server
// path; and no answer, information_schema included, shows a server path.
func TestChangedSourcesAndNoServerPaths(t *testing.T) {
	// Every relation resolved: its view reads files of the Snapshot.
	root := dataset(t, 2)
	ts := start(t, true, positional(root))
	tmp := os.TempDir()
	for _, sql := range []string{
		"SELECT v.* FROM information_schema.views v, runs r",
		"SELECT v.* FROM information_schema.views v, steps s",
		"SELECT * FROM information_schema.tables",
		"SELECT * FROM information_schema.columns",
		"EXPLAIN SELECT * FROM steps",
	} {
		r := ts.query(sql, nil).ok(t)
		if strings.Contains(string(r.body), tmp+"/") || strings.Contains(string(r.body), root) {
			t.Errorf("%s shows a server path: %.600s", sql, r.body)
		}
	}

	root = dataset(t, 4)
	ts = start(t, true, positional(root))
	ts.query("SELECT count(*) FROM runs WHERE _file_ = 'd1/f001.jsonl'", nil).ok(t)
	if err := os.Remove(filepath.Join(root, "d0", "f000.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d0", "f002.jsonl"), []byte(chat("zz", "alpha", 9)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ sql, file string }{
		{"SELECT count(*) FROM steps WHERE _file_ = 'd0/f000.jsonl'", "d0/f000.jsonl"},
		{"SELECT count(*) FROM runs", "d0/f000.jsonl"},
		{"SELECT count(*) FROM tool_calls WHERE _file_ = 'd0/f002.jsonl'", "d0/f002.jsonl"},
	} {
		r := ts.query(tt.sql, nil)
		msg, _ := r.json["message"].(string)
		if r.status != 409 || r.json["code"] != server.CodeSourceChanged || !strings.Contains(msg, tt.file) {
			t.Errorf("%s: %d %s, want 409 source_changed naming %s", tt.sql, r.status, r.body, tt.file)
		}
		if strings.Contains(string(r.body), root) {
			t.Errorf("%s: the answer shows the server path %s: %s", tt.sql, root, r.body)
		}
	}
	// A file that does not parse: its error names it by its _file_.
	writeFiles(t, root, map[string]string{"bad/broken.json": `{"session_id":"x","messages":[{"role":`})
	ts = start(t, true, positional(root))
	if r := ts.query("SELECT count(*) FROM runs WHERE _file_ = 'bad/broken.json'", nil); r.status < 400 || strings.Contains(string(r.body), root) || !strings.Contains(string(r.body), "bad/broken.json") {
		t.Errorf("a parse error: %d %s", r.status, r.body)
	}
	if r := ts.get("/api/storyline?file=bad/broken.json&session_id=x"); strings.Contains(string(r.body), root) {
		t.Errorf("a parse error: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/api/storyline?file=d0/f000.jsonl&session_id=s0a", "/api/source?file=d0/f000.jsonl"} {
		if r := ts.get(path); strings.Contains(string(r.body), root) || r.status == 500 {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
}
