package storyline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store"
)

// appendFile publishes, on top of the current generation, every row of it
// except file's plus sls (what `import --mode append` does).
func appendFile(ctx context.Context, s *Store, file string, sls ...*model.Storyline) error {
	w, base, err := s.NewGenerationOnCurrent(ctx)
	if err != nil {
		return err
	}
	if base != nil {
		if err := w.CopyFrom(ctx, base, func(f, _ string) bool { return f != file }); err != nil {
			w.Abort()
			return err
		}
	}
	for _, sl := range sls {
		if err := w.Add(sl); err != nil {
			w.Abort()
			return err
		}
	}
	_, err = w.Commit(ctx, nil)
	return err
}

// runsByFile counts the runs rows of the current generation per _file_.
func runsByFile(t *testing.T, s *Store) map[string]int {
	t.Helper()
	g, err := s.Pin()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	err = eachRow(context.Background(), g.Path(model.RelRuns), func(r *model.Run) error {
		out[r.File]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Writers that build on the current generation run one after the other:
// every concurrent append's rows are in the final generation.
func TestConcurrentAppendsLoseNothing(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "new-store") // created by the first writer to publish
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	want := map[string]int{}
	for i := range writers {
		file, n := fmt.Sprintf("w%d.json", i), 1+i%3
		want[file] = n
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Prepare(dir) // a Store of its own, as another process has
			if err != nil {
				errs <- err
				return
			}
			var sls []*model.Storyline
			for j := range n {
				sls = append(sls, genStoryline(file, fmt.Sprintf("%s-%d", file, j), 2))
			}
			errs <- appendFile(ctx, s, file, sls...)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := runsByFile(t, s); !maps.Equal(got, want) {
		t.Fatalf("runs per file %v, want %v", got, want)
	}
	if g, _ := s.Pin(); g.Number != writers-1 {
		t.Fatalf("generation %d, want %d: one per writer", g.Number, writers-1)
	}
}

// A Writer that copied rows of a generation another writer has replaced
// since must not publish: its rows would drop the other's.
func TestStaleCopyLosesRace(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	base := writeGeneration(t, s, genStoryline("a.json", "a", 1))
	w, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CopyFrom(ctx, base, func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	w.Add(genStoryline("loser.json", "l", 1))
	winner := writeGeneration(t, s, genStoryline("a.json", "a", 1), genStoryline("winner.json", "w", 1))
	if _, err := w.Commit(ctx, nil); !errors.Is(err, store.ErrLostRace) || !strings.Contains(err.Error(), "another writer published first") {
		t.Fatalf("commit on a replaced base: %v, want ErrLostRace", err)
	}
	if g, _ := s.Pin(); g.Number != winner.Number {
		t.Fatalf("current is generation %d, want the winner's %d", g.Number, winner.Number)
	}
	if got := runsByFile(t, s); !maps.Equal(got, map[string]int{"a.json": 1, "winner.json": 1}) {
		t.Fatalf("runs per file after the lost race: %v", got)
	}
	if tmp := tempDirs(t, s.Dir()); len(tmp) != 0 {
		t.Fatalf("the loser left %v", tmp)
	}
}

func tempDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A second writer on the current generation waits for the first, and
// stops waiting when its context is done, leaving nothing behind.
func TestWaitForWriterStopsOnCancel(t *testing.T) {
	s := newStore(t)
	first, _, err := s.NewGenerationOnCurrent(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Abort()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := s.NewGenerationOnCurrent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second writer: %v, want the context's error", err)
	}
	if _, err := s.GC(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gc while a writer holds the lock: %v, want the context's error", err)
	}
	if tmp := tempDirs(t, s.Dir()); !slices.Equal(tmp, []string{filepath.Base(first.tmp)}) {
		t.Fatalf("temp dirs %v, want only the first writer's", tmp)
	}
}

// Once the context is done, Commit publishes nothing: the exact old
// generation stays current and nothing new is left in the store.
func TestCancelledCommitPublishesNothing(t *testing.T) {
	s := newStore(t)
	old := writeGeneration(t, s, genStoryline("a.json", "a", 2))
	w, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	w.Add(genStoryline("b.json", "b", 3))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Commit(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled commit: %v", err)
	}
	g, err := s.Pin()
	if err != nil || g.Number != old.Number || !maps.Equal(manifestCounts(g), manifestCounts(old)) {
		t.Fatalf("current after a cancelled commit: %v %v", g, err)
	}
	entries, _ := os.ReadDir(s.Dir())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{CurrentFile, lockFile, "gen-000000", "gen-000001"}; !slices.Equal(names, want) {
		t.Fatalf("store holds %v, want %v", names, want)
	}
}

// A writer that publishes nothing leaves the destination as it found it:
// a directory it created is removed, a directory that existed keeps
// exactly its files (a failed import into ~/Documents must not delete it).
func TestFailedFirstWriterLeavesDirAsFound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) // nil: the directory does not exist
		want  []string         // entries left; nil: the directory is gone
	}{
		{name: "created"},
		{name: "empty", setup: func(dir string) { os.Mkdir(dir, 0o755) }, want: []string{}},
		{name: "user files", setup: func(dir string) {
			os.Mkdir(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o644)
		}, want: []string{"notes.txt"}},
	} {
		for _, how := range []string{"abort", "failed commit", "abort on current"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				parent := t.TempDir()
				dir := filepath.Join(parent, "dest")
				if tc.setup != nil {
					tc.setup(dir)
				} else {
					dir = filepath.Join(dir, "a", "b") // created with its parents
				}
				s, err := Prepare(dir)
				if err != nil {
					t.Fatal(err)
				}
				switch how {
				case "abort":
					w, err := s.NewGeneration()
					if err != nil {
						t.Fatal(err)
					}
					w.Add(genStoryline("a.json", "a", 1))
					w.Abort()
				case "failed commit":
					w, err := s.NewGeneration()
					if err != nil {
						t.Fatal(err)
					}
					w.Add(genStoryline("a.json", "a", 1))
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					if _, err := w.Commit(ctx, nil); err == nil {
						t.Fatal("cancelled commit succeeded")
					}
				case "abort on current":
					w, _, err := s.NewGenerationOnCurrent(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					w.Abort()
				}
				if tc.want == nil {
					if entries, _ := os.ReadDir(parent); len(entries) != 0 {
						t.Fatalf("the directories the writer created are still there: %v", entries)
					}
					return
				}
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				got := []string{}
				for _, e := range entries {
					got = append(got, e.Name())
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("directory holds %v, want %v", got, tc.want)
				}
			})
		}
	}
}

