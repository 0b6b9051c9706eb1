package storyline

import (
	"container/heap"
	"context"
	"fmt"
	"path/filepath"
	"slices"
)

// sorter is a bounded-memory external sort of one relation: rows are
// buffered until the writer's memory budget is exceeded, then sorted and
// spilled to a snappy Parquet run file; finish merges the runs (or sorts the
// buffer alone when nothing was spilled) into the published file.
type sorter[T row] struct {
	rel    string
	dir    string // spill directory
	cmp    func(a, b *T) int
	size   func(*T) int64
	file   func(*T) string
	drop   map[string]bool // discarded _file_ values, shared by the Writer
	out    func(*T)        // applied to each row as it is published (renames); nil: none
	buf    []T
	spills []string
}

func newSorter[T row](rel, dir string, drop map[string]bool, cmp func(a, b *T) int, size func(*T) int64, file func(*T) string) *sorter[T] {
	return &sorter[T]{rel: rel, dir: dir, drop: drop, cmp: cmp, size: size, file: file}
}

// discard removes buffered rows of a dropped _file_ and returns the bytes
// freed; rows already spilled are skipped when the runs are merged.
func (s *sorter[T]) discard() int64 {
	var freed int64
	s.buf = slices.DeleteFunc(s.buf, func(r T) bool {
		if s.drop[s.file(&r)] {
			freed += s.size(&r)
			return true
		}
		return false
	})
	return freed
}

// add buffers a row and returns its estimated size.
func (s *sorter[T]) add(r *T) int64 {
	n := s.size(r)
	s.buf = append(s.buf, *r)
	return n
}

// spill sorts the buffer and writes it as a run file.
func (s *sorter[T]) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	path := filepath.Join(s.dir, fmt.Sprintf("%s-%04d.parquet", s.rel, len(s.spills)))
	if err := s.writeSorted(path); err != nil {
		return err
	}
	s.spills = append(s.spills, path)
	s.buf = nil
	return nil
}

func (s *sorter[T]) writeSorted(path string) error {
	tw, err := newTableWriter[T](path, spillCodec, s.size, false)
	if err != nil {
		return err
	}
	for _, i := range s.order() {
		if err := tw.write(&s.buf[i]); err != nil {
			tw.abort()
			return err
		}
	}
	_, err = tw.close()
	return err
}

// order returns the buffer's indices in sort order. Sorting indices
// rather than the rows avoids moving large structs around.
func (s *sorter[T]) order() []int32 {
	idx := make([]int32, len(s.buf))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return s.cmp(&s.buf[a], &s.buf[b]) })
	return idx
}

// finish writes all rows, in order, to the published file at path.
func (s *sorter[T]) finish(ctx context.Context, path string) (TableInfo, error) {
	tw, err := newTableWriter[T](path, publishCodec, s.size, true)
	if err != nil {
		return TableInfo{}, err
	}
	if err := s.drain(ctx, tw); err != nil {
		tw.abort()
		return TableInfo{}, fmt.Errorf("storyline: write %s: %w", path, err)
	}
	info, err := tw.close()
	if err != nil {
		return TableInfo{}, fmt.Errorf("storyline: write %s: %w", path, err)
	}
	info.File = filepath.Base(path)
	return info, nil
}

func (s *sorter[T]) drain(ctx context.Context, tw *tableWriter[T]) error {
	if len(s.spills) == 0 {
		for n, i := range s.order() {
			if n%batchRows == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if s.drop[s.file(&s.buf[i])] {
				continue
			}
			if s.out != nil {
				s.out(&s.buf[i])
			}
			if err := tw.write(&s.buf[i]); err != nil {
				return err
			}
		}
		s.buf = nil
		return nil
	}
	if err := s.spill(); err != nil {
		return err
	}
	return s.merge(ctx, tw)
}

// merge k-way merges the sorted run files into tw.
func (s *sorter[T]) merge(ctx context.Context, tw *tableWriter[T]) error {
	h := &runHeap[T]{cmp: s.cmp}
	defer func() {
		for _, c := range h.runs {
			c.r.close()
		}
	}()
	for _, path := range s.spills {
		r, err := openTable[T](path)
		if err != nil {
			return err
		}
		c := &runCursor[T]{r: r}
		if c.cur, err = r.next(); err != nil {
			r.close()
			return err
		}
		if c.cur == nil {
			r.close()
			continue
		}
		h.runs = append(h.runs, c)
	}
	heap.Init(h)
	for n := 0; h.Len() > 0; n++ {
		if n%batchRows == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c := h.runs[0]
		if !s.drop[s.file(c.cur)] {
			if s.out != nil {
				s.out(c.cur) // after it was ordered: the order is the inputs' ids
			}
			if err := tw.write(c.cur); err != nil {
				return err
			}
		}
		next, err := c.r.next()
		if err != nil {
			return err
		}
		if next == nil {
			c.r.close()
			heap.Pop(h)
			continue
		}
		c.cur = next
		heap.Fix(h, 0)
	}
	return nil
}

type runCursor[T row] struct {
	r   *tableReader[T]
	cur *T
}

type runHeap[T row] struct {
	runs []*runCursor[T]
	cmp  func(a, b *T) int
}

func (h *runHeap[T]) Len() int           { return len(h.runs) }
func (h *runHeap[T]) Less(i, j int) bool { return h.cmp(h.runs[i].cur, h.runs[j].cur) < 0 }
func (h *runHeap[T]) Swap(i, j int)      { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap[T]) Push(x any)         { h.runs = append(h.runs, x.(*runCursor[T])) }
func (h *runHeap[T]) Pop() any {
	old := h.runs
	c := old[len(old)-1]
	h.runs = old[:len(old)-1]
	return c
}
