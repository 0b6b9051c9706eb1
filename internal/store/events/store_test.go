package events

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/model"
)

func TestAppendPinScan(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if !IsStore(s.Dir()) {
		t.Fatal("IsStore = false for a new store")
	}
	r1, err := s.Append(ctx, genEvents("a", 3, 5, 0))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Append(ctx, genEvents("b", 4, 5, 5))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Revision != 1 || r2.Revision != 2 || r2.FactWatermark != 2 || r2.LayoutWatermark != 0 {
		t.Fatalf("revisions: %d %d (fact %d, layout %d)", r1.Revision, r2.Revision, r2.FactWatermark, r2.LayoutWatermark)
	}
	seg := r2.Segments[1]
	if seg.Rows != 20 || seg.Sessions != 4 || seg.MinSession != "s0000" || seg.MaxSession != "s0003" ||
		seg.MinSeq != 5 || seg.MaxSeq != 9 || !seg.MinTS.Equal(t0.Add(5*time.Second)) || seg.MinFactRevision != 2 {
		t.Fatalf("segment stats: %+v", seg)
	}
	r, got := readAll(t, s.Dir())
	if r.Revision != 2 || len(got) != 35 {
		t.Fatalf("revision %d with %d events", r.Revision, len(got))
	}
	for i := 1; i < len(got); i++ {
		if compareEvents(got[i-1], got[i]) >= 0 {
			t.Fatalf("scan out of order at %d: %s/%d then %s/%d", i, got[i-1].SessionID, got[i-1].Seq, got[i].SessionID, got[i].Seq)
		}
	}
	// An empty append publishes nothing.
	r3, err := s.Append(ctx, nil)
	if err != nil || r3.Revision != 2 {
		t.Fatalf("empty append: revision %v, %v", r3, err)
	}
}

