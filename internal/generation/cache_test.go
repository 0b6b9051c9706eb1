package generation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestByteFlipsInTheCacheNeverReachAServedSnapshot: a server's Snapshots
// read private copies of the cache's files. Bytes flipped in place in every
// cache file while two servers serve — the one that stored the entries and
// one that read them — change neither server's answers; a Snapshot built
// after the flips rejects the altered entries and normalizes again.
func TestByteFlipsInTheCacheNeverReachAServedSnapshot(t *testing.T) {
	root, cacheDir := t.TempDir(), t.TempDir()
	for i := 0; i < 6; i++ {
		var msgs []string
		for j := 0; j < 40; j++ {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"task %d.%d %s"},{"role":"assistant","content":"done %d"}`, i, j, strings.Repeat("x", i*j), j))
		}
		line := fmt.Sprintf(`{"session_id":"s%d","messages":[%s]}`+"\n", i, strings.Join(msgs, ","))
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("c%d.jsonl", i)), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // younger files are not kept
	opts := catalog.DefaultOptions()
	opts.CacheDir = cacheDir
	const sums = "SELECT count(*), sum(length(message_value)), sum(step_index), string_agg(session_id, ',' ORDER BY session_id, step_index) FROM steps"
	answer := func(rt *Runtime) string {
		t.Helper()
		g, release := current(t, rt)
		defer release()
		rows, err := g.Stream(context.Background(), sums, engine.QueryOptions{})
		if err != nil {
			return "error: " + err.Error()
		}
		defer rows.Close()
		rows.Next()
		if err := rows.Err(); err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprint(rows.Values())
	}
	start := func() *Runtime {
		t.Helper()
		rt, err := Start(context.Background(), Config{Mounts: []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, Positional: true,
			Options: opts, Limits: engine.LimitsFrom(opts), Parser: parser})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rt.Close)
		return rt
	}
	storer := start()
	want := answer(storer)
	if strings.HasPrefix(want, "error") {
		t.Fatal(want)
	}
	reader := start()
	if got := answer(reader); got != want {
		t.Fatalf("from the cache: %s, want %s", got, want)
	}
	files, _ := filepath.Glob(filepath.Join(cacheDir, "*", "entries", "*", "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no cache files")
	}
	for _, f := range files {
		fh, err := os.OpenFile(f, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := fh.Stat()
		for off := int64(4); off < fi.Size()-8; off += 7 { // in place: the same inode
			b := make([]byte, 1)
			fh.ReadAt(b, off)
			b[0] ^= 0x20
			fh.WriteAt(b, off)
		}
		fh.Close()
	}
	for name, rt := range map[string]*Runtime{"the server that stored the entries": storer, "the server that read them": reader} {
		if got := answer(rt); got != want {
			t.Errorf("%s after the flips: %s, want %s", name, got, want)
		}
	}
	after := start()
	if got := answer(after); got != want {
		t.Errorf("a new server after the flips: %s, want %s", got, want)
	}
	for _, rt := range []*Runtime{storer, reader, after} {
		rt.Close() // writes the counters
	}
	if st := testutil.CacheStats(t, cacheDir); st.Hits < 6 || st.Rejected == 0 {
		t.Errorf("want the second server's 6 hits and the third's rejections: %+v", st)
	}
}
