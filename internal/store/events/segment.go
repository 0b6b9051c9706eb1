package events

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

const (
	// segmentRows bounds the rows of one segment, and so the events a writer
	// buffers before sorting and flushing them.
	segmentRows = 256 << 10
	// rowGroupRows keeps row groups small enough that a session_id lookup
	// skips most of a segment using row-group statistics.
	rowGroupRows = 32 << 10
)

// segmentName is the relative path of the i-th segment written by revision
// rev. Names never repeat across published revisions, so a published segment
// is never overwritten; a crashed writer's orphan of the same name was never
// visible.
func segmentName(rev int64, i int) string {
	return path.Join(segmentsDir, fmt.Sprintf("%012d-%04d.parquet", rev, i))
}

// sortEvents orders rows the way every segment stores them.
func sortEvents(rows []model.Event) {
	slices.SortFunc(rows, compareEvents)
}

func compareEvents(a, b model.Event) int {
	if c := cmp.Compare(a.SessionID, b.SessionID); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// writeSegment writes sorted rows as the segment rel of store dir: the file
// is complete and fsynced when it returns, and described by the returned
// Segment (facts from fact revisions lo..hi). Callers clear _file_ first: it
// is stored empty because it is the source's path relative to the Dataset
// root, which only the catalog knows at query time.
func writeSegment(dir, rel string, rev, lo, hi int64, rows []model.Event) (seg Segment, err error) {
	abs := filepath.Join(dir, filepath.FromSlash(rel))
	f, err := os.OpenFile(abs, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return Segment{}, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(abs)
		}
	}()
	if err = fsx.Check(abs, fsx.FailCreate); err != nil {
		return Segment{}, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := parquet.NewGenericWriter[model.Event](bw,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.CreatedBy("pchronicle", "", ""),
	)
	seg = Segment{Path: rel, Revision: rev, MinFactRevision: lo, MaxFactRevision: hi}
	for i := range rows {
		seg.observe(&rows[i], i == 0 || rows[i].SessionID != rows[i-1].SessionID)
	}
	if _, err = w.Write(rows); err != nil {
		return Segment{}, err
	}
	if err = w.Close(); err != nil {
		return Segment{}, err
	}
	if err = bw.Flush(); err != nil {
		return Segment{}, err
	}
	if err = fsx.Check(abs, fsx.FailWrite); err != nil {
		return Segment{}, err
	}
	if err = f.Sync(); err != nil {
		return Segment{}, err
	}
	if err = fsx.Check(abs, fsx.FailSync); err != nil {
		return Segment{}, err
	}
	st, err := f.Stat()
	if err != nil {
		return Segment{}, err
	}
	seg.Bytes = st.Size()
	return seg, f.Close()
}

// observe extends the segment's ranges with one row (rows arrive sorted).
func (s *Segment) observe(e *model.Event, newSession bool) {
	if s.Rows == 0 {
		s.MinSession, s.MinSeq, s.MaxSeq, s.MinTS, s.MaxTS = e.SessionID, e.Seq, e.Seq, e.TS, e.TS
	}
	s.Rows++
	if newSession {
		s.Sessions++
	}
	s.MaxSession = e.SessionID
	s.MinSeq, s.MaxSeq = min(s.MinSeq, e.Seq), max(s.MaxSeq, e.Seq)
	if e.TS.Before(s.MinTS) {
		s.MinTS = e.TS
	}
	if e.TS.After(s.MaxTS) {
		s.MaxTS = e.TS
	}
}

// cursor reads a segment's rows in batches, decoded as T (model.Event, or a
// struct with a subset of its columns so that other columns are not read).
type cursor[T any] struct {
	f     *os.File
	r     *parquet.GenericReader[T]
	abs   string
	batch int
}

func openSegment[T any](abs string, batch int) (*cursor[T], error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		var pf *parquet.File
		if pf, err = parquet.OpenFile(f, st.Size()); err == nil {
			return &cursor[T]{f: f, r: parquet.NewGenericReader[T](pf), abs: abs, batch: batch}, nil
		}
	}
	f.Close()
	return nil, fmt.Errorf("%s: %w", abs, err)
}

// next returns the next batch, freshly allocated so callers may keep it, or
// io.EOF after the last one.
func (c *cursor[T]) next() ([]T, error) {
	buf := make([]T, c.batch)
	n, err := c.r.Read(buf)
	if n > 0 {
		return buf[:n], nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	return nil, fmt.Errorf("%s: %w", c.abs, err)
}

func (c *cursor[T]) close() {
	c.r.Close()
	c.f.Close()
}

// readSegment calls fn with each batch of the segment's rows, in file order.
func readSegment[T any](abs string, fn func([]T) error) error {
	c, err := openSegment[T](abs, 4096)
	if err != nil {
		return err
	}
	defer c.close()
	for {
		rows, err := c.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rows); err != nil {
			return err
		}
	}
}
