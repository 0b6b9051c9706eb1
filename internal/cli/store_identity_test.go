package cli_test

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// identitySQL is what a user runs to count Storylines and follow them
// across relations: the documented joins on (_file_, session_id) and the
// distinct identities of every relation.
const identitySQL = `SELECT
  (SELECT count(*) FROM runs) AS runs,
  (SELECT count(DISTINCT (_file_, session_id)) FROM runs) AS run_ids,
  (SELECT count(DISTINCT (_file_, session_id)) FROM steps) AS step_ids,
  (SELECT count(DISTINCT (_file_, session_id)) FROM tool_calls) AS call_ids,
  (SELECT count(*) FROM runs r JOIN steps s ON r._file_ = s._file_ AND r.session_id = s.session_id) AS runs_steps,
  (SELECT count(*) FROM runs r JOIN tool_calls c ON r._file_ = c._file_ AND r.session_id = c.session_id) AS runs_calls,
  (SELECT count(*) FROM steps s JOIN tool_calls c ON s._file_ = c._file_ AND s.session_id = c.session_id AND s.step_id = c.step_id) AS steps_calls,
  (SELECT count(*) FROM runs p JOIN runs c ON p._file_ = c._file_ AND c.parent_session_id = p.session_id) AS subagents`

// importFilesSQL lists the inputs that gave Storylines: _file_ over the
// files, import_file over their store.
const (
	filesOfFilesSQL = `SELECT _file_ AS input, count(*) AS storylines FROM runs GROUP BY 1 ORDER BY 1`
	filesOfStoreSQL = `SELECT import_file AS input, count(*) AS storylines FROM runs GROUP BY 1 ORDER BY 1`
)

func queryCSV(t *testing.T, dataset, sql string) string {
	t.Helper()
	out, stderr, code := pc(t, "query", dataset, sql, "--format", "csv")
	if code != 0 {
		t.Fatalf("query %s exit %d: %s", dataset, code, stderr)
	}
	return out
}

// checkStoreAnswersAsFiles imports dir into a new store and compares the
// identity queries, the inputs and find's coordinates on both.
func checkStoreAnswersAsFiles(t *testing.T, dir string) {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	if _, stderr, code := pc(t, "import", dir, "--to", store, "--errors", "report"); code != 0 {
		t.Fatalf("import exit %d: %s", code, stderr)
	}
	if files, st := queryCSV(t, dir, identitySQL), queryCSV(t, store, identitySQL); files != st {
		t.Errorf("identity queries differ\nfiles:\n%s\nstore:\n%s", files, st)
	}
	if files, st := queryCSV(t, dir, filesOfFilesSQL), queryCSV(t, store, filesOfStoreSQL); files != st {
		t.Errorf("inputs differ\nfiles (_file_):\n%s\nstore (import_file):\n%s", files, st)
	}
	runs := strings.Count(queryCSV(t, dir, "SELECT session_id FROM runs"), "\n") - 1
	checkFindUnique(t, store, runs)
}

// checkFindUnique checks that find lists n Storylines with n distinct
// coordinates (dataset, _file_, session_id).
func checkFindUnique(t *testing.T, dataset string, n int) {
	t.Helper()
	out, stderr, code := pc(t, "find", dataset, "--format", "csv")
	if code != 0 {
		t.Fatalf("find exit %d: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[3]string]bool{}
	for _, r := range rows[1:] {
		k := [3]string{r[0], r[1], r[2]}
		if seen[k] {
			t.Errorf("find prints %v twice", k)
		}
		seen[k] = true
	}
	if len(rows)-1 != n {
		t.Errorf("find prints %d Storylines, the files hold %d", len(rows)-1, n)
	}
}

// TestStoreAnswersAsItsFiles: on every folder of the samples, a store
// answers the documented joins, distinct identities and find exactly as
// the files it was imported from.
func TestStoreAnswersAsItsFiles(t *testing.T) {
	samples := testutil.SamplesDir(t)
	entries, err := os.ReadDir(samples)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			checkStoreAnswersAsFiles(t, filepath.Join(samples, e.Name()))
		})
	}
}

