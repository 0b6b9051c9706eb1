package cli_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pchronicle/pchronicle/internal/iceberg"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// copyTree copies the sample directories into dst, so the test can change
// an input.
func copyTree(t *testing.T, dst string, srcs ...string) {
	t.Helper()
	for _, src := range srcs {
		base := filepath.Base(src)
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out := filepath.Join(dst, base, rel)
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			return os.WriteFile(out, data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// cell formats one value the same way from DuckDB and from Arrow:
// timestamps as microseconds since the epoch.
func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		return fmt.Sprint(v.UnixMicro())
	default:
		return fmt.Sprintf("%#v", v)
	}
}

// storeRows returns the rows of a plain import's relation, sorted, with the
// session ids their inputs gave, as an Iceberg table keeps them.
func storeRows(t *testing.T, dir, rel string) []string {
	t.Helper()
	_, g := storeCounts(t, dir)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(withInputIDs(rel, "read_parquet(?)"), g.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = cell(v)
		}
		out = append(out, strings.Join(cells, "|"))
	}
	slices.Sort(out)
	return out
}

// icebergRows reads a table with iceberg-go's own scanner (not ours) at
// its current snapshot and returns its rows, sorted, and the number of
// delete files its scan tasks carry.
func icebergRows(t *testing.T, set *iceberg.Set, rel string) (rows []string, deletes int) {
	t.Helper()
	ctx := context.Background()
	tbl, err := set.Table(ctx, rel)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		deletes += len(task.DeleteFiles)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := range int(rec.NumRows()) {
			cells := make([]string, rec.NumCols())
			for c := range cells {
				col := rec.Column(c)
				if col.IsNull(r) {
					cells[c] = "NULL"
					continue
				}
				switch col := col.(type) {
				case *array.String:
					cells[c] = cell(col.Value(r))
				case *array.LargeString:
					cells[c] = cell(col.Value(r))
				case *array.Int64:
					cells[c] = cell(col.Value(r))
				case *array.Float64:
					cells[c] = cell(col.Value(r))
				case *array.Boolean:
					cells[c] = cell(col.Value(r))
				case *array.Timestamp:
					unit := col.DataType().(*arrow.TimestampType).Unit
					cells[c] = cell(col.Value(r).ToTime(unit))
				default:
					t.Fatalf("%s column %d: unexpected Arrow type %s", rel, c, col.DataType())
				}
			}
			rows = append(rows, strings.Join(cells, "|"))
		}
	}
	slices.Sort(rows)
	return rows, deletes
}

func snapshotIDs(t *testing.T, set *iceberg.Set) map[string]int64 {
	t.Helper()
	ids := map[string]int64{}
	for _, rel := range storyline.Tables {
		tbl, err := set.Table(context.Background(), rel)
		if err != nil {
			t.Fatal(err)
		}
		if s := tbl.CurrentSnapshot(); s != nil {
			ids[rel] = s.SnapshotID
		}
	}
	return ids
}

