package catalog_test

import (
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestRemoteCacheFollowsTheObjectVersion: on every backend, a second process
// over unchanged objects is served from the cache without reading them,
// and an object overwritten with the same size (a new version, generation
// or ETag) is read and normalized again, never served from the cache.
func TestRemoteCacheFollowsTheObjectVersion(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b, uri, cfg, log := openBackend(t, be)
			put(t, b, "ds/a.jsonl", chat("one"))
			put(t, b, "ds/b.jsonl", chat("bee"))
			dir := t.TempDir()
			run := func() string {
				t.Helper()
				snap := build(t, catalog.DatasetMount{Alias: "dataset", URI: uri, Config: cfg}, cacheOptions(dir))
				defer snap.Close()
				rows, err := queryRows(t, snap, `SELECT _file_, message_value FROM steps ORDER BY ALL`)
				if err != nil {
					t.Fatal(err)
				}
				return rows
			}
			cold := run()
			reads := log.count("ds/b.jsonl")
			if warm := run(); warm != cold {
				t.Fatalf("warm %s, cold %s", warm, cold)
			}
			if n := log.count("ds/b.jsonl") - reads; n != 0 {
				t.Fatalf("a process served from the cache made %d requests for b.jsonl", n)
			}
			put(t, b, "ds/a.jsonl", chat("two")) // same size
			got := run()
			if strings.Contains(got, "task one") || !strings.Contains(got, "task two") || !strings.Contains(got, "task bee") {
				t.Fatalf("after the overwrite: %s", got)
			}
			if st := testutil.CacheStats(t, dir); st.Hits != 2+1 || st.Stored != 2+1 {
				t.Fatalf("stats %+v: want b hit twice, a once, and a stored again", st)
			}
		})
	}
}
