package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// A Snapshot built Reusing the previous one carries every unchanged
// source's normalized rows over (no second normalization) and normalizes
// only what changed; closing the previous Snapshot leaves it intact, and
// rows of the changed file's old version never show.
func TestRefreshReusesUnchangedSources(t *testing.T) {
	root := fixture(t, 8)
	mounts := []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}
	ctx := context.Background()
	old, err := catalog.Build(ctx, mounts, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	e := New(old, parser, testConfig(true))
	const q = "SELECT _file_, count(*), sum(tool_call_count) FROM runs GROUP BY 1 ORDER BY 1"
	mustQuery(t, e, q)
	if old.Resolves() != 8 {
		t.Fatalf("first Snapshot resolved %d sources, want 8", old.Resolves())
	}
	// One file changes: its two conversations become one with 5 calls.
	changed := filepath.Join(root, "b", "f003.jsonl")
	if err := os.WriteFile(changed, []byte(chatLine("new", 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	next, err := catalog.Build(ctx, mounts, catalog.DefaultOptions(), catalog.Reusing(old))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if next.Reused() != 7 {
		t.Fatalf("carried %d sources over, want the 7 unchanged", next.Reused())
	}
	e.Close()
	old.Close() // the new Snapshot must not depend on the old one's files
	e2 := New(next, parser, testConfig(true))
	defer e2.Close()
	got := fmt.Sprint(mustQuery(t, e2, q).Rows)
	if next.Resolves() != 1 {
		t.Fatalf("the refreshed Snapshot normalized %d sources, want only the changed one", next.Resolves())
	}
	_, full := open(t, root, catalog.DefaultOptions())
	if want := fmt.Sprint(mustQuery(t, full, q).Rows); got != want {
		t.Fatalf("after refresh:\n%s\nwant (a Snapshot built from scratch):\n%s", got, want)
	}
	// A query reading only unchanged sources of the shared batch, and one
	// reading only the changed file.
	for _, q := range []string{
		"SELECT count(*) FROM steps WHERE _file_ IN ('a/f000.jsonl', 'b/f001.jsonl')",
		"SELECT count(*), max(tool_call_count) FROM runs WHERE _file_ = 'b/f003.jsonl'",
	} {
		if a, b := fmt.Sprint(mustQuery(t, e2, q).Rows), fmt.Sprint(mustQuery(t, full, q).Rows); a != b {
			t.Errorf("%s: %s after refresh, %s from scratch", q, a, b)
		}
	}
}
