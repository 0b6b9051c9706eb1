package storyline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Row-group bounds of published files. A session_id lookup reads only the
// row groups whose min/max session_id can match, so groups must be small
// enough that one is a small fraction of a large store, yet large enough to
// keep footers small and scans efficient.
//
// Temporary files (a query's scratch relations, which the normalization
// cache keeps, and an import's spill runs) cut smaller groups: a group is
// buffered whole until it is flushed, while the rows' producer holds memory
// of its own, and 16 MB groups were a sixth of a first query's peak RSS.
// Scratch sets written at the same time split tempGroupBytes between them,
// down to minTempGroupBytes.
const (
	groupRows         = 64 << 10
	groupBytes        = 16 << 20 // estimated uncompressed bytes
	tempGroupBytes    = 4 << 20
	minTempGroupBytes = 1 << 20
	batchRows         = 1024
)

// row is the set of model row types a generation stores.
type row interface {
	model.Run | model.Step | model.ToolCall
}

// codecs: published files are zstd at its fastest level (level 3 cost ~20%
// of an import's CPU for a few percent of size); spill files are temporary
// and usually still in the page cache when merged, so they are not
// compressed at all (snappy cost ~15% of an import's CPU in profiles).
var (
	publishCodec compress.Codec = &zstd.Codec{Level: zstd.SpeedFastest}
	spillCodec   compress.Codec = &uncompressed.Codec{}
)

// freeTextColumns hold texts and JSON documents (model.Column.FreeText): no
// query narrows them by range, so their pages and column chunks carry no
// min/max bounds. Finding the bounds compared every value of a page, and a
// chunk's bounds are whole values (its longest tool result was copied into
// the footer).
var freeTextColumns = func() []string {
	var names []string
	for _, rel := range Tables {
		for _, c := range model.FreeTextColumns(rel) {
			if !slices.Contains(names, c) {
				names = append(names, c)
			}
		}
	}
	return names
}()

// tableWriter writes rows of one relation to a Parquet file, cutting row
// groups by row count and estimated size.
type tableWriter[T row] struct {
	f         *os.File
	w         *parquet.GenericWriter[T]
	size      func(*T) int64
	batch     []T
	groupRows int64
	groupSize int64
	groupMax  int64 // groupBytes, or tempGroupBytes for a file that is not durable
	durable   bool  // published file: fsync and expose failure points
	info      TableInfo
}

