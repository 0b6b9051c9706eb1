package generation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/projection"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

var parser *query.Parser

func TestMain(m *testing.M) { testutil.MainWithParser(m, &parser) }

// session is one small canonical session of n agent messages.
func session(id string, from, n int64) []model.Event {
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var out []model.Event
	for i := from; i < from+n; i++ {
		kind, payload := "message", fmt.Sprintf(`{"source":"agent","content":"m%d"}`, i)
		if i == 0 {
			kind, payload = "run.start", `{"agent_name":"live"}`
		}
		out = append(out, model.Event{EventID: fmt.Sprintf("%s-%d", id, i), RunID: "run-" + id, SessionID: id, Seq: i,
			TS: ts.Add(time.Duration(i) * time.Second), Kind: kind, Payload: payload, StepID: model.Str(fmt.Sprint(i))})
	}
	return out
}

func appendEvents(t *testing.T, store string, evs []model.Event) {
	t.Helper()
	st, err := events.OpenOrCreate(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

func startRuntime(t *testing.T, root string, every, idle time.Duration) *Runtime {
	t.Helper()
	opts := catalog.DefaultOptions()
	rt, err := Start(context.Background(), Config{Mounts: []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, Positional: true,
		Options: opts, Limits: engine.LimitsFrom(opts), Parser: parser, Supervise: true, SuperviseEvery: every, IdleFor: idle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

func current(t *testing.T, rt *Runtime) (*Generation, func()) {
	t.Helper()
	g, release, err := rt.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	return g, release
}

// projected returns the revision the projection of store reflects (-1:
// none).
func projected(t *testing.T, store string) int64 {
	t.Helper()
	st, err := storyline.Open(projection.SiblingDir(store))
	if err != nil {
		return -1
	}
	g, err := st.Pin()
	if err != nil || g.Manifest.Lineage == nil {
		return -1
	}
	return g.Manifest.Lineage.EventsRevision
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// Start converges projections before the first Snapshot, so it selects
// them; an append only advances the store (nothing is rebuilt while events
// arrive); a single-trace read sees the in-flight events at once; after an
// idle tick the projection is brought up to date and a new generation
// selects it.
func TestProjectionSupervisor(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "live", events.DirName)
	appendEvents(t, store, session("s1", 0, 3))
	rt := startRuntime(t, root, 100*time.Millisecond, 200*time.Millisecond)
	if p := projected(t, store); p != 1 {
		t.Fatalf("projection at start reflects revision %d, want 1", p)
	}
	g, release := current(t, rt)
	first := g.Number()
	src, err := g.Snapshot().LookupSource(catalog.DefaultAlias, "live/events.lance")
	if err != nil || len(src.Projections) != 1 || !src.Projections[0].Selected {
		t.Fatalf("the first Snapshot selects the converged projection: %v %+v", err, src)
	}
	// A trace being written: the pinned generation has its 2 messages as
	// steps; a single-trace read sees the 4 appended ones without waiting.
	appendEvents(t, store, session("s1", 3, 4))
	key := engine.StorylineKey{Dataset: catalog.DefaultAlias, File: "live/events.lance", SessionID: "s1"}
	run, err := g.Storylines().Run(context.Background(), key)
	if err != nil || run.StepCount != 6 {
		t.Fatalf("the in-flight trace read from the latest manifest: %+v, %v; want 6 steps", run, err)
	}
	heads, err := g.Storylines().StepHeaders(context.Background(), key, 4, 10)
	if err != nil || len(heads) != 2 || heads[1].StepIndex != 5 {
		t.Fatalf("the latest steps page: %+v, %v", heads, err)
	}
	evs, err := g.Storylines().Events(context.Background(), key)
	if err != nil || len(evs) != 7 {
		t.Fatalf("latest events: %d, %v", len(evs), err)
	}
	// SQL stays pinned to the generation.
	rows, err := g.Stream(context.Background(), "SELECT sum(step_count) FROM runs", engine.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	if n := rows.Values()[0]; n != int64(2) {
		t.Fatalf("SQL of the pinned generation counts %v steps, want 2", n)
	}
	rows.Close()
	release()
	// Idle: the supervisor projects revision 2 and a new generation selects it.
	eventually(t, "the projection reflects revision 2", func() bool { return projected(t, store) == 2 })
	eventually(t, "a new generation is published", func() bool {
		g, release := current(t, rt)
		defer release()
		return g.Number() > first && g.Snapshot().Datasets[0].Sources[0].Projections[0].Fresh
	})
	g, release = current(t, rt)
	defer release()
	rows, err = g.Stream(context.Background(), "SELECT sum(step_count) FROM runs", engine.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	if n := rows.Values()[0]; n != int64(6) {
		t.Fatalf("after the projection: %v steps, want 6", n)
	}
	rows.Close()
	if st := rt.Status(); len(st.Projections) != 1 || st.Projections[0].Projected != 2 {
		t.Fatalf("status %+v", st.Projections)
	}
}

// While events keep arriving, the supervisor does not rebuild: a store is
// idle only once its revision stayed the same for the idle window (here
// longer than any one append takes, even on a loaded machine).
func TestSupervisorWaitsForAnIdleStore(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "live", events.DirName)
	appendEvents(t, store, session("s1", 0, 1))
	rt := startRuntime(t, root, 100*time.Millisecond, 3*time.Second)
	g, release := current(t, rt)
	first := g.Number()
	release()
	stop := time.Now().Add(2 * time.Second)
	for i := int64(1); time.Now().Before(stop); i++ {
		appendEvents(t, store, session("s1", i, 1)) // back to back
	}
	if p := projected(t, store); p != 1 {
		t.Fatalf("the projection was rebuilt while events arrived: revision %d", p)
	}
	g, release = current(t, rt)
	if g.Number() != first {
		t.Fatalf("a new generation was published while events arrived")
	}
	release()
	eventually(t, "the idle store is projected", func() bool { return projected(t, store) > 1 })
}

// A canonical store that appears while serving is found by the
// supervisor's periodic look, and a new generation includes it.
func TestNewCanonicalStoreIsPublished(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.jsonl"), []byte(`{"messages":[{"role":"user","content":"hi"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := startRuntime(t, root, 50*time.Millisecond, 100*time.Millisecond)
	appendEvents(t, filepath.Join(root, "new", events.DirName), session("n1", 0, 2))
	eventually(t, "a generation holds the new store", func() bool {
		g, release := current(t, rt)
		defer release()
		_, err := g.Snapshot().LookupSource(catalog.DefaultAlias, "new/events.lance")
		return err == nil
	})
}
