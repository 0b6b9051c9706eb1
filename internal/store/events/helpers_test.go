package events

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// genEvents returns a deterministic stream: for each of sessions sessions,
// n events with seq from..from+n-1 (a run.start, then user messages, agent
// tool calls and their results), ids prefixed by tag so batches never clash.
func genEvents(tag string, sessions, n int, from int64) []model.Event {
	var out []model.Event
	for s := 0; s < sessions; s++ {
		sid := fmt.Sprintf("s%04d", s)
		for i := 0; i < n; i++ {
			seq := from + int64(i)
			e := model.Event{
				EventID:   fmt.Sprintf("%s-%s-%d", tag, sid, seq),
				RunID:     "run-" + sid,
				SessionID: sid,
				Seq:       seq,
				TS:        t0.Add(time.Duration(seq) * time.Second),
			}
			call := fmt.Sprintf("c%d", seq-seq%3)
			switch {
			case seq == 0:
				e.Kind, e.Payload = "run.start", `{"agent_name":"gen"}`
			case seq%3 == 1:
				e.Kind, e.Payload = "message", fmt.Sprintf(`{"source":"user","content":"question %d"}`, seq)
			case seq%3 == 2:
				e.Kind, e.Payload, e.ToolCallID = "tool.call", `{"name":"bash","arguments":{"cmd":"ls"}}`, model.Str(call)
			default:
				e.Kind, e.Payload, e.ToolCallID = "tool.result", `{"output":"ok","status":"ok"}`, model.Str(fmt.Sprintf("c%d", seq-1-(seq-1)%3))
			}
			out = append(out, e)
		}
	}
	return out
}

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Create(filepath.Join(t.TempDir(), DirName))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readAll pins a fresh view of dir and returns every event in store order,
// checking the pinned manifest against the segment files.
func readAll(t testing.TB, dir string) (*Revision, []model.Event) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Pin()
	if err != nil {
		t.Fatal(err)
	}
	var out []model.Event
	if err := r.Scan(context.Background(), nil, func(e *model.Event) error {
		out = append(out, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if int64(len(out)) != r.Events {
		t.Fatalf("revision %d: manifest says %d events, segments hold %d", r.Revision, r.Events, len(out))
	}
	return r, out
}
