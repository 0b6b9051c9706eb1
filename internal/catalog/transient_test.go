package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// A resolution that failed for a transient reason (a full disk, an I/O
// error) is tried again by the next query, once; one that failed on the
// source's pinned bytes stays failed for the Snapshot's life.
func TestTransientFailuresAreNotKept(t *testing.T) {
	full := &fs.PathError{Op: "write", Path: "/tmp/x/steps.parquet", Err: syscall.ENOSPC}
	parse := errors.New("line 3: invalid JSON")
	for _, tt := range []struct {
		name  string
		first error
		again bool // the second call runs fn again
	}{
		{"full disk", fmt.Errorf("normalize: %w", full), true},
		{"quota", syscall.EDQUOT, true},
		{"I/O error", fmt.Errorf("read: %w", syscall.EIO), true},
		{"too many open files", syscall.EMFILE, true},
		{"parse error", parse, false},
		{"changed source", &ErrSourceChanged{File: "a.json"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			fn := func() (*Resolved, error) {
				calls++
				if calls == 1 {
					return nil, tt.first
				}
				return &Resolved{}, nil
			}
			var c cell
			if _, err := c.do(context.Background(), fn); !errors.Is(err, tt.first) {
				t.Fatalf("first: %v", err)
			}
			res, err := c.do(context.Background(), fn)
			if tt.again && (err != nil || res == nil || calls != 2) {
				t.Errorf("cell: after a transient failure the next call got %v after %d runs, want a new run", err, calls)
			}
			if !tt.again && (!errors.Is(err, tt.first) || calls != 1) {
				t.Errorf("cell: a deterministic failure was not kept: %v after %d runs", err, calls)
			}

			calls = 0
			var cs relCells
			parts := []string{model.RelSteps}
			many := func(missing []string) ([]*Resolved, error) {
				r, err := fn()
				if err != nil {
					return nil, err
				}
				return []*Resolved{r}, nil
			}
			cs.do(context.Background(), parts, many)
			_, err = cs.do(context.Background(), parts, many)
			if tt.again != (calls == 2) || tt.again != (err == nil) {
				t.Errorf("relation cells: %v after %d runs", err, calls)
			}
		})
	}
}