func TestAppendRejects(t *testing.T) {
	ctx := context.Background()
	base := genEvents("a", 2, 4, 0)
	bad := func(mut func(e []model.Event) []model.Event) []model.Event {
		evs := genEvents("b", 2, 3, 4)
		return mut(evs)
	}
	tests := []struct {
		name   string
		events []model.Event
		want   error
		msg    string
	}{
		{"duplicate id against the store", bad(func(e []model.Event) []model.Event {
			e[1].EventID = base[0].EventID
			return e
		}), canonical.ErrDuplicateEvent, `"a-s0000-0"`},
		{"duplicate id within the batch", bad(func(e []model.Event) []model.Event {
			e[2].EventID = e[0].EventID
			return e
		}), canonical.ErrDuplicateEvent, "duplicate"},
		{"seq not above stored seq", bad(func(e []model.Event) []model.Event {
			e[0].Seq = 3
			return e
		}), canonical.ErrSeqOrder, "3 after 3"},
		{"seq decreasing in batch", bad(func(e []model.Event) []model.Event {
			e[1].Seq = 4
			return e
		}), canonical.ErrSeqOrder, "4 after 4"},
		{"schema violation", bad(func(e []model.Event) []model.Event {
			e[2].Kind = "nope"
			return e
		}), nil, `unknown kind "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			if _, err := s.Append(ctx, base); err != nil {
				t.Fatal(err)
			}
			_, err := s.Append(ctx, tt.events)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.want, tt.msg)
			}
			r, got := readAll(t, s.Dir())
			if r.Revision != 1 || len(got) != len(base) {
				t.Fatalf("after a rejected append: revision %d, %d events", r.Revision, len(got))
			}
			entries, _ := os.ReadDir(filepath.Join(s.Dir(), segmentsDir))
			if len(entries) != 1 {
				t.Fatalf("rejected append left %d segment files", len(entries))
			}
			// The store still accepts the valid continuation afterwards.
			if _, err := s.Append(ctx, genEvents("c", 2, 2, 4)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCorruptManifest(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"not json", "{", "invalid JSON"},
		{"unknown field", `{"format_version":1,"schema_version":1,"revision":0,"fact_watermark":0,"layout_watermark":0,"events":0,"segments":[],"created_at":"2025-01-01T00:00:00Z","x":1}`, `unknown field "x"`},
		{"future version", `{"format_version":9,"schema_version":1,"revision":0,"fact_watermark":0,"layout_watermark":0,"events":0,"segments":[],"created_at":"2025-01-01T00:00:00Z"}`, "format_version 9"},
		{"row mismatch", `{"format_version":1,"schema_version":1,"revision":0,"fact_watermark":0,"layout_watermark":0,"events":5,"segments":[],"created_at":"2025-01-01T00:00:00Z"}`, "segments hold 0"},
		{"escaping path", `{"format_version":1,"schema_version":1,"revision":1,"fact_watermark":1,"layout_watermark":0,"events":1,"segments":[{"path":"segments/../../x.parquet","rows":1,"bytes":1,"revision":1,"min_fact_revision":1,"max_fact_revision":1,"sessions":1,"min_session_id":"a","max_session_id":"a","min_seq":0,"max_seq":0,"min_ts":"2025-01-01T00:00:00Z","max_ts":"2025-01-01T00:00:00Z"}],"created_at":"2025-01-01T00:00:00Z"}`, "segments[0]: path"},
		{"trailing data", `{"format_version":1,"schema_version":1,"revision":0,"fact_watermark":0,"layout_watermark":0,"events":0,"segments":[],"created_at":"2025-01-01T00:00:00Z"} {}`, "unexpected data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			path := filepath.Join(s.Dir(), ManifestName)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := s.Pin()
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Pin: %v, want an error naming %s and %q", err, path, tt.want)
			}
			if _, err := s.Append(context.Background(), genEvents("a", 1, 1, 0)); err == nil {
				t.Fatal("append to a store with a corrupt manifest succeeded")
			}
		})
	}
}

func TestCompactKeepsFacts(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for i := 0; i < 5; i++ {
		if _, err := s.Append(ctx, genEvents(string(rune('a'+i)), 3+i, 4, int64(4*i))); err != nil {
			t.Fatal(err)
		}
	}
	before, want := readAll(t, s.Dir())
	r, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Revision != 6 || r.FactWatermark != before.FactWatermark || r.LayoutWatermark != 6 || len(r.Segments) != 1 {
		t.Fatalf("compacted: revision %d fact %d layout %d, %d segments", r.Revision, r.FactWatermark, r.LayoutWatermark, len(r.Segments))
	}
	if seg := r.Segments[0]; seg.MinFactRevision != 1 || seg.MaxFactRevision != 5 || seg.Rows != before.Events {
		t.Fatalf("compacted segment: %+v", seg)
	}
	_, got := readAll(t, s.Dir())
	if !equalEvents(got, want) {
		t.Fatal("compaction changed the events")
	}
	// The pinned old revision is still readable until GC.
	n := 0
	if err := before.Scan(ctx, nil, func(*model.Event) error { n++; return nil }); err != nil || int64(n) != before.Events {
		t.Fatalf("old revision after compaction: %d events, %v", n, err)
	}
	if removed, err := s.GC(context.Background(), time.Hour); err != nil || len(removed) != 0 {
		t.Fatalf("GC within retention removed %v, %v", removed, err)
	}
	removed, err := s.GC(context.Background(), -time.Second)
	if err != nil || len(removed) != 5 {
		t.Fatalf("GC removed %v, %v", removed, err)
	}
	if _, got := readAll(t, s.Dir()); !equalEvents(got, want) {
		t.Fatal("GC changed the visible events")
	}
	// Nothing left to compact.
	if r2, err := s.Compact(ctx); err != nil || r2.Revision != 6 {
		t.Fatalf("second compaction: %v, %v", r2, err)
	}
	// Appends after compaction keep validating against compacted facts.
	if _, err := s.Append(ctx, genEvents("a", 1, 1, 0)); !errors.Is(err, canonical.ErrDuplicateEvent) {
		t.Fatalf("duplicate after compaction: %v", err)
	}
}

func equalEvents(a, b []model.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.EventID != y.EventID || x.SessionID != y.SessionID || x.Seq != y.Seq || !x.TS.Equal(y.TS) ||
			x.Payload != y.Payload || x.Kind != y.Kind || !eqPtr(x.ToolCallID, y.ToolCallID) {
			return false
		}
	}
	return true
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
