package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// apiChatLine is one OpenAI chat-jsonl conversation with a linked tool call.
func apiChatLine(id string) string {
	return `{"session_id":"` + id + `","messages":[{"role":"user","content":"list files in ` + id + `"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"a b"},{"role":"assistant","content":"done"}]}`
}

// apiSnapshot mounts root as the Dataset team/prod (alias prod) and opens a
// Reader over it.
func apiSnapshot(t *testing.T, root string) (*catalog.Snapshot, *Reader) {
	t.Helper()
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Namespace: []string{"team", "prod"}, Alias: "prod", URI: root}}, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(snap, LimitsFrom(snap.Options))
	t.Cleanup(func() { r.Close(); snap.Close() })
	return snap, r
}

// writeTree writes files (slash paths relative to a new temp dir) and
// returns the dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var apiT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// apiAppendEvents writes sessions into a canonical events store under root.
func apiAppendEvents(t *testing.T, dir string, sessions ...string) {
	t.Helper()
	st, err := events.OpenOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	var evs []model.Event
	for _, sid := range sessions {
		ev := func(seq int64, kind, payload string, call *string) model.Event {
			return model.Event{EventID: fmt.Sprintf("%s-%d", sid, seq), RunID: "run-" + sid, SessionID: sid, Seq: seq,
				TS: apiT0.Add(time.Duration(seq) * time.Second), Kind: kind, Payload: payload, ToolCallID: call}
		}
		evs = append(evs,
			ev(0, "run.start", `{"agent_name":"gen"}`, nil),
			ev(1, "message", `{"source":"user","content":"hi `+sid+`"}`, nil),
			ev(2, "message", `{"source":"agent","content":"calling"}`, nil),
			ev(3, "tool.call", `{"name":"bash","arguments":{"cmd":"ls"}}`, model.Str("c1")),
			ev(4, "tool.result", `{"output":"ok"}`, model.Str("c1")),
			ev(5, "run.end", `{"status":"completed"}`, nil))
	}
	if _, err := st.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

func TestLoadStorylineFromFileSource(t *testing.T) {
	root := writeTree(t, map[string]string{"a/chat.jsonl": apiChatLine("conv-1") + "\n" + apiChatLine("conv-2") + "\n"})
	snap, reader := apiSnapshot(t, root)
	ctx := context.Background()
	for _, ds := range []string{"team/prod", "prod"} { // namespace path or alias
		sl, err := reader.LoadStoryline(ctx, StorylineKey{ds, "a/chat.jsonl", "conv-2"})
		if err != nil {
			t.Fatal(err)
		}
		if sl.Run.SessionID != "conv-2" || len(sl.Steps) != 4 || len(sl.ToolCalls) != 1 || sl.Run.StepCount != 4 {
			t.Fatalf("got session %s, %d steps, %d calls, step_count %d", sl.Run.SessionID, len(sl.Steps), len(sl.ToolCalls), sl.Run.StepCount)
		}
		if !strings.Contains(model.Deref(sl.Steps[0].MessageValue), "conv-2") {
			t.Errorf("first step is %q, not conversation 2's", model.Deref(sl.Steps[0].MessageValue))
		}
		tc := sl.ToolCalls[0]
		if tc.ResultLink != model.LinkByID || model.Deref(tc.Result) != "a b" || tc.File != "a/chat.jsonl" || sl.Steps[3].File != "a/chat.jsonl" {
			t.Errorf("tool call %+v", tc)
		}
		for i, st := range sl.Steps {
			if st.StepIndex != int64(i) {
				t.Errorf("step %d has step_index %d", i, st.StepIndex)
			}
		}
	}
	if snap.Resolves() != 1 {
		t.Errorf("resolves = %d, want 1 (single-flight)", snap.Resolves())
	}
	for _, c := range []struct{ ds, file, session string }{
		{"prod", "a/chat.jsonl", "conv-3"},
		{"prod", "b.jsonl", "conv-1"},
		{"staging", "a/chat.jsonl", "conv-1"},
	} {
		if _, err := reader.LoadStoryline(ctx, StorylineKey{c.ds, c.file, c.session}); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("%v: err = %v, want ErrNotFound", c, err)
		}
	}
	if _, err := snap.LoadEvents(ctx, "prod", "a/chat.jsonl", "conv-1"); err == nil || !strings.Contains(err.Error(), "canonical events exist only in events stores") {
		t.Errorf("LoadEvents on a file source: %v", err)
	}
	if _, err := snap.CanonicalEventURI("prod", "a/chat.jsonl", "conv-1"); err == nil {
		t.Error("CanonicalEventURI on a file source succeeded")
	}
}

