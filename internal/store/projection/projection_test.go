package projection

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// batch returns n events for each session in sessions, seq from..from+n-1,
// forming user message → agent tool call → tool result cycles.
func batch(tag string, sessions []string, n int, from int64) []model.Event {
	var out []model.Event
	for _, sid := range sessions {
		for i := 0; i < n; i++ {
			seq := from + int64(i)
			e := model.Event{
				EventID: fmt.Sprintf("%s-%s-%d", tag, sid, seq), RunID: "run-" + sid, SessionID: sid,
				Seq: seq, TS: t0.Add(time.Duration(seq) * time.Second),
			}
			call := fmt.Sprintf("call-%d", seq/3)
			switch seq % 3 {
			case 0:
				e.Kind, e.Payload = "message", fmt.Sprintf(`{"source":"user","content":"q%d"}`, seq)
			case 1:
				e.Kind, e.Payload, e.ToolCallID = "tool.call", `{"name":"bash","arguments":{"cmd":"ls"}}`, model.Str(call)
			default:
				e.Kind, e.Payload, e.ToolCallID = "tool.result", `{"output":"ok","status":"ok"}`, model.Str(call)
			}
			out = append(out, e)
		}
	}
	return out
}

func sessions(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

type rows struct {
	Runs  []model.Run
	Steps []model.Step
	Calls []model.ToolCall
}

func readRows(t *testing.T, g *storyline.Generation) rows {
	t.Helper()
	return rows{
		Runs:  readTable[model.Run](t, g.Path(model.RelRuns)),
		Steps: readTable[model.Step](t, g.Path(model.RelSteps)),
		Calls: readTable[model.ToolCall](t, g.Path(model.RelToolCalls)),
	}
}

func readTable[T any](t *testing.T, path string) []T {
	t.Helper()
	out, err := parquet.ReadFile[T](path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIncrementalEqualsFull appends in several revisions, including new
// sessions, continued sessions and a compaction, and checks after each
// step that the incrementally updated projection equals a full rebuild in
// a fresh copy, and that lineage names the events revision.
func TestIncrementalEqualsFull(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, events.DirName)
	es, err := events.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { _, err := es.Append(ctx, batch("a", sessions("s", 20), 6, 0)); return err },
		func() error { _, err := es.Append(ctx, batch("b", sessions("s", 3), 4, 6)); return err },          // continue 3 sessions
		func() error { _, err := es.Append(ctx, batch("c", sessions("n", 5), 3, 0)); return err },          // new sessions
		func() error { _, err := es.Compact(ctx); return err },                                             // layout only
		func() error { _, err := es.Append(ctx, batch("d", []string{"s010", "n002"}, 3, 10)); return err }, // after compaction
	}
	wantModes := []Mode{ModeFull, ModeIncremental, ModeIncremental, ModeFresh, ModeIncremental}
	wantChanged := []int64{20, 3, 5, 0, 2}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		res, err := Update(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != wantModes[i] || res.Sessions != wantChanged[i] {
			t.Fatalf("step %d: mode %s with %d sessions normalized, want %s with %d", i, res.Mode, res.Sessions, wantModes[i], wantChanged[i])
		}
		l := res.Generation.Manifest.Lineage
		if l == nil || l.EventsRevision < res.Revision.FactWatermark {
			t.Fatalf("step %d: lineage %+v for revision %d", i, l, res.Revision.Revision)
		}
		got := readRows(t, res.Generation)
		want := fullRebuild(t, dir)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: incremental projection differs from a full rebuild", i)
		}
	}
	// Same input revision → identical rows on a forced rebuild.
	res, err := Rebuild(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := readRows(t, res.Generation); !reflect.DeepEqual(got, fullRebuild(t, dir)) || len(got.Runs) != 25 {
		t.Fatalf("rebuild differs or has %d runs", len(got.Runs))
	}
}

// fullRebuild projects a copy of the events store from scratch.
func fullRebuild(t *testing.T, dir string) rows {
	t.Helper()
	cp := filepath.Join(t.TempDir(), events.DirName)
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	g, err := Build(context.Background(), cp)
	if err != nil {
		t.Fatal(err)
	}
	return readRows(t, g)
}

func TestProjectionContent(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), events.DirName)
	es, err := events.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := es.Append(ctx, batch("a", []string{"x", "y"}, 6, 0)); err != nil {
		t.Fatal(err)
	}
	g, err := Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if g.Dir[:len(SiblingDir(dir))] != SiblingDir(dir) {
		t.Fatalf("projection at %s, want under %s", g.Dir, SiblingDir(dir))
	}
	uri, _ := URI(dir)
	if l := g.Manifest.Lineage; l == nil || l.EventsURI != uri || l.EventsRevision != 1 {
		t.Fatalf("lineage %+v, want %s at 1", l, uri)
	}
	r := readRows(t, g)
	// 6 events per session: 2 user messages, 2 tool calls with results.
	if len(r.Runs) != 2 || len(r.Calls) != 4 || r.Runs[0].SessionID != "x" || r.Runs[0].ToolCallCount != 2 {
		t.Fatalf("runs %d, calls %d: %+v", len(r.Runs), len(r.Calls), r.Runs)
	}
	for _, c := range r.Calls {
		if c.ResultStatus != model.ResultOK || c.ResultLink != model.LinkByID {
			t.Fatalf("call %s not linked: %s/%s", c.ToolCallID, c.ResultStatus, c.ResultLink)
		}
	}
	// Building again at the same revision publishes nothing new.
	g2, err := Build(ctx, dir)
	if err != nil || g2.Number != g.Number {
		t.Fatalf("second build: generation %v (was %d), %v", g2, g.Number, err)
	}
}