// TestStoreQualifiesRepeatedSessionIDs imports a folder whose inputs share
// session ids — three copies of one ATIF document, and a document whose own
// id is what the qualification of one of them would be — and checks the
// stored ids, that the store answers as the files, and that appending
// an input that repeats an id qualifies it there too.
func TestStoreQualifiesRepeatedSessionIDs(t *testing.T) {
	doc := string(testutil.Sample(t, "atif/harbor-golden/terminus_2_linear-history/trajectory.json"))
	const id = "NORMALIZED_SESSION_ID"
	if !strings.Contains(doc, `"`+id+`"`) {
		t.Fatalf("the sample no longer has session_id %s", id)
	}
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"a/run.json", "b/run.json", "c/run.json"} {
		write(rel, doc)
	}
	write("d/run.json", strings.Replace(doc, `"`+id+`"`, `"`+id+`@b/run.json"`, 1))
	checkStoreAnswersAsFiles(t, dir)

	store := filepath.Join(t.TempDir(), "store")
	out, stderr, code := pc(t, "import", dir, "--to", store)
	if code != 0 || !strings.Contains(out, "3 Storyline(s) share a session_id with another input's") {
		t.Fatalf("import exit %d: %s%s", code, out, stderr)
	}
	got := queryCSV(t, store, `SELECT session_id, original_session_id, import_file FROM runs WHERE parent_session_id IS NULL ORDER BY import_file`)
	want := "session_id,original_session_id,import_file\n" +
		id + "@a/run.json," + id + ",a/run.json\n" +
		id + "@b/run.json#2," + id + ",b/run.json\n" +
		id + "@c/run.json," + id + ",c/run.json\n" +
		id + "@b/run.json,,d/run.json\n"
	if got != want {
		t.Fatalf("stored ids:\n%s\nwant:\n%s", got, want)
	}

	// Appending a fifth copy qualifies its id as well; the store still
	// answers as the five files do.
	write("e/run.json", doc)
	if _, stderr, code := pc(t, "import", filepath.Join(dir, "e", "run.json"), "--to", store, "--mode", "append"); code != 0 {
		t.Fatalf("append exit %d: %s", code, stderr)
	}
	if n := queryCSV(t, store, `SELECT count(*) AS n FROM runs WHERE session_id = '`+id+`@run.json'`); n != "n\n1\n" {
		t.Fatalf("appended copy: %q", n)
	}
	if files, st := queryCSV(t, dir, identitySQL), queryCSV(t, store, identitySQL); files != st {
		t.Errorf("after the append, identity queries differ\nfiles:\n%s\nstore:\n%s", files, st)
	}
}

// TestStoreWrittenBeforeUniqueSessionIDs: testdata/store-v1-repeated-ids
// was written by a build before session ids were made unique (two inputs
// with session_id "shared-session"). Queries refuse it with a message
// naming both inputs and the fix; store upgrade makes it answer like its
// files.
func TestStoreWrittenBeforeUniqueSessionIDs(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	if err := os.CopyFS(store, os.DirFS("testdata/store-v1-repeated-ids")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := pc(t, "query", store, "SELECT count(*) FROM runs")
	if code == 0 || !strings.Contains(stderr, `two inputs (a/trajectory.json and b/trajectory.json) with session_id "shared-session"`) ||
		!strings.Contains(stderr, "pchronicle store upgrade") {
		t.Fatalf("query of an old store with repeated ids: exit %d, %s", code, stderr)
	}
	out, stderr, code := pc(t, "store", "upgrade", store)
	if code != 0 || !strings.Contains(out, "gen-000001") || !strings.Contains(out, "2 session id(s) qualified") {
		t.Fatalf("store upgrade: exit %d, %s%s", code, out, stderr)
	}
	got := queryCSV(t, store, identitySQL+`, (SELECT string_agg(session_id || ' ' || import_file, ';' ORDER BY 1) FROM runs) AS ids`)
	want := "runs,run_ids,step_ids,call_ids,runs_steps,runs_calls,steps_calls,subagents,ids\n" +
		"2,2,2,2,4,2,2,0,shared-session@a/trajectory.json a/trajectory.json;shared-session@b/trajectory.json b/trajectory.json\n"
	if got != want {
		t.Fatalf("after upgrade:\n%s\nwant:\n%s", got, want)
	}
	if out, _, code := pc(t, "store", "upgrade", store); code != 0 || !strings.Contains(out, "already in the current format") {
		t.Fatalf("second upgrade: exit %d, %s", code, out)
	}
}

// TestImportRefusesAFolderThatIsNotAStore: --to naming the user's own
// folder of trajectories must not turn it into a store.
func TestImportRefusesAFolderThatIsNotAStore(t *testing.T) {
	src := filepath.Join(testutil.SamplesDir(t), "atif", "harbor-golden", "terminus_2_linear-history")
	dest := t.TempDir()
	for _, name := range []string{"mine.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dest, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code := pc(t, "import", src, "--to", dest)
	if code == 0 || !strings.Contains(stderr, "--to "+dest+" is not an empty directory or a Storyline store (it holds mine.json, notes.txt)") {
		t.Fatalf("import into a folder of files: exit %d, %s", code, stderr)
	}
	entries, err := os.ReadDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("the refused import left %d entries in the folder, want its 2 files", len(entries))
	}
	file := filepath.Join(dest, "mine.json")
	if _, stderr, code := pc(t, "import", src, "--to", file); code == 0 || !strings.Contains(stderr, "--to "+file+" is a file") {
		t.Fatalf("import into a file: exit %d, %s", code, stderr)
	}
	// An empty folder and an existing store are fine.
	empty := t.TempDir()
	for range 2 {
		if _, stderr, code := pc(t, "import", src, "--to", empty); code != 0 {
			t.Fatalf("import into an empty folder or a store: exit %d, %s", code, stderr)
		}
	}
}
