package engine

import (
	"bufio"
	"context"
	"database/sql/driver"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	_ "github.com/apache/arrow-go/v18/arrow/extensions" // registers arrow.json, so JSON columns read back typed
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/duckdb/duckdb-go/v2"
)

// Columnar results (docs/sql.md, "Arrow and Parquet"): a query's result
// can come as Arrow record batches instead of rows. The worker runs the
// statement through DuckDB's Arrow interface, which hands over DuckDB's
// own vectors as Arrow arrays, and writes them as an Arrow IPC stream
// into frameArrow frames; the engine reads that stream back with arrow-go.
// No value is converted one by one on either side, so the types are
// DuckDB's: timestamps with their zone, lists, structs, maps, decimals.
// DuckDB hands JSON over as plain strings; the worker marks such a column
// with Arrow's canonical JSON extension type (arrow.json), which the IPC
// stream carries as field metadata and Parquet as its JSON logical type.

// ArrowRows is a query's result as Arrow record batches, read from the
// worker as the caller asks for them. The row cap applies as to Rows: a
// batch that crosses it is cut. It holds a DuckDB instance (and a Gate
// slot) until Close.
type ArrowRows struct {
	*running
	src    *workerRows
	reader *ipc.Reader
	rec    arrow.RecordBatch // the current batch, owned
	cut    bool              // the current batch was cut at the row cap
}

// StreamArrow runs one read-only statement, like Stream, and returns its
// result as Arrow record batches. The caller must Close them.
func (e *Engine) StreamArrow(ctx context.Context, sqlText string, opts QueryOptions) (*ArrowRows, error) {
	var r *ArrowRows
	err := e.run(ctx, sqlText, opts, func(q *running) error {
		var src *workerRows
		err := q.inst.conn.Raw(func(dc any) error {
			w, ok := dc.(*worker)
			if !ok {
				return fmt.Errorf("an Arrow result needs a query worker, not %T", dc)
			}
			var err error
			src, err = w.arrowQuery(q.ctx, sqlText)
			return err
		})
		if err != nil {
			return err
		}
		// The reader reads the stream's schema at once: an error that
		// comes before the first batch (a binder's, a failed cast) is
		// returned here, before a caller has written anything.
		reader, err := ipc.NewReader(src)
		if err != nil {
			src.Close()
			return workerFirst(src.err, err)
		}
		r = &ArrowRows{running: q, src: src, reader: reader}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// workerFirst prefers the worker's own error (DuckDB's, or its death) over the IPC
// reader's wrapping of it.
func workerFirst(workerErr, err error) error {
	if workerErr != nil && workerErr != io.EOF {
		return workerErr
	}
	return err
}

// Schema is the result's Arrow schema.
func (r *ArrowRows) Schema() *arrow.Schema { return r.reader.Schema() }

// Next reads the next record batch; false at the end, at the row cap, or
// on error.
func (r *ArrowRows) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.cut { // rows are left past the cap
		r.capped()
		return false
	}
	for {
		if r.closed || r.err != nil || r.truncated {
			return false
		}
		if !r.reader.Next() {
			err := r.reader.Err()
			if err == nil {
				err = r.endOfStream()
			}
			if err != nil {
				r.err = stopped(r.ctx, workerFirst(r.src.err, err), r.limits)
			}
			return false
		}
		rec := r.reader.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		if r.capped() {
			return false
		}
		rec.Retain()
		if left := r.maxRows - r.n; r.maxRows > 0 && rec.NumRows() > left {
			cut := rec.NewSlice(0, left)
			rec.Release()
			rec, r.cut = cut, true
		}
		r.n += rec.NumRows()
		r.rec = rec
		return true
	}
}

// endOfStream reads the worker's end of the query after the stream's end
// marker, so that the worker is ready for the next one without a cancel.
func (r *ArrowRows) endOfStream() error {
	switch err := r.src.fill(); err {
	case io.EOF:
		return nil
	case nil:
		return r.src.w.protocolError("data after the end of an Arrow stream")
	default:
		return err
	}
}

// RecordBatch returns the current batch; it is valid until the next Next
// or Close (Retain it to keep it longer).
func (r *ArrowRows) RecordBatch() arrow.RecordBatch { return r.rec }

// RowsRead is the number of rows handed out so far.
func (r *ArrowRows) RowsRead() int64 { return r.n }

// Close stops a query still streaming and releases the instance and the
// Gate slot. It is safe to call twice.
func (r *ArrowRows) Close() error {
	if r.closed {
		return nil
	}
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	r.reader.Release()
	err := r.src.Close()
	r.end()
	return err
}

// arrowQuery runs one statement whose result streams as an Arrow IPC
// stream: the rows read it as an io.Reader.
func (w *worker) arrowQuery(ctx context.Context, query string) (*workerRows, error) {
	r := w.startQuery(ctx, frameArrow)
	if err := w.send(frameArrowQuery, workerStatement{SQL: query}); err != nil {
		return nil, r.end(err)
	}
	return r, nil
}

// Read reads the Arrow IPC stream of an arrowQuery; its end is io.EOF, and
// an error the worker sent (DuckDB's) ends it too.
func (r *workerRows) Read(p []byte) (int, error) {
	if err := r.fill(); err != nil {
		return 0, err
	}
	n := copy(p, r.batch.b)
	r.batch.b = r.batch.b[n:]
	return n, nil
}

// arrowQuery runs an Arrow query in the worker: it answers with the IPC
// stream in frames of about rowsFrameBytes, then done, or the error that
// ended it. Only a failure to write is returned: the engine is gone.
func (w *workerServer) arrowQuery(n uint64, stmt workerStatement) error {
	ctx, done := w.started(n)
	defer done()
	// A statement DESCRIBE cannot bind fails again below, with its error
	// about the user's own text.
	jsonCols, _ := w.jsonColumns(ctx, stmt.SQL)
	var rr array.RecordReader
	err := w.conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rr, err = a.QueryContext(ctx, stmt.SQL)
		return err
	})
	if err != nil {
		return w.answer(err)
	}
	defer rr.Release()
	schema := markJSON(rr.Schema(), jsonCols)
	out := &frameWriter{bw: w.bw}
	iw := ipc.NewWriter(out, ipc.WithSchema(schema))
	for rr.Next() {
		rec := rr.RecordBatch()
		marked := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
		err := iw.Write(marked)
		marked.Release()
		if out.err != nil {
			return out.err
		}
		if err != nil {
			return w.answer(err)
		}
		if ctx.Err() != nil {
			return w.answer(ctx.Err())
		}
	}
	if err := rr.Err(); err != nil {
		return w.answer(err)
	}
	if err := iw.Close(); err != nil { // the end-of-stream marker
		if out.err != nil {
			return out.err
		}
		return w.answer(err)
	}
	if err := out.flush(); err != nil {
		return err
	}
	if err := writeFrame(w.bw, frameDone, nil); err != nil {
		return err
	}
	return w.bw.Flush()
}

