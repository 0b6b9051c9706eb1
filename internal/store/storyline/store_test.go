package storyline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

func TestCreateIsEmptyGenerationZero(t *testing.T) {
	s := newStore(t)
	if !IsStore(s.Dir()) {
		t.Fatal("IsStore = false after Create")
	}
	g, err := s.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if g.Number != 0 || !maps.Equal(manifestCounts(g), counts{"runs": 0, "steps": 0, "tool_calls": 0}) {
		t.Fatalf("generation %d counts %v, want empty generation 0", g.Number, manifestCounts(g))
	}
	if err := Create(s.Dir()); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create on a store: %v, want ErrExist", err)
	}
	c, err := duckCounts(context.Background(), openDuck(t), g)
	if err != nil || !maps.Equal(c, manifestCounts(g)) {
		t.Fatalf("duckdb counts %v, %v", c, err)
	}
}

func TestOpenNotStore(t *testing.T) {
	if _, err := Open(t.TempDir()); !errors.Is(err, ErrNotStore) {
		t.Fatalf("Open(empty dir) = %v, want ErrNotStore", err)
	}
}

// TestRoundTripTypes checks that DuckDB reads every column back with the
// type model.Schemas declares, and the values survive.
func TestRoundTripTypes(t *testing.T) {
	s := newStore(t)
	want := counts{}
	var sls []*model.Storyline
	for i := range 20 {
		sl := genStoryline(fmt.Sprintf("dir/f%d.json", i%3), fmt.Sprintf("s%03d", 19-i), i)
		want.add(sl)
		sls = append(sls, sl)
	}
	g := writeGeneration(t, s, sls...)
	if g.Number != 1 {
		t.Fatalf("generation %d, want 1", g.Number)
	}
	if got := manifestCounts(g); !maps.Equal(got, want) {
		t.Fatalf("manifest counts %v, want %v", got, want)
	}
	db := openDuck(t)
	for _, rel := range Tables {
		// Types and order as DuckDB reads them; nullability from the Parquet
		// schema (DESCRIBE reports every Parquet column as nullable).
		optional := map[string]bool{}
		scanRows(t, db, `SELECT name, coalesce(repetition_type = 'OPTIONAL', false) FROM parquet_schema(?)`, []any{g.Path(rel)}, func(scan func(...any)) {
			var name string
			var opt bool
			scan(&name, &opt)
			optional[name] = opt
		})
		var got []model.Column
		scanRows(t, db, `SELECT column_name, replace(column_type, 'TIMESTAMP WITH TIME ZONE', 'TIMESTAMPTZ') FROM (DESCRIBE SELECT * FROM read_parquet(?))`,
			[]any{g.Path(rel)}, func(scan func(...any)) {
				var c model.Column
				scan(&c.Name, &c.SQLType)
				c.Nullable = optional[c.Name]
				got = append(got, c)
			})
		var wantCols []model.Column
		for _, c := range model.Schemas[rel] {
			wantCols = append(wantCols, model.Column{Name: c.Name, SQLType: c.SQLType, Nullable: c.Nullable})
		}
		if !slices.Equal(got, wantCols) {
			t.Errorf("%s: DuckDB columns\n%v\nwant\n%v", rel, got, wantCols)
		}
	}
	var ts time.Time
	var msg string
	var prompt int64
	err := db.QueryRow(`SELECT timestamp, message_value, prompt_tokens FROM read_parquet(?) WHERE session_id = 's000' AND step_index = 18`,
		g.Path(model.RelSteps)).Scan(&ts, &msg, &prompt)
	if err != nil {
		t.Fatal(err)
	}
	if wantTS := time.Date(2025, 3, 1, 12, 0, 18, 0, time.UTC); !ts.Equal(wantTS) || msg != "message 18 of s000" || prompt != 28 {
		t.Fatalf("got %v %q %d", ts, msg, prompt)
	}
	var nulls int64
	if err := db.QueryRow(`SELECT count(*) FROM read_parquet(?) WHERE reasoning IS NULL`, g.Path(model.RelSteps)).Scan(&nulls); err != nil || nulls != want[model.RelSteps] {
		t.Fatalf("NULL reasoning rows %d (%v), want %d", nulls, err, want[model.RelSteps])
	}
}