// TestImportIcebergShardsReimportAndChange is the Iceberg target end to
// end: four `import --shard I/4` processes commit into one table set at
// once; iceberg-go's scanner then reads exactly the rows of a plain import
// of the same inputs. A re-import commits nothing, and a changed input
// replaces exactly its rows, by rewriting files (no delete files).
func TestImportIcebergShardsReimportAndChange(t *testing.T) {
	samples := testutil.SamplesDir(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	copyTree(t, src, filepath.Join(samples, "atif"), filepath.Join(samples, "openai"), filepath.Join(samples, "sweagent"), filepath.Join(samples, "openhands"))
	cat := "iceberg:" + filepath.Join(dir, "lake", "catalog.db")

	target := iceberg.Target{Catalog: strings.TrimPrefix(cat, "iceberg:")}
	check := func(stage string) {
		t.Helper()
		checkIcebergEqualsPlain(t, target, src, filepath.Join(dir, "plain-"+stage), stage)
	}

	importShards(t, 4, "import", src, "--to", cat)
	check("shards")
	pinned := checkMountEqualsFiles(t, cat, src)

	set, err := iceberg.Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	before := snapshotIDs(t, set)
	out, stderr, code := pc(t, "import", src, "--to", cat)
	if code != 0 || !strings.Contains(out, "nothing to import") {
		t.Fatalf("re-import: exit %d\n%s%s", code, out, stderr)
	}
	if after := snapshotIDs(t, set); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("re-import committed: snapshots %v, then %v", before, after)
	}

	// --mode replace would drop the other shards' rows: refused.
	if _, stderr, code := pc(t, "import", src, "--to", cat, "--mode", "replace"); code == 0 || !strings.Contains(stderr, "--mode replace") {
		t.Fatalf("--mode replace into Iceberg: exit %d, %s", code, stderr)
	}

	// Change one input: it takes another trajectory's content.
	changed := filepath.Join(src, "atif", "harbor-golden", "misc", "openhands_hello-world.trajectory.json")
	other, err := os.ReadFile(filepath.Join(src, "atif", "harbor-golden", "terminus_2_linear-history", "trajectory.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(changed, other, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = pc(t, "import", src, "--to", cat)
	if code != 0 || !strings.Contains(out, "imported 1 file(s)") {
		t.Fatalf("import after a change: exit %d\n%s%s", code, out, stderr)
	}
	check("changed")
	if again := checkMountEqualsFiles(t, cat, src); again == pinned {
		t.Fatalf("the mount still pins %s after a commit", pinned)
	}
}

// mountQueries are compared between an Iceberg mount and the same inputs
// mounted as files; _file_ is the one column that differs (a store's rows
// carry the store's path, "."), so none of them selects it.
var mountQueries = []string{
	"SELECT count(*), count(DISTINCT session_id), sum(step_index) FROM %[1]s.steps",
	"SELECT session_id, count(*) AS calls, count(DISTINCT function_name) FROM %[1]s.tool_calls GROUP BY ALL ORDER BY ALL",
	"SELECT source, count(*), min(timestamp), max(timestamp) FROM %[1]s.steps GROUP BY ALL ORDER BY ALL",
}

// checkMountEqualsFiles runs mountQueries with `pchronicle query` over the
// Iceberg table set mounted as a Dataset and over the input files, wanting
// the same output; it checks the join rule and _file_ pruning on the mount
// and returns the mount's pinned sources row.
func checkMountEqualsFiles(t *testing.T, cat, src string) string {
	t.Helper()
	query := func(mount, q string) string {
		t.Helper()
		out, stderr, code := pc(t, "query", "--mount", "m="+mount, fmt.Sprintf(q, "m"), "--format", "csv")
		if code != 0 {
			t.Fatalf("%s over %s: %s", q, mount, stderr)
		}
		return out
	}
	for _, q := range mountQueries {
		ice, files := query(cat, q), query(src, q)
		if ice != files || strings.Count(ice, "\n") < 2 {
			t.Errorf("%s\nIceberg mount:\n%s\nfiles:\n%s", q, ice, files)
		}
	}
	if _, stderr, code := pc(t, "query", "--mount", "lake="+cat, "SELECT count(*) FROM lake.runs r JOIN lake.steps s USING (session_id)"); code == 0 || !strings.Contains(stderr, "needs an equality on _file_") {
		t.Fatalf("the join rule on the Iceberg mount: exit %d, %s", code, stderr)
	}
	out, stderr, code := pc(t, "query", "--mount", "lake="+cat, "--explain", "SELECT count(*) FROM lake.steps WHERE _file_ = 'elsewhere'")
	if code != 0 || !strings.Contains(stderr+out, "1 skipped by _file_ pruning") {
		t.Fatalf("_file_ pruning on the Iceberg mount: exit %d\n%s%s", code, out, stderr)
	}
	ref, stderr, code := pc(t, "query", "--mount", "lake="+cat, "SELECT revision_kind, snapshot_ref FROM lake.sources", "--format", "csv")
	if code != 0 || !strings.Contains(ref, "iceberg_snapshots,runs=") {
		t.Fatalf("sources of the Iceberg mount: exit %d\n%s%s", code, ref, stderr)
	}
	return ref
}

// importShards runs `args --shard I/n` for every I at once and fails on
// any error.
func importShards(t *testing.T, n int, args ...string) {
	t.Helper()
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]string, n)
	for i := range n {
		wg.Go(func() {
			out, stderr, code := pc(t, append(slices.Clone(args), "--shard", fmt.Sprintf("%d/%d", i, n))...)
			outs[i] = out
			if code != 0 {
				errs[i] = stderr
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != "" {
			t.Fatalf("shard %d: %s", i, errs[i])
		}
		t.Logf("shard %d: %s", i, outs[i])
	}
}

// checkIcebergEqualsPlain imports src plainly into plain and compares each
// table of the set, read by iceberg-go's scanner, with it row by row.
func checkIcebergEqualsPlain(t *testing.T, target iceberg.Target, src, plain, stage string) {
	t.Helper()
	if _, stderr, code := pc(t, "import", src, "--to", plain); code != 0 {
		t.Fatalf("%s: plain import: %s", stage, stderr)
	}
	set, err := iceberg.Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, rel := range storyline.Tables {
		want := storeRows(t, plain, rel)
		got, deletes := icebergRows(t, set, rel)
		if deletes != 0 {
			t.Errorf("%s: %s has %d delete files; replacements must rewrite files", stage, rel, deletes)
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %s: the Iceberg table has %d rows, the plain import %d", stage, rel, len(got), len(want))
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Errorf("first difference:\niceberg: %s\nplain:   %s", got[i], want[i])
					break
				}
			}
		}
	}
}

// TestImportIcebergOnS3 runs the shards against an s3:// warehouse on the
// S3 test server, its endpoint and keys given by a pin as for any Dataset.
func TestImportIcebergOnS3(t *testing.T) {
	srv := testservers.StartS3(t)
	bucket := srv.NewS3Bucket(t, false)
	samples := testutil.SamplesDir(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	copyTree(t, src, filepath.Join(samples, "atif"), filepath.Join(samples, "openai"))
	cfg := srv.S3Config()
	conf := filepath.Join(dir, "config.toml")
	pin := fmt.Sprintf("[pins.lake]\nuri = %q\nendpoint = %q\nregion = %q\npath_style = true\naccess_key = %q\nsecret_key = %q\n",
		"s3://"+bucket+"/lake", cfg.Endpoint, cfg.Region, cfg.AccessKey, cfg.SecretKey.Reveal())
	if err := os.WriteFile(conf, []byte(pin), 0o600); err != nil {
		t.Fatal(err)
	}
	catPath := filepath.Join(dir, "catalog.db")
	args := []string{"import", src, "--to", "iceberg:" + catPath, "-c", conf, "--warehouse", "@lake"}
	importShards(t, 4, args...)
	target := iceberg.Target{Catalog: catPath, Warehouse: "s3://" + bucket + "/lake", Store: cfg}
	checkIcebergEqualsPlain(t, target, src, filepath.Join(dir, "plain"), "s3")

	out, stderr, code := pc(t, args...)
	if code != 0 || !strings.Contains(out, "nothing to import") {
		t.Fatalf("re-import: exit %d\n%s%s", code, out, stderr)
	}
	set, err := iceberg.Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	tbl, err := set.Table(context.Background(), "runs")
	if err != nil {
		t.Fatal(err)
	}
	if loc := tbl.Location(); !strings.HasPrefix(loc, "s3://"+bucket+"/lake/") {
		t.Fatalf("table location %s is not in the S3 warehouse", loc)
	}
}
