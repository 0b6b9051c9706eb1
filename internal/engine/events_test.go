package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/projection"
)

// sessionEvents is one small canonical session: start, user and agent
// messages, a tool call with its result, end.
func sessionEvents(session string) []model.Event {
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := func(seq int64, kind, step, call, payload string) model.Event {
		e := model.Event{EventID: fmt.Sprintf("%s-%d", session, seq), RunID: "run-" + session, SessionID: session,
			Seq: seq, TS: ts.Add(time.Duration(seq) * time.Second), Kind: kind, Payload: payload}
		if step != "" {
			e.StepID = model.Str(step)
		}
		if call != "" {
			e.ToolCallID = model.Str(call)
		}
		return e
	}
	return []model.Event{
		ev(1, "run.start", "", "", `{"agent_name":"a"}`),
		ev(2, "message", "1", "", `{"source":"user","content":"hi"}`),
		ev(3, "message", "2", "", `{"source":"agent","content":"calling"}`),
		ev(4, "tool.call", "2", "c1", `{"name":"bash","arguments":"{}"}`),
		ev(5, "tool.result", "2", "c1", `{"content":"ok"}`),
		ev(6, "run.end", "", "", `{"status":"completed"}`),
	}
}

func eventsDataset(t *testing.T, sessions ...string) (root, store string) {
	t.Helper()
	root = t.TempDir()
	store = filepath.Join(root, "live", "events.lance")
	if err := os.MkdirAll(filepath.Dir(store), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := events.OpenOrCreate(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		if _, err := st.Append(context.Background(), sessionEvents(s)); err != nil {
			t.Fatal(err)
		}
	}
	return root, store
}

func TestRawEventsScanAndSessionLookupDoNotNormalizeEverything(t *testing.T) {
	root, _ := eventsDataset(t, "s1", "s2", "s3")
	snap, e := open(t, root, catalog.DefaultOptions())
	if n := mustQuery(t, e, "SELECT count(*) FROM events").Rows[0][0]; n != int64(18) {
		t.Fatalf("events = %v", n)
	}
	if snap.FallbackSessions() != 0 {
		t.Fatalf("a raw events scan normalized %d sessions", snap.FallbackSessions())
	}
	res := mustQuery(t, e, "SELECT session_id, step_count, tool_call_count, status FROM runs WHERE session_id = 's2'")
	if len(res.Rows) != 1 || res.Rows[0][1] != int64(2) || res.Rows[0][2] != int64(1) || res.Rows[0][3] != "completed" {
		t.Fatalf("s2 = %v", res.Rows)
	}
	if n := snap.FallbackSessions(); n != 1 {
		t.Fatalf("point lookup normalized %d sessions, want 1", n)
	}
	mustQuery(t, e, "SELECT count(*) FROM steps WHERE session_id IN ('s1', 's3')")
	if n := snap.FallbackSessions(); n != 3 {
		t.Fatalf("IN lookup: %d sessions normalized in total, want 3", n)
	}
	if n := mustQuery(t, e, "SELECT count(*) FROM runs").Rows[0][0]; n != int64(3) {
		t.Fatalf("full scan runs = %v", n)
	}
}

func TestProjectionSelectedAndCanonicalStillVisible(t *testing.T) {
	root, store := eventsDataset(t, "s1", "s2")
	if _, err := projection.Build(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	snap, e := open(t, root, catalog.DefaultOptions())
	src := mustQuery(t, e, "SELECT _file_, source_type, projection_candidates FROM sources")
	if len(src.Rows) != 1 || src.Rows[0][0] != "live/events.lance" || src.Rows[0][2] != int64(1) {
		t.Fatalf("the projection must attach to its events source, not be a source: %v", src.Rows)
	}
	proj := mustQuery(t, e, "SELECT projection_path, fresh, selected FROM projections")
	if len(proj.Rows) != 1 || proj.Rows[0][0] != "live/events.storyline" || proj.Rows[0][1] != true || proj.Rows[0][2] != true {
		t.Fatalf("projections: %v", proj.Rows)
	}
	if n := mustQuery(t, e, "SELECT count(*) FROM runs WHERE _file_ = 'live/events.lance'").Rows[0][0]; n != int64(2) {
		t.Fatalf("runs = %v", n)
	}
	if snap.FallbackSessions() != 0 {
		t.Fatal("a fresh projection exists: nothing should be normalized")
	}
	if n := mustQuery(t, e, "SELECT count(*) FROM events").Rows[0][0]; n != int64(12) {
		t.Fatalf("canonical events must stay visible: %v", n)
	}

	// New facts make the projection stale: reads fall back to the pinned events.
	st, _ := events.Open(store)
	if _, err := st.Append(context.Background(), sessionEvents("s3")); err != nil {
		t.Fatal(err)
	}
	snap2, e2 := open(t, root, catalog.DefaultOptions())
	proj = mustQuery(t, e2, "SELECT fresh, selected FROM projections")
	if proj.Rows[0][0] != false || proj.Rows[0][1] != false {
		t.Fatalf("stale projection: %v", proj.Rows)
	}
	if n := mustQuery(t, e2, "SELECT count(*) FROM runs").Rows[0][0]; n != int64(3) || snap2.FallbackSessions() != 3 {
		t.Fatalf("fallback runs = %v, sessions %d", n, snap2.FallbackSessions())
	}
}
