package cli_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestImportShardsUnionIsTheImport runs four `import --shard I/4` processes
// at once, each into its own store, and checks what a batch scheduler
// relies on: the shards hold disjoint inputs, and together exactly the rows
// of one plain import of the same SRCs.
func TestImportShardsUnionIsTheImport(t *testing.T) {
	samples := testutil.SamplesDir(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if _, stderr, code := pc(t, "import", samples, "--to", plain, "--errors", "report"); code != 0 {
		t.Fatal(stderr)
	}
	const n = 4
	stores := make([]string, n)
	var wg sync.WaitGroup
	errs := make([]string, n)
	for i := range n {
		stores[i] = filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		wg.Go(func() {
			if _, stderr, code := pc(t, "import", samples, "--to", stores[i], "--errors", "report", "--shard", fmt.Sprintf("%d/%d", i, n)); code != 0 {
				errs[i] = stderr
			}
		})
	}
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Fatalf("shard %d: %s", i, e)
		}
	}

	_, whole := storeCounts(t, plain)
	owner := map[string]int{}
	nonEmpty := 0
	for i, s := range stores {
		_, g := storeCounts(t, s)
		if len(g.Manifest.Sources) > 0 {
			nonEmpty++
		}
		for _, src := range g.Manifest.Sources {
			if j, dup := owner[src.File]; dup {
				t.Fatalf("%s imported by shards %d and %d", src.File, j, i)
			}
			owner[src.File] = i
		}
	}
	if len(owner) != len(whole.Manifest.Sources) || nonEmpty < 2 {
		t.Fatalf("shards imported %d inputs (%d shards non-empty), the plain import %d", len(owner), nonEmpty, len(whole.Manifest.Sources))
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, rel := range storyline.Tables {
		var parts []string
		for _, s := range stores {
			_, g := storeCounts(t, s)
			parts = append(parts, "'"+g.Path(rel)+"'")
		}
		union := "(" + withInputIDs(rel, "read_parquet(["+strings.Join(parts, ",")+"])") + ")"
		one := "(" + withInputIDs(rel, "read_parquet('"+whole.Path(rel)+"')") + ")"
		var rows, diff int64
		q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s),
			(SELECT count(*) FROM ((SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM %[2]s) UNION ALL (SELECT * FROM %[2]s EXCEPT ALL SELECT * FROM %[1]s)))`, union, one)
		if err := db.QueryRow(q).Scan(&rows, &diff); err != nil {
			t.Fatal(err)
		}
		if rows != whole.Manifest.Tables[rel].Rows || diff != 0 {
			t.Errorf("%s: the shards hold %d rows, %d differing from the plain import's %d", rel, rows, diff, whole.Manifest.Tables[rel].Rows)
		}
	}

	if _, stderr, code := pc(t, "import", samples, "--to", filepath.Join(dir, "bad"), "--shard", "4/4"); code == 0 || !strings.Contains(stderr, "invalid shard") {
		t.Fatalf("--shard 4/4: exit %d, %s", code, stderr)
	}
}

// withInputIDs selects the rows of a store's relation (from) with the
// session ids their inputs gave: a store qualifies an id that two of its
// inputs share as <id>@<_file_>, so which ids are qualified depends on the
// inputs one import held (a shard's, or all of them), while the rows are
// otherwise the same. The rare <id>@<_file_>#n is not undone.
func withInputIDs(rel, from string) string {
	const unq = "replace(%s, '@' || _file_, '')"
	id := fmt.Sprintf(unq, "session_id")
	if rel != model.RelRuns {
		return "SELECT * REPLACE (" + id + " AS session_id) FROM " + from
	}
	return "SELECT * REPLACE (" + id + " AS session_id, " +
		fmt.Sprintf(unq, "parent_session_id") + " AS parent_session_id, " +
		fmt.Sprintf(unq, "subagent_refs") + " AS subagent_refs, " +
		"CASE WHEN original_session_id = " + id + " THEN NULL ELSE original_session_id END AS original_session_id) FROM " + from
}
