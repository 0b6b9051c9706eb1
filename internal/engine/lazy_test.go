package engine

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// writtenRelations lists the Parquet files (by base name) that resolution
// wrote under the Snapshot's temp directory.
func writtenRelations(t *testing.T, snap *catalog.Snapshot) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(snap.TempDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".parquet" {
			seen[filepath.Base(path)] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// A query normalizes a file for the relations it reads and writes only
// those: a count over tool_calls encodes no steps. Later queries over other
// relations get them (normalized once more, for those relations), and every
// answer equals that of a Snapshot whose files were resolved for all three
// relations at once, for one source and for a batch.
func TestRelationLazyResolutionGivesTheSameResults(t *testing.T) {
	queries := []string{
		"SELECT count(*), count(DISTINCT function_name), sum(length(arguments)) FROM tool_calls",
		"SELECT source, count(*), sum(length(message_value)) FROM steps GROUP BY 1 ORDER BY 1",
		"SELECT _file_, session_id, step_count, tool_call_count FROM runs ORDER BY 1, 2",
		"SELECT r._file_, count(*) FROM runs r JOIN tool_calls c ON r._file_ = c._file_ AND r.session_id = c.session_id GROUP BY 1 ORDER BY 1",
	}
	for _, files := range []int{1, 6} {
		t.Run(fmt.Sprintf("%d files", files), func(t *testing.T) {
			root := fixture(t, files)
			lazy, le := open(t, root, catalog.DefaultOptions())
			mustQuery(t, le, queries[0])
			if got := writtenRelations(t, lazy); fmt.Sprint(got) != "[tool_calls.parquet]" {
				t.Fatalf("count(*) over tool_calls wrote %v, want only tool_calls", got)
			}
			if n := lazy.Resolves(); n != int64(files) {
				t.Fatalf("%d resolutions for the tool_calls query, want %d", n, files)
			}
			_, full := open(t, root, catalog.DefaultOptions())
			mustQuery(t, full, "SELECT count(*) FROM runs r JOIN steps s USING (_file_, session_id) JOIN tool_calls c USING (_file_, session_id)")
			for _, q := range queries {
				if a, b := fmt.Sprint(mustQuery(t, le, q).Rows), fmt.Sprint(mustQuery(t, full, q).Rows); a != b {
					t.Errorf("%s:\nrelation by relation: %s\nall at once:          %s", q, a, b)
				}
			}
			// tool_calls once, then steps and runs once each.
			if n := lazy.Resolves(); n != int64(3*files) {
				t.Fatalf("%d resolutions, want %d (each relation of each file once)", n, 3*files)
			}
		})
	}
}
