// Package columnar writes query results as Arrow IPC streams and Parquet
// files (docs/sql.md, "Arrow and Parquet"): the one encoder behind the
// CLI's --format arrow|parquet, export's Parquet forms and the HTTP API's
// Arrow and Parquet answers. It writes Arrow record batches as they come,
// never a value at a time.
package columnar

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// RecordBatches is a result read as Arrow record batches (engine.ArrowRows).
type RecordBatches interface {
	Schema() *arrow.Schema
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
}

// WriteArrowStream writes the batches as an Arrow IPC stream; an error
// while reading leaves the stream without its end marker, so a reader sees
// it cut short rather than complete.
func WriteArrowStream(w io.Writer, rows RecordBatches) error {
	iw := ipc.NewWriter(struct{ io.Writer }{w}, ipc.WithSchema(rows.Schema())) // not closing the caller's file
	for rows.Next() {
		if err := iw.Write(rows.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return iw.Close()
}

// Parquet row groups: a group is cut at this many rows or about this many
// bytes, whichever comes first, so a writer holds one group in memory.
const (
	parquetGroupRows  = 128 << 10
	parquetGroupBytes = 64 << 20
)

// ParquetWriter writes record batches into one Parquet file (zstd, the
// Arrow schema stored so that Arrow readers get the exact types back). A
// JSON column, of the arrow.json extension type, gets Parquet's JSON
// logical type.
type ParquetWriter struct {
	pw *pqarrow.FileWriter
}

// NewParquetWriter starts a Parquet file of schema on w. A column Parquet
// cannot hold (an INTERVAL) is an error that names it.
func NewParquetWriter(w io.Writer, schema *arrow.Schema) (*ParquetWriter, error) {
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(parquetGroupRows))
	// The writer closes a sink that is an io.Closer: the caller's file
	// must stay open for it to sync and publish.
	pw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{w}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("a Parquet file cannot hold this result: %w (cast the column, e.g. to VARCHAR)", err)
	}
	return &ParquetWriter{pw: pw}, nil
}

// Write adds a batch's rows.
func (p *ParquetWriter) Write(rec arrow.RecordBatch) error {
	if err := p.pw.WriteBuffered(rec); err != nil {
		return err
	}
	if p.pw.RowGroupTotalBytesWritten() >= parquetGroupBytes {
		p.pw.NewBufferedRowGroup()
	}
	return nil
}

// Close writes the last row group and the footer, with footer as its
// key-value metadata.
func (p *ParquetWriter) Close(footer map[string]string) error {
	for k, v := range footer {
		if err := p.pw.AppendKeyValueMetadata(k, v); err != nil {
			p.pw.Close()
			return err
		}
	}
	return p.pw.Close()
}

// WriteParquet writes the batches as one Parquet file (ParquetWriter).
// footer, if not nil, gives key-value metadata for the file's footer once
// every batch is written: what is known only at the end, such as whether
// the result was truncated.
func WriteParquet(w io.Writer, rows RecordBatches, footer func() map[string]string) error {
	pw, err := NewParquetWriter(w, rows.Schema())
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := pw.Write(rows.RecordBatch()); err != nil {
			pw.Close(nil)
			return err
		}
	}
	if err := rows.Err(); err != nil {
		pw.Close(nil)
		return err
	}
	var kv map[string]string
	if footer != nil {
		kv = footer()
	}
	return pw.Close(kv)
}
