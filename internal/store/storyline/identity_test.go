package storyline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// storedIDs reads every relation's (import_file or _file_, session_id)
// pairs of a generation, sorted, through DuckDB.
func storedIDs(t *testing.T, g *Generation) map[string][]string {
	t.Helper()
	db := openDuck(t)
	out := map[string][]string{}
	for _, rel := range Tables {
		scanRows(t, db, "SELECT DISTINCT _file_ || ' ' || session_id FROM read_parquet(?) ORDER BY 1", []any{g.Path(rel)}, func(scan func(...any)) {
			var s string
			scan(&s)
			out[rel] = append(out[rel], s)
		})
	}
	return out
}

func TestRepeatedSessionIDsAreQualified(t *testing.T) {
	// "s@b.json" is a Storyline of its own in c.json: qualifying b.json's
	// repeated "s" must not take it.
	parent := genStoryline("a.json", "s", 2)
	child := genStoryline("a.json", "s/sub", 1)
	child.Run.ParentSessionID = model.Str("s")
	parent.Run.SubagentRefs = model.Str(`[{"embedded":true,"child_session_id":"s/sub"}]`)
	inputs := []*model.Storyline{
		parent, child,
		genStoryline("b.json", "s", 3),
		genStoryline("c.json", "s@b.json", 1),
		genStoryline("c.json", "unique", 1),
	}
	// Any order of the inputs gives the same generation.
	var first []byte
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}} {
		s := newStore(t)
		var sls []*model.Storyline
		for _, i := range order {
			sl := *inputs[i]
			sls = append(sls, &sl)
		}
		g := writeGeneration(t, s, sls...)
		want := []RenamedSession{
			{File: "a.json", SessionID: "s", StoredAs: "s@a.json"},
			{File: "b.json", SessionID: "s", StoredAs: "s@b.json#2"},
		}
		if !slices.Equal(g.Manifest.RenamedSessions, want) || g.Manifest.FormatVersion != FormatVersion {
			t.Fatalf("renamed_sessions = %+v, format %d; want %+v", g.Manifest.RenamedSessions, g.Manifest.FormatVersion, want)
		}
		ids := storedIDs(t, g)
		wantRuns := []string{"a.json s/sub", "a.json s@a.json", "b.json s@b.json#2", "c.json s@b.json", "c.json unique"}
		if !slices.Equal(ids[model.RelRuns], wantRuns) {
			t.Fatalf("runs ids = %q, want %q", ids[model.RelRuns], wantRuns)
		}
		wantSteps := []string{"a.json s/sub", "a.json s@a.json", "b.json s@b.json#2", "c.json s@b.json", "c.json unique"}
		if !slices.Equal(ids[model.RelSteps], wantSteps) {
			t.Fatalf("steps ids = %q, want %q", ids[model.RelSteps], wantSteps)
		}
		db := openDuck(t)
		var orig, parentID, refs, importFile string
		if err := db.QueryRow(`SELECT original_session_id, (SELECT parent_session_id FROM read_parquet(?1) WHERE session_id = 's/sub'),
			subagent_refs, import_file FROM read_parquet(?1) WHERE session_id = 's@a.json'`, g.Path(model.RelRuns)).Scan(&orig, &parentID, &refs, &importFile); err != nil {
			t.Fatal(err)
		}
		if orig != "s" || parentID != "s@a.json" || refs != `[{"embedded":true,"child_session_id":"s/sub"}]` || importFile != "a.json" {
			t.Fatalf("renamed run: original %q parent %q refs %s import_file %q", orig, parentID, refs, importFile)
		}
		data, err := os.ReadFile(g.Path(model.RelSteps))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
		} else if !slices.Equal(first, data) {
			t.Fatal("the order of the inputs changed the steps file")
		}
	}
}

// TestAppendRequalifies copies a generation whose ids were qualified: an id
// that no longer repeats is stored as its input gave it again, and one that
// now repeats is qualified, as if the rows had been imported at once.
func TestAppendRequalifies(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	g := writeGeneration(t, s, genStoryline("a.json", "s", 1), genStoryline("b.json", "s", 1), genStoryline("b.json", "t", 1))
	w, base, err := s.NewGenerationOnCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if base.Number != g.Number {
		t.Fatalf("base %d, want %d", base.Number, g.Number)
	}
	// b.json is replaced by a version without "s", c.json brings "t".
	if err := w.CopyFrom(ctx, base, func(file, _ string) bool { return file != "b.json" }); err != nil {
		t.Fatal(err)
	}
	for _, sl := range []*model.Storyline{genStoryline("b.json", "t", 1), genStoryline("c.json", "t", 2)} {
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	g2, err := w.Commit(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.json s", "b.json t@b.json", "c.json t@c.json"}
	if got := storedIDs(t, g2)[model.RelRuns]; !slices.Equal(got, want) {
		t.Fatalf("runs = %q, want %q", got, want)
	}
	db := openDuck(t)
	var orig *string
	if err := db.QueryRow(`SELECT original_session_id FROM read_parquet(?) WHERE session_id = 's'`, g2.Path(model.RelRuns)).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	if orig != nil {
		t.Fatalf("original_session_id of a restored id = %q, want NULL", *orig)
	}
}

// legacyGeneration publishes rows without qualifying repeated ids and a
// manifest without format_version: what builds before version 2 wrote.
func legacyGeneration(t *testing.T, s *Store, sls ...*model.Storyline) {
	t.Helper()
	w, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range sls {
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
		w.AddSource(SourceInfo{File: sl.Run.File, Format: "atif", Storylines: 1})
	}
	w.ids = newIdentity() // nothing repeats, as far as Commit knows
	g, err := w.Commit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(g.Dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = regexp.MustCompile(`\s*"format_version": \d+,`).ReplaceAll(data, nil)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLegacyRepeatedSessionsRefusedThenUpgraded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	legacyGeneration(t, s, genStoryline("a.json", "s", 1), genStoryline("b.json", "s", 2))
	g, err := s.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if g.Manifest.FormatVersion != 0 {
		t.Fatalf("format_version %d, want absent", g.Manifest.FormatVersion)
	}
	err = g.CheckSessions(ctx)
	var rep *RepeatedSessionsError
	if !errors.As(err, &rep) || !regexp.MustCompile(`a\.json and b\.json\) with session_id "s".*pchronicle store upgrade`).MatchString(err.Error()) {
		t.Fatalf("CheckSessions = %v, want a RepeatedSessionsError naming both inputs and the upgrade", err)
	}
	up, err := s.Upgrade(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if up == nil || up.Number != g.Number+1 || len(up.Manifest.Sources) != 2 {
		t.Fatalf("upgrade = %+v", up)
	}
	if err := up.CheckSessions(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := storedIDs(t, up)[model.RelSteps], []string{"a.json s@a.json", "b.json s@b.json"}; !slices.Equal(got, want) {
		t.Fatalf("steps = %q, want %q", got, want)
	}
	if again, err := s.Upgrade(ctx); err != nil || again != nil {
		t.Fatalf("second upgrade = %v, %v; want nothing to do", again, err)
	}

	// A legacy generation whose ids do not repeat is read as it is.
	ok := newStore(t)
	legacyGeneration(t, ok, genStoryline("a.json", "s", 1), genStoryline("b.json", "t", 1))
	if g, err := ok.Pin(); err != nil || g.CheckSessions(ctx) != nil {
		t.Fatalf("legacy store without repeated ids: %v", err)
	}
}