// TestSortedAndSpilled writes with a tiny memory limit so the external sort
// merges many spilled runs, and checks global session order and counts.
func TestSortedAndSpilled(t *testing.T) {
	s := newStore(t)
	w, err := s.NewGeneration(MemoryLimit(16 << 10))
	if err != nil {
		t.Fatal(err)
	}
	want := counts{}
	for i := range 300 {
		sl := genStoryline("f.jsonl", fmt.Sprintf("s%05d", (i*7919)%300), 1+i%9)
		want.add(sl)
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(w.steps.spills); n < 10 {
		t.Fatalf("only %d spills; the test must exercise the merge", n)
	}
	g, err := w.Commit(context.Background(), &Lineage{EventsURI: "file:///x/events.lance", EventsRevision: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got := manifestCounts(g); !maps.Equal(got, want) {
		t.Fatalf("manifest counts %v, want %v", got, want)
	}
	if g.Manifest.Lineage == nil || g.Manifest.Lineage.EventsRevision != 7 {
		t.Fatalf("lineage %+v", g.Manifest.Lineage)
	}
	db := openDuck(t)
	for _, q := range []string{
		// rows out of (session_id, step_index) order
		`SELECT count(*) FROM (SELECT session_id, step_index, lag(session_id) OVER () ps, lag(step_index) OVER () pi FROM read_parquet(?))
		 WHERE ps > session_id OR (ps = session_id AND pi >= step_index)`,
	} {
		var bad int64
		if err := db.QueryRow(q, g.Path(model.RelSteps)).Scan(&bad); err != nil || bad != 0 {
			t.Fatalf("%d unordered rows (%v)", bad, err)
		}
	}
	if entries, _ := os.ReadDir(g.Dir); len(entries) != 4 {
		t.Fatalf("generation dir holds %d entries, want 3 tables + manifest", len(entries))
	}
}

func TestDeterministicBytes(t *testing.T) {
	var sums []string
	for range 2 {
		s := newStore(t)
		var sls []*model.Storyline
		for i := range 50 {
			sls = append(sls, genStoryline("a.json", fmt.Sprintf("s%d", (i*31)%50), i%5))
		}
		g := writeGeneration(t, s, sls...)
		var parts []string
		for _, rel := range Tables {
			b, err := os.ReadFile(g.Path(rel))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, fmt.Sprintf("%x", b))
		}
		sums = append(sums, strings.Join(parts, ","))
	}
	if sums[0] != sums[1] {
		t.Fatal("same rows gave different Parquet bytes")
	}
}

func TestCopyFrom(t *testing.T) {
	s := newStore(t)
	g1 := writeGeneration(t, s, genStoryline("a.json", "x", 3), genStoryline("b.json", "y", 4), genStoryline("b.json", "z", 2))
	w, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CopyFrom(context.Background(), g1, func(file, session string) bool { return session != "y" }); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(genStoryline("c.json", "q", 1)); err != nil {
		t.Fatal(err)
	}
	g2, err := w.Commit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := counts{"runs": 3, "steps": 3 + 2 + 1, "tool_calls": 1 + 1 + 0}
	if got := manifestCounts(g2); !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
}

func TestBadStores(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, s *Store, g *Generation)
		wantErr string
	}{
		{"corrupt manifest", func(t *testing.T, s *Store, g *Generation) {
			writeFile(t, filepath.Join(g.Dir, ManifestFile), `{"schema_version": 1, "generation": `)
		}, "manifest.json: corrupt manifest"},
		{"unknown manifest field", func(t *testing.T, s *Store, g *Generation) {
			b, _ := os.ReadFile(filepath.Join(g.Dir, ManifestFile))
			writeFile(t, filepath.Join(g.Dir, ManifestFile), strings.Replace(string(b), "{", `{"color": "red",`, 1))
		}, `unknown field "color"`},
		{"future schema", func(t *testing.T, s *Store, g *Generation) {
			b, _ := os.ReadFile(filepath.Join(g.Dir, ManifestFile))
			writeFile(t, filepath.Join(g.Dir, ManifestFile), strings.Replace(string(b), fmt.Sprintf(`"schema_version": %d`, model.SchemaVersion), `"schema_version": 99`, 1))
		}, "unsupported schema_version 99"},
		{"escaping file name", func(t *testing.T, s *Store, g *Generation) {
			b, _ := os.ReadFile(filepath.Join(g.Dir, ManifestFile))
			writeFile(t, filepath.Join(g.Dir, ManifestFile), strings.Replace(string(b), `"runs.parquet"`, `"../runs.parquet"`, 1))
		}, `invalid file name "../runs.parquet"`},
		{"CURRENT names missing generation", func(t *testing.T, s *Store, g *Generation) {
			writeFile(t, filepath.Join(s.Dir(), CurrentFile), "gen-000009\n")
		}, "CURRENT names gen-000009"},
		{"garbage CURRENT", func(t *testing.T, s *Store, g *Generation) {
			writeFile(t, filepath.Join(s.Dir(), CurrentFile), "../../etc")
		}, "CURRENT: corrupt"},
		{"truncated parquet", func(t *testing.T, s *Store, g *Generation) {
			if err := os.Truncate(g.Path(model.RelSteps), 100); err != nil {
				t.Fatal(err)
			}
		}, "steps.parquet: 100 bytes, manifest records"},
		{"missing table", func(t *testing.T, s *Store, g *Generation) {
			os.Remove(g.Path(model.RelToolCalls))
		}, "tool_calls.parquet: no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			g := writeGeneration(t, s, genStoryline("a.json", "x", 3))
			tt.damage(t, s, g)
			_, err := s.Pin()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Pin error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestCorruptParquetSameSize: a file damaged in place (size unchanged) is
// reported by the reader with the file's path.
func TestCorruptParquetSameSize(t *testing.T) {
	s := newStore(t)
	g := writeGeneration(t, s, genStoryline("a.json", "x", 3))
	path := g.Path(model.RelRuns)
	b, _ := os.ReadFile(path)
	copy(b[len(b)-8:], "garbage!")
	writeFile(t, path, string(b))
	w, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	err = w.CopyFrom(context.Background(), g, func(string, string) bool { return true })
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("CopyFrom error %v, want it to name %s", err, path)
	}
}

func TestGC(t *testing.T) {
	s := newStore(t)
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	for i := range 3 {
		writeGeneration(t, s, genStoryline("a.json", fmt.Sprint(i), 1))
	}
	// gen 0..2 superseded at `now` (publish stamps them); the temp dir of
	// a writer still at work and one abandoned by a killed writer (its lock
	// released with the process), both older than the retention.
	live, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	dead, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	dead.release()
	old := now.Add(-48 * time.Hour)
	os.Chtimes(live.tmp, old, old)
	os.Chtimes(dead.tmp, old, old)
	os.Chtimes(filepath.Join(s.Dir(), genName(0)), old, old)

	removed, err := s.GC(context.Background(), DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Base(dead.tmp), "gen-000000"}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	if _, err := os.Stat(live.tmp); err != nil {
		t.Fatalf("gc removed the temp dir of a writer at work: %v", err)
	}
	s.now = func() time.Time { return now.Add(25 * time.Hour) }
	removed, err = s.GC(context.Background(), DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gen-000001", "gen-000002"}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	g, err := s.Pin()
	if err != nil || g.Number != 3 {
		t.Fatalf("current after gc: %v %v", g, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func scanRows(t *testing.T, db *sql.DB, q string, args []any, fn func(scan func(...any))) {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		fn(func(dst ...any) {
			if err := rows.Scan(dst...); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPrepareCreatesOnFirstCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	s, err := Prepare(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pin(); !errors.Is(err, ErrNotStore) {
		t.Fatalf("Pin before the first commit: %v", err)
	}
	w, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if IsStore(dir) {
		t.Fatal("an aborted first generation made a store")
	}
	if g := writeGeneration(t, s, genStoryline("a.json", "x", 2)); g.Number != 0 || !IsStore(dir) {
		t.Fatalf("first commit published generation %d", g.Number)
	}
}

// TestDiscardSpilled: rows of a discarded _file_ disappear whether they are
// still buffered or already spilled.
func TestDiscardSpilled(t *testing.T) {
	s := newStore(t)
	w, err := s.NewGeneration(MemoryLimit(8 << 10))
	if err != nil {
		t.Fatal(err)
	}
	want := counts{}
	for i := range 60 {
		file := []string{"keep.json", "bad.json"}[i%2]
		sl := genStoryline(file, fmt.Sprintf("s%03d", i), 4)
		if file == "keep.json" {
			want.add(sl)
		}
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.steps.spills) == 0 {
		t.Fatal("nothing spilled")
	}
	w.Discard("bad.json")
	g, err := w.Commit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := manifestCounts(g); !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
}