func newTableWriter[T row](path string, codec compress.Codec, size func(*T) int64, durable bool) (*tableWriter[T], error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	opts := []parquet.WriterOption{parquet.Compression(codec), parquet.CreatedBy("pchronicle", "", "")}
	for _, c := range freeTextColumns {
		opts = append(opts, parquet.SkipPageBounds(c))
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	groupMax := int64(groupBytes)
	if !durable {
		groupMax = tempGroupBytes
	}
	return &tableWriter[T]{f: f, w: w, size: size, durable: durable, groupMax: groupMax, batch: make([]T, 0, batchRows)}, nil
}

func (t *tableWriter[T]) write(r *T) error {
	sz := t.size(r)
	if t.groupRows > 0 && (t.groupRows >= groupRows || t.groupSize+sz > t.groupMax) {
		if err := t.flushGroup(); err != nil {
			return err
		}
	}
	t.batch = append(t.batch, *r)
	t.groupRows++
	t.groupSize += sz
	t.info.Rows++
	if len(t.batch) == cap(t.batch) {
		return t.flushBatch()
	}
	return nil
}

func (t *tableWriter[T]) flushBatch() error {
	if len(t.batch) == 0 {
		return nil
	}
	_, err := t.w.Write(t.batch)
	clear(t.batch) // drop references so strings can be collected
	t.batch = t.batch[:0]
	return err
}

func (t *tableWriter[T]) flushGroup() error {
	if err := t.flushBatch(); err != nil {
		return err
	}
	if err := t.w.Flush(); err != nil {
		return err
	}
	t.info.RowGroups++
	t.groupRows, t.groupSize = 0, 0
	return nil
}

// close writes the footer, fsyncs and closes the file, and returns its
// manifest entry (File is left to the caller).
func (t *tableWriter[T]) close() (TableInfo, error) {
	err := t.flushBatch()
	if err == nil && t.groupRows > 0 {
		t.info.RowGroups++
	}
	if err == nil {
		err = t.w.Close()
	}
	if err == nil && t.durable {
		err = t.sync()
	}
	if err == nil {
		var st os.FileInfo
		if st, err = t.f.Stat(); err == nil {
			t.info.Bytes = st.Size()
		}
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return t.info, err
}

func (t *tableWriter[T]) sync() error {
	if err := fsx.Check(t.f.Name(), fsx.FailWrite); err != nil {
		return err
	}
	if err := t.f.Sync(); err != nil {
		return err
	}
	return fsx.Check(t.f.Name(), fsx.FailSync)
}

// abort closes and removes a partially written file.
func (t *tableWriter[T]) abort() {
	t.f.Close()
	os.Remove(t.f.Name())
}

// tableReader streams rows of a Parquet file in batches.
type tableReader[T row] struct {
	f    *os.File
	r    *parquet.GenericReader[T]
	buf  []T
	pos  int
	path string
}

func openTable[T row](path string) (*tableReader[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	return &tableReader[T]{f: f, r: parquet.NewGenericReader[T](pf), path: path}, nil
}

// next returns the next row, or nil at the end of the file. The row is
// valid until the next call.
func (t *tableReader[T]) next() (*T, error) {
	if t.pos < len(t.buf) {
		t.pos++
		return &t.buf[t.pos-1], nil
	}
	if t.buf == nil {
		t.buf = make([]T, batchRows)
	}
	t.buf = t.buf[:cap(t.buf)]
	clear(t.buf)
	n, err := t.r.Read(t.buf)
	t.buf, t.pos = t.buf[:n], 0
	if n == 0 {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w", t.path, err)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", t.path, err)
	}
	t.pos = 1
	return &t.buf[0], nil
}

func (t *tableReader[T]) close() error {
	t.r.Close()
	return t.f.Close()
}

// eachRow calls fn for every row of the Parquet file at path.
func eachRow[T row](ctx context.Context, path string, fn func(*T) error) error {
	t, err := openTable[T](path)
	if err != nil {
		return err
	}
	defer t.close()
	for i := 0; ; i++ {
		if i%batchRows == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r, err := t.next()
		if err != nil || r == nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
}

// Sort orders and size estimates per relation. Rows sort by session_id so
// lookups prune row groups; _file_ and the row's index make the order total
// and therefore the output deterministic.

func cmpRun(a, b *model.Run) int {
	return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.File, b.File))
}

func cmpStep(a, b *model.Step) int {
	return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.File, b.File), cmp.Compare(a.StepIndex, b.StepIndex))
}

func cmpToolCall(a, b *model.ToolCall) int {
	return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.File, b.File), cmp.Compare(a.CallIndex, b.CallIndex))
}

// rowOverhead approximates the fixed in-memory cost of a buffered row
// beyond its string bytes: the struct itself, one allocation per non-nil
// pointer field, and the sort index (measured on synthetic steps: RSS was
// about 4x the budget with 160).
const rowOverhead = 320

func sizeRun(r *model.Run) int64 {
	return rowOverhead + strLen(r.File, r.RunID, r.SessionID, r.Status, r.SourceFormat) +
		ptrLen(r.OriginalSessionID, r.TrajectoryID, r.ParentSessionID, r.AgentID, r.AgentName,
			r.AgentVersion, r.AgentModelName, r.ContinuedTrajectoryRef, r.SubagentRefs, r.Extra)
}

func sizeStep(s *model.Step) int64 {
	return rowOverhead + strLen(s.File, s.RunID, s.SessionID, s.StepID, s.Source, s.MessageKind) +
		ptrLen(s.MessageValue, s.Reasoning, s.ModelName, s.Observation, s.Extra)
}

func sizeToolCall(c *model.ToolCall) int64 {
	return rowOverhead + strLen(c.File, c.RunID, c.SessionID, c.StepID, c.ToolCallID, c.FunctionName, c.ResultStatus, c.ResultLink) +
		ptrLen(c.Arguments, c.Result, c.ResultStepID, c.Extra)
}

func strLen(ss ...string) int64 {
	var n int
	for _, s := range ss {
		n += len(s)
	}
	return int64(n)
}

func ptrLen(ps ...*string) int64 {
	var n int
	for _, p := range ps {
		if p != nil {
			n += len(*p)
		}
	}
	return int64(n)
}
