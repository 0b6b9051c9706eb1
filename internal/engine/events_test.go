package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/compact"
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

// compactLeaf makes dir a compact leaf holding the given sessions' events,
// one part per session.
func compactLeaf(t *testing.T, dir string, sessions ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := compact.CreateLeaf(dir); err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		if err := compact.Append(context.Background(), dir, sessionEvents(s)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompactSourcesReadLikeCanonicalEvents: a compact leaf (chronicle.manifest
// with canonical event JSONL parts) is a source of events and of the
// Storylines normalized from them; a branch contributes its child leaves;
// a part changed after pinning fails the query.
func TestCompactSourcesReadLikeCanonicalEvents(t *testing.T) {
	root := t.TempDir()
	compactLeaf(t, filepath.Join(root, "solo"), "s1")
	branch := filepath.Join(root, "fleet")
	if err := os.MkdirAll(branch, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := compact.CreateBranch(branch); err != nil {
		t.Fatal(err)
	}
	compactLeaf(t, filepath.Join(branch, "a"), "s2", "s3")
	compactLeaf(t, filepath.Join(branch, "b"), "s4")
	if err := os.MkdirAll(filepath.Join(branch, "not-compact"), 0o755); err != nil {
		t.Fatal(err)
	}
	snap, e := open(t, root, catalog.DefaultOptions())
	if evs, err := snap.LoadEvents(context.Background(), catalog.DefaultAlias, "fleet/a", "s3"); err != nil || len(evs) != 6 || evs[0].File != "fleet/a" {
		t.Fatalf("LoadEvents: %d events, %v", len(evs), err)
	}
	if got := rowsOf(t, e, "SELECT _file_, kind, source_type, status, revision_kind FROM sources ORDER BY 1"); got !=
		"fleet/a,store,compact,ready,compact_manifest;fleet/b,store,compact,ready,compact_manifest;solo,store,compact,ready,compact_manifest" {
		t.Fatalf("sources: %s", got)
	}
	if got := rowsOf(t, e, "SELECT _file_, count(*), count(DISTINCT session_id) FROM events GROUP BY 1 ORDER BY 1"); got != "fleet/a,12,2;fleet/b,6,1;solo,6,1" {
		t.Fatalf("events: %s", got)
	}
	if got := rowsOf(t, e, "SELECT _file_, session_id, step_count, tool_call_count, status FROM runs ORDER BY 1, 2"); got !=
		"fleet/a,s2,2,1,completed;fleet/a,s3,2,1,completed;fleet/b,s4,2,1,completed;solo,s1,2,1,completed" {
		t.Fatalf("runs: %s", got)
	}

	// A part rewritten after the Snapshot pinned it fails the query.
	root2 := t.TempDir()
	compactLeaf(t, filepath.Join(root2, "leaf"), "s1")
	_, e2 := open(t, root2, catalog.DefaultOptions())
	parts, err := filepath.Glob(filepath.Join(root2, "leaf", "*.jsonl"))
	if err != nil || len(parts) != 1 {
		t.Fatalf("parts: %v %v", parts, err)
	}
	if err := os.WriteFile(parts[0], []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = e2.Query(context.Background(), "SELECT count(*) FROM events", QueryOptions{})
	var changed *catalog.ErrSourceChanged
	if !errors.As(err, &changed) {
		t.Fatalf("a changed part: want ErrSourceChanged, got %v", err)
	}
}
