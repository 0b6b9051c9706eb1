package events

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Once the context is done, an append publishes nothing, even with every
// event read and valid: the exact old revision stays current and no
// segment of it is left.
func TestCancelledAppendPublishesNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Append(ctx, genEvents("a", 2, 3, 0)); err != nil {
		t.Fatal(err)
	}
	before, want := readAll(t, s.Dir())
	cctx, cancel := context.WithCancel(ctx)
	tx, err := s.Begin(cctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Add(cctx, genEvents("b", 2, 3, 3)...); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := tx.Commit(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit after cancel: %v", err)
	}
	after, got := readAll(t, s.Dir())
	if after.Revision != before.Revision || !equalEvents(got, want) {
		t.Fatalf("revision %d with %d events, want the old %d with %d", after.Revision, len(got), before.Revision, len(want))
	}
	segs, _ := os.ReadDir(filepath.Join(s.Dir(), segmentsDir))
	if len(segs) != len(before.Segments) {
		t.Fatalf("%d segment files, want the %d of the old revision", len(segs), len(before.Segments))
	}
}

// A writer waiting for the lock stops when its context is done.
func TestBeginWaitStopsOnCancel(t *testing.T) {
	s := newStore(t)
	tx, err := s.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Abort()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	other, _ := Open(s.Dir())
	if _, err := other.Begin(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Begin while another append runs: %v", err)
	}
	if _, err := other.Compact(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Compact while another append runs: %v", err)
	}
	if _, err := other.GC(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GC while another append runs: %v", err)
	}
}

func TestRemoveEmpty(t *testing.T) {
	ctx := context.Background()
	t.Run("empty", func(t *testing.T) {
		s := newStore(t)
		if ok, err := s.RemoveEmpty(); !ok || err != nil {
			t.Fatalf("RemoveEmpty of a new store: %v %v", ok, err)
		}
		if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("store directory still there: %v", err)
		}
	})
	t.Run("with events", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Append(ctx, genEvents("a", 1, 2, 0)); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.RemoveEmpty(); ok || err != nil {
			t.Fatalf("RemoveEmpty of a store with events: %v %v", ok, err)
		}
		if _, got := readAll(t, s.Dir()); len(got) != 2 {
			t.Fatalf("%d events left", len(got))
		}
	})
	t.Run("being written", func(t *testing.T) {
		s := newStore(t)
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Abort()
		if ok, err := s.RemoveEmpty(); ok || err != nil {
			t.Fatalf("RemoveEmpty while an append holds the lock: %v %v", ok, err)
		}
		if !IsStore(s.Dir()) {
			t.Fatal("store removed under a writer")
		}
	})
	t.Run("foreign file", func(t *testing.T) {
		s := newStore(t)
		os.WriteFile(filepath.Join(s.Dir(), "notes.txt"), []byte("x"), 0o644)
		if ok, err := s.RemoveEmpty(); ok || err != nil {
			t.Fatalf("RemoveEmpty with a foreign file: %v %v", ok, err)
		}
		entries, _ := os.ReadDir(s.Dir())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if want := []string{lockName, ManifestName, "notes.txt", segmentsDir}; !slices.Equal(names, want) {
			t.Fatalf("store holds %v, want %v", names, want)
		}
	})
}

// A waiter whose store is removed (an emptied store of a failed first
// append) gets ErrNotStore and can create it again.
func TestBeginOnRemovedStore(t *testing.T) {
	s := newStore(t)
	if ok, err := s.RemoveEmpty(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := s.Begin(context.Background()); !errors.Is(err, ErrNotStore) {
		t.Fatalf("Begin on a removed store: %v, want ErrNotStore", err)
	}
}