// jsonColumns returns which of a statement's result columns are JSON,
// which DuckDB's Arrow schema does not say (it names JSON only with its
// lossless conversion, which also makes HUGEINT opaque bytes, and sum()
// of a BIGINT is one). DESCRIBE binds the statement without running it.
func (w *workerServer) jsonColumns(ctx context.Context, query string) ([]bool, error) {
	rows, err := w.conn.QueryContext(ctx, "DESCRIBE "+query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []bool
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		typ, _ := vals[1].(string) // column_name, column_type, ...
		out = append(out, typ == "JSON")
	}
	return out, rows.Err()
}

// markJSON returns schema with the JSON columns marked as Arrow's canonical
// JSON extension type (in field metadata, which is how IPC carries it).
func markJSON(schema *arrow.Schema, json []bool) *arrow.Schema {
	if len(json) != schema.NumFields() {
		return schema // no DESCRIBE, or it disagrees with the result: mark nothing
	}
	fields := schema.Fields()
	marked := false
	for i, f := range fields {
		if !json[i] || f.Type.ID() != arrow.STRING {
			continue
		}
		keys, vals := f.Metadata.Keys(), f.Metadata.Values()
		keys = append(keys, ipc.ExtensionTypeKeyName, ipc.ExtensionMetadataKeyName)
		vals = append(vals, "arrow.json", "")
		fields[i].Metadata = arrow.NewMetadata(keys, vals)
		marked = true
	}
	if !marked {
		return schema
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
}

// frameWriter cuts an IPC stream into frameArrow frames of about
// rowsFrameBytes. err is the first failure to write to the engine.
type frameWriter struct {
	bw  *bufio.Writer
	buf []byte
	err error
}

func (f *frameWriter) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	f.buf = append(f.buf, p...)
	if len(f.buf) >= rowsFrameBytes {
		if err := f.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (f *frameWriter) flush() error {
	if f.err == nil && len(f.buf) > 0 {
		f.err = writeFrame(f.bw, frameArrow, f.buf)
		f.buf = f.buf[:0]
	}
	return f.err
}
