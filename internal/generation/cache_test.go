package generation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestRestartReadsTheNormalizationCache: a server started again over
// unchanged files serves them from the normalization cache, and a refresh
// after one file changed normalizes only that one (the others are carried
// over in the process).
func TestRestartReadsTheNormalizationCache(t *testing.T) {
	root, cacheDir := t.TempDir(), t.TempDir()
	for i := 0; i < 4; i++ {
		line := fmt.Sprintf(`{"session_id":"s%d","messages":[{"role":"user","content":"task %d"},{"role":"assistant","content":"done"}]}`+"\n", i, i)
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("c%d.jsonl", i)), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // younger files are not kept (docs/storage.md, "Normalization cache")
	opts := catalog.DefaultOptions()
	opts.CacheDir = cacheDir
	count := func(rt *Runtime) int64 {
		t.Helper()
		g, release := current(t, rt)
		defer release()
		rows, err := g.Stream(context.Background(), "SELECT count(*) FROM steps", engine.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		rows.Next()
		return rows.Values()[0].(int64)
	}
	start := func() *Runtime {
		t.Helper()
		rt, err := Start(context.Background(), Config{Mounts: []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, Positional: true,
			Options: opts, Limits: engine.LimitsFrom(opts), Parser: parser})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	first := start()
	if n := count(first); n != 8 {
		t.Fatalf("%d steps, want 8", n)
	}
	first.Close()
	cold := testutil.CacheStats(t, cacheDir)
	if cold.Stored == 0 || cold.Misses != 4 {
		t.Fatalf("the first server kept nothing: %+v", cold)
	}
	second := start()
	defer second.Close()
	if n := count(second); n != 8 {
		t.Fatalf("after the restart %d steps, want 8", n)
	}
	os.WriteFile(filepath.Join(root, "c0.jsonl"), []byte(`{"session_id":"s0","messages":[{"role":"user","content":"a longer task"},{"role":"assistant","content":"x"},{"role":"user","content":"more"}]}`+"\n"), 0o644)
	if _, err := second.Refresh(context.Background(), "test", false); err != nil {
		t.Fatal(err)
	}
	if n := count(second); n != 9 {
		t.Fatalf("after the refresh %d steps, want 9", n)
	}
	second.Close() // writes the counters
	if st := testutil.CacheStats(t, cacheDir); st.Hits-cold.Hits != 4 || st.Misses-cold.Misses != 1 {
		t.Fatalf("restart and refresh: %d hits and %d misses, want 4 hits (the restart) and 1 miss (the changed file); stats %+v",
			st.Hits-cold.Hits, st.Misses-cold.Misses, st)
	}
}