// TestRunInPartsIsOneRun: a run delivered in parts (model.Storyline.More)
// is one runs row, from its last part, with every part's steps and tool
// calls — in a generation and in a query's scratch files.
func TestRunInPartsIsOneRun(t *testing.T) {
	sl := genStoryline("f.jsonl", "s", 10)
	parts := []*model.Storyline{
		{Run: model.Run{SessionID: "s"}, Steps: sl.Steps[:4], ToolCalls: sl.ToolCalls[:1], More: true},
		{Run: model.Run{SessionID: "s"}, Steps: sl.Steps[4:7], More: true},
		{Run: sl.Run, Steps: sl.Steps[7:], ToolCalls: sl.ToolCalls[1:]},
	}
	want := counts{model.RelRuns: 1, model.RelSteps: 10, model.RelToolCalls: 5}
	ctx := context.Background()
	db := openDuck(t)
	check := func(sink string, path func(rel string) string) {
		t.Helper()
		for rel, n := range want {
			var got int64
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM read_parquet(?)", path(rel)).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != n {
				t.Errorf("%s: %d %s rows, want %d", sink, got, rel, n)
			}
		}
		var steps int64
		if err := db.QueryRowContext(ctx, "SELECT step_count FROM read_parquet(?)", path(model.RelRuns)).Scan(&steps); err != nil || steps != 10 {
			t.Errorf("%s: the run row has step_count %d (%v), want the last part's 10", sink, steps, err)
		}
	}

	g := writeGeneration(t, newStore(t), parts...)
	check("generation", g.Path)

	sc := writeScratch(t, 1, nil, parts...)
	check("scratch", sc.Path)
}

// TestScratchCutsSmallerGroups: a query's scratch files buffer at most
// tempGroupBytes of rows before writing a row group (split between the
// scratch sets written at once), where a published generation keeps
// groupBytes (fewer, larger groups for its lookups).
func TestScratchCutsSmallerGroups(t *testing.T) {
	sl := genStoryline("f.jsonl", "s", 12)
	text := strings.Repeat("x", 1<<20) // 12 steps of 1 MiB: 12 MiB of rows
	for i := range sl.Steps {
		sl.Steps[i].MessageValue = model.Str(text)
	}
	db := openDuck(t)
	groups := func(path string) int {
		t.Helper()
		var n int
		if err := db.QueryRow("SELECT count(DISTINCT row_group_id) FROM parquet_metadata(?)", path).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var paths []string // of one scratch set alone, then of one of four written at once
	for _, concurrent := range []int{1, 4} {
		sc := writeScratch(t, concurrent, []string{model.RelSteps}, sl)
		paths = append(paths, sc.Path(model.RelSteps))
	}
	g := writeGeneration(t, newStore(t), sl)
	if got, want := groups(paths[0]), 12/(tempGroupBytes>>20); got < want {
		t.Errorf("scratch steps in %d row groups, want at least %d (at most %d bytes each)", got, want, tempGroupBytes)
	}
	if got, want := groups(paths[1]), 12/(tempGroupBytes/4>>20); got < want {
		t.Errorf("steps of one of four scratch sets in %d row groups, want at least %d (at most %d bytes each)", got, want, tempGroupBytes/4)
	}
	if got := groups(g.Path(model.RelSteps)); got != 1 {
		t.Errorf("published steps in %d row groups, want 1 (up to %d bytes)", got, groupBytes)
	}
}
