package storyline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

var errInjected = errors.New("injected")

// TestCrashDuringPublish fails each failure point of a publication in
// turn and checks two states: the store as the failing writer left it
// (error path, cleanup ran) and a copy taken at the failure point (the
// process died there, nothing cleaned up). In both, a fresh Open+Pin sees
// either the old generation or the new one, complete, and the old one is
// still intact. The points are collected by name in a dry run, because the
// three tables are written concurrently and their order varies.
func TestCrashDuringPublish(t *testing.T) {
	oldSL := []*model.Storyline{genStoryline("a.json", "old-1", 4), genStoryline("a.json", "old-2", 2)}
	newSL := []*model.Storyline{genStoryline("b.json", "new-1", 5), genStoryline("b.json", "new-2", 3), genStoryline("b.json", "new-3", 1)}
	oldWant, newWant := counts{}, counts{}
	for _, sl := range oldSL {
		oldWant.add(sl)
	}
	for _, sl := range newSL {
		newWant.add(sl)
	}
	publish := func(s *Store) error {
		w, err := s.NewGeneration()
		if err != nil {
			return err
		}
		for _, sl := range newSL {
			if err := w.Add(sl); err != nil {
				return err
			}
		}
		_, err = w.Commit(context.Background(), nil)
		return err
	}
	points := failurePoints(t, func(s *Store) { writeGeneration(t, s, oldSL...) }, publish)
	t.Logf("%d failure points: %v", len(points), points)
	for _, want := range []string{
		"runs.parquet@write", "steps.parquet@sync", "tool_calls.parquet@sync",
		"manifest.json@create", "manifest.json@rename", "manifest.json@dirsync",
		"gen-000002@rename", "gen-000002@dirsync",
		"CURRENT@create", "CURRENT@write", "CURRENT@sync", "CURRENT@rename", "CURRENT@dirsync",
	} {
		if !slices.Contains(points, want) {
			t.Errorf("failure point %s missing from %v", want, points)
		}
	}
	db := openDuck(t)
	for _, point := range points {
		s := newStore(t)
		old := writeGeneration(t, s, oldSL...)
		crashDir := filepath.Join(t.TempDir(), "crash")
		var once sync.Once
		restore := fsx.SetFailHook(func(path string, at fsx.FailPoint) error {
			if pointName(path, at) != point {
				return nil
			}
			fail := false
			once.Do(func() {
				fail = true
				if out, err := exec.Command("cp", "-a", s.Dir(), crashDir).CombinedOutput(); err != nil {
					t.Errorf("snapshot: %v %s", err, out)
				}
			})
			if fail {
				return errInjected
			}
			return nil
		})
		err := publish(s)
		restore()
		if !errors.Is(err, errInjected) {
			t.Fatalf("%s: commit error %v, want the injected failure", point, err)
		}
		for _, dir := range []string{s.Dir(), crashDir} {
			checkOldOrNew(t, db, dir, old.Number, oldWant, newWant, point)
		}
		// The store stays writable after a failed publication.
		if g := writeGeneration(t, s, newSL...); !maps.Equal(manifestCounts(g), newWant) {
			t.Fatalf("publish after failure: %v", manifestCounts(g))
		}
	}
}

// failurePoints runs op on a store prepared by setup and returns the
// distinct failure points it passes, sorted.
func failurePoints(t *testing.T, setup func(*Store), op func(*Store) error) []string {
	t.Helper()
	s := newStore(t)
	setup(s)
	var mu sync.Mutex
	seen := map[string]bool{}
	restore := fsx.SetFailHook(func(path string, at fsx.FailPoint) error {
		mu.Lock()
		seen[pointName(path, at)] = true
		mu.Unlock()
		return nil
	})
	defer restore()
	if err := op(s); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(seen))
}

func pointName(path string, at fsx.FailPoint) string {
	return fmt.Sprintf("%s@%s", filepath.Base(path), at)
}

// checkOldOrNew opens dir afresh and checks that its current generation is
// the old or the new one, complete (manifest counts match the wanted rows
// and DuckDB reads the same counts), and that the old one is still intact.
func checkOldOrNew(t *testing.T, db *sql.DB, dir string, oldNum int64, oldWant, newWant counts, point string) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("%s: %s: %v", point, dir, err)
	}
	g, err := s.Pin()
	if err != nil {
		t.Fatalf("%s: pin %s: %v", point, dir, err)
	}
	want := newWant
	if g.Number == oldNum {
		want = oldWant
	}
	got, err := duckCounts(context.Background(), db, g)
	if err != nil {
		t.Fatalf("%s: read %s: %v", point, g.Dir, err)
	}
	if !maps.Equal(manifestCounts(g), want) || !maps.Equal(got, want) {
		t.Fatalf("%s: generation %d: manifest %v, duckdb %v, want %v", point, g.Number, manifestCounts(g), got, want)
	}
	prev, err := s.generation(oldNum)
	if err != nil || !maps.Equal(manifestCounts(prev), oldWant) {
		t.Fatalf("%s: old generation lost: %v", point, err)
	}
}
