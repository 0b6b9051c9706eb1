package events

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

var errCrash = errors.New("crash")

// failurePoints runs op once and records every failure point it passes,
// and the events a fresh reader sees after it: the exact new state.
func failurePoints(t *testing.T, op func(s *Store) error, setup func(s *Store)) ([]string, []model.Event) {
	t.Helper()
	s := newStore(t)
	setup(s)
	var points []string
	restore := fsx.SetFailHook(func(path string, at fsx.FailPoint) error {
		points = append(points, fmt.Sprintf("%s@%s", filepath.Base(path), at))
		return nil
	})
	defer restore()
	if err := op(s); err != nil {
		t.Fatal(err)
	}
	_, after := readAll(t, s.Dir())
	return points, after
}

// testCrashes injects a failure at each failure point of op in turn and
// checks that a fresh reader sees exactly the state before op or exactly
// the state after it, and that the store keeps working.
func testCrashes(t *testing.T, setup func(s *Store), op func(s *Store) error) {
	points, wantAfter := failurePoints(t, op, setup)
	if len(points) < 5 {
		t.Fatalf("only %d failure points: %v", len(points), points)
	}
	for k, point := range points {
		t.Run(point, func(t *testing.T) {
			s := newStore(t)
			setup(s)
			before, wantBefore := readAll(t, s.Dir())
			n := 0
			restore := fsx.SetFailHook(func(string, fsx.FailPoint) error {
				n++
				if n-1 == k {
					return errCrash
				}
				return nil
			})
			err := op(s)
			restore()
			after, got := readAll(t, s.Dir())
			switch {
			case after.Revision == before.Revision:
				if !equalEvents(got, wantBefore) {
					t.Fatal("old revision changed")
				}
				if err == nil {
					t.Fatal("op reported success but published nothing")
				}
			case after.Revision == before.Revision+1:
				if !equalEvents(got, wantAfter) {
					t.Fatalf("new revision holds %d events, not exactly the %d of the completed operation", len(got), len(wantAfter))
				}
			default:
				t.Fatalf("revision jumped from %d to %d", before.Revision, after.Revision)
			}
			// A fresh writer continues from whatever is visible.
			if err := op(s); err != nil && after.Revision == before.Revision {
				t.Fatalf("retry after crash: %v", err)
			}
			readAll(t, s.Dir())
		})
	}
}

func TestCrashDuringAppend(t *testing.T) {
	setup := func(s *Store) {
		if _, err := s.Append(context.Background(), genEvents("a", 3, 4, 0)); err != nil {
			t.Fatal(err)
		}
	}
	testCrashes(t, setup, func(s *Store) error {
		_, err := s.Append(context.Background(), genEvents("b", 5, 4, 4))
		return err
	})
}

func TestCrashDuringCompact(t *testing.T) {
	setup := func(s *Store) {
		for i := 0; i < 3; i++ {
			if _, err := s.Append(context.Background(), genEvents(fmt.Sprint(i), 3, 4, int64(4*i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	testCrashes(t, setup, func(s *Store) error {
		before, _ := s.Pin()
		r, err := s.Compact(context.Background())
		if err == nil && r.FactWatermark != before.FactWatermark {
			return fmt.Errorf("fact watermark moved from %d to %d", before.FactWatermark, r.FactWatermark)
		}
		return err
	})
}

// An orphan segment left by a writer that died before publishing has the
// name the next writer uses; it must be replaced, not trusted.
func TestOrphanSegmentIsReplaced(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := os.WriteFile(filepath.Join(s.Dir(), filepath.FromSlash(segmentName(1, 0))), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, genEvents("a", 2, 3, 0)); err != nil {
		t.Fatal(err)
	}
	if _, got := readAll(t, s.Dir()); len(got) != 6 {
		t.Fatalf("%d events", len(got))
	}
}