func TestEachStorylineFilters(t *testing.T) {
	root := writeTree(t, map[string]string{"chat.jsonl": apiChatLine("x") + "\n" + apiChatLine("y") + "\n" + apiChatLine("z") + "\n"})
	_, reader := apiSnapshot(t, root)
	for _, tt := range []struct {
		f    StorylineFilter
		want string
	}{
		{StorylineFilter{}, "x y z"},
		{StorylineFilter{Sessions: []string{"z", "x", "nope"}}, "x z"},
		{StorylineFilter{RunID: "y"}, "y"},
		{StorylineFilter{Sessions: []string{"x"}, RunID: "y"}, ""},
	} {
		var got []string
		err := reader.EachStoryline(context.Background(), "prod", "chat.jsonl", tt.f, func(sl *model.Storyline) error {
			if len(sl.Steps) != 4 || len(sl.ToolCalls) != 1 {
				t.Errorf("%s: %d steps, %d calls", sl.Run.SessionID, len(sl.Steps), len(sl.ToolCalls))
			}
			got = append(got, sl.Run.SessionID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.f, got, tt.want)
		}
	}
}

// Reading several sources at once gives what reading them one by one gives,
// in the order asked: peripheral files read together (one of them with a
// path that sorts before a directory's files it follows in discovery
// order), an events store read alone between them, and the filters.
func TestEachStorylineOfIsEachStorylineInTurn(t *testing.T) {
	root := writeTree(t, map[string]string{
		"a.jsonl":     apiChatLine("a1") + "\n" + apiChatLine("a0") + "\n",
		"a/x.jsonl":   apiChatLine("x1") + "\n",
		"b.jsonl":     apiChatLine("b1") + "\n" + apiChatLine("b2") + "\n" + apiChatLine("a1") + "\n",
		"c/d/e.jsonl": apiChatLine("e1") + "\n",
	})
	apiAppendEvents(t, filepath.Join(root, "live", events.DirName), "l1", "l2")
	snap, reader := apiSnapshot(t, root)
	var files []string
	for _, src := range snap.Datasets[0].Sources {
		files = append(files, src.File)
	}
	if !slices.Contains(files, "live/events.lance") || len(files) != 5 {
		t.Fatalf("sources: %v", files)
	}
	ctx := context.Background()
	for _, f := range []StorylineFilter{{}, {Sessions: []string{"a1", "l2", "e1"}}, {RunID: "b2"}} {
		var want, got []string
		for _, file := range files {
			err := reader.EachStoryline(ctx, "prod", file, f, func(sl *model.Storyline) error {
				b, err := json.Marshal(sl)
				want = append(want, file+" "+string(b))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		err := reader.EachStorylineOf(ctx, "prod", files, f, func(file string, sl *model.Storyline) error {
			b, err := json.Marshal(sl)
			got = append(got, file+" "+string(b))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%+v: together\n%s\none by one\n%s", f, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// The reader reads each source's files once, so DuckDB keeps none of their
// bytes for a later read: a long export (or a server's reader) grew by every
// file it had read until memory_limit.
func TestReaderKeepsNoFileBytes(t *testing.T) {
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("c%02d.jsonl", i)] = apiChatLine(fmt.Sprint("s", i)) + "\n"
	}
	_, reader := apiSnapshot(t, writeTree(t, files))
	for file := range files {
		if err := reader.EachStoryline(context.Background(), "prod", file, StorylineFilter{}, func(*model.Storyline) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	db, err := reader.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var cached int64
	if err := db.QueryRow("SELECT memory_usage_bytes FROM duckdb_memory() WHERE tag = 'EXTERNAL_FILE_CACHE'").Scan(&cached); err != nil {
		t.Fatal(err)
	}
	if cached != 0 {
		t.Fatalf("DuckDB holds %d bytes of the files read", cached)
	}
}

// A store may hold Storylines imported from several files; a session_id
// that two of them share is stored qualified by its file, so each is
// loaded by its own id and the shared id names none.
func TestLoadStorylineFromStore(t *testing.T) {
	root := t.TempDir()
	st, err := storyline.OpenOrCreate(filepath.Join(root, "store"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	add := func(file, session string, steps int) {
		sl := &model.Storyline{Run: model.Run{RunID: "r", SessionID: session, SourceFormat: "test"}}
		for i := 0; i < steps; i++ {
			sl.Steps = append(sl.Steps, model.Step{StepID: fmt.Sprint(i), Source: model.SourceUser, MessageKind: "text"})
		}
		sl.Finalize(file)
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	add("one.json", "s1", 2)
	add("one.json", "s2", 3)
	add("two.json", "s2", 5)
	if _, err := w.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	_, reader := apiSnapshot(t, root)
	sl, err := reader.LoadStoryline(context.Background(), StorylineKey{"prod", "store", "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sl.Steps) != 2 || sl.Run.File != "store" || sl.Steps[1].File != "store" {
		t.Errorf("s1: %d steps, _file_ %q", len(sl.Steps), sl.Run.File)
	}
	for id, steps := range map[string]int{"s2@one.json": 3, "s2@two.json": 5} {
		sl, err := reader.LoadStoryline(context.Background(), StorylineKey{"prod", "store", id})
		if err != nil {
			t.Fatal(err)
		}
		if len(sl.Steps) != steps || sl.Run.OriginalSessionID == nil || *sl.Run.OriginalSessionID != "s2" {
			t.Errorf("%s: %d steps, run %+v", id, len(sl.Steps), sl.Run)
		}
	}
	if _, err := reader.LoadStoryline(context.Background(), StorylineKey{"prod", "store", "s2"}); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("s2: err = %v, want not found", err)
	}
}

func TestSeveralStorylinesFromOneEventsSource(t *testing.T) {
	root := t.TempDir()
	apiAppendEvents(t, filepath.Join(root, "live", events.DirName), "s1", "s2", "s3")
	snap, reader := apiSnapshot(t, root)
	ctx := context.Background()
	const file = "live/events.lance"
	for _, sid := range []string{"s3", "s1"} {
		evs, err := snap.LoadEvents(ctx, "prod", file, sid)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 6 || evs[0].SessionID != sid || evs[0].Kind != "run.start" || evs[5].Seq != 5 || evs[0].File != file {
			t.Errorf("%s: %d events, first %+v", sid, len(evs), evs[0])
		}
		sl, err := reader.LoadStoryline(ctx, StorylineKey{"prod", file, sid})
		if err != nil {
			t.Fatal(err)
		}
		if sl.Run.SessionID != sid || len(sl.Steps) != 2 || len(sl.ToolCalls) != 1 || sl.ToolCalls[0].ResultLink != model.LinkByID {
			t.Errorf("%s: %d steps, %d calls", sid, len(sl.Steps), len(sl.ToolCalls))
		}
	}
	if _, err := snap.LoadEvents(ctx, "prod", file, "s9"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("missing session: %v", err)
	}
	uri, err := snap.CanonicalEventURI("prod", file, "a b#c")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "live", events.DirName) + "#session=a+b%23c"; uri != want {
		t.Errorf("uri = %q, want %q", uri, want)
	}
}

// The reader's instance may read only the Snapshot's pinned data.
func TestReaderSandbox(t *testing.T) {
	_, reader := apiSnapshot(t, writeTree(t, map[string]string{"a.jsonl": apiChatLine("x") + "\n"}))
	outside := writeTree(t, map[string]string{"secret.csv": "a\n1\n"})
	db, err := reader.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT * FROM read_csv(" + sqlString(filepath.Join(outside, "secret.csv")) + ")",
		"SET enable_external_access=true",
	} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s: allowed", q)
		}
	}
	if _, err := reader.LoadStoryline(context.Background(), StorylineKey{"prod", "a.jsonl", "x"}); err != nil {
		t.Errorf("the sandboxed reader cannot read its own source: %v", err)
	}
}
