package iceberg

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// batchRows is the number of rows per Arrow record batch handed to the
// Iceberg writer.
const batchRows = 8192

// arrowSchema is the Arrow form of a relation's fixed schema, with the
// Iceberg field ids the writer needs.
func arrowSchema(rel string) (*arrow.Schema, error) {
	sc, err := Schema(rel)
	if err != nil {
		return nil, err
	}
	return table.SchemaToArrowSchema(sc, nil, true, false)
}

// GenerationRows reads a staged generation's rows: those of relation rel
// whose _file_ is in keep, as Arrow record batches in the generation's
// order (sorted by session_id).
func GenerationRows(g *storyline.Generation) RowSource {
	return func(rel string, keep map[string]bool) (array.RecordReader, error) {
		return generationRows(g, rel, keep)
	}
}

func generationRows(g *storyline.Generation, rel string, keep map[string]bool) (array.RecordReader, error) {
	sc, err := arrowSchema(rel)
	if err != nil {
		return nil, err
	}
	// Each row keeps its input as _file_, so (_file_, session_id) is unique
	// with the ids the inputs gave: the ids a generation qualified because
	// two of its inputs shared one are restored (they would depend on which
	// inputs one import, or one shard, held).
	ids := g.InputIDs()
	var rows iter.Seq2[arrow.RecordBatch, error]
	switch rel {
	case model.RelRuns:
		rows = batches(g.Path(rel), sc, keep, func(r *model.Run) string { ids.Run(r); return r.File })
	case model.RelSteps:
		rows = batches(g.Path(rel), sc, keep, func(r *model.Step) string { ids.Step(r); return r.File })
	case model.RelToolCalls:
		rows = batches(g.Path(rel), sc, keep, func(r *model.ToolCall) string { ids.ToolCall(r); return r.File })
	default:
		return nil, fmt.Errorf("iceberg: an import has no %s rows", rel)
	}
	return array.ReaderFromIter(sc, rows), nil
}

// batches streams the rows of one Parquet file of T whose _file_ is in keep;
// file returns a row's _file_ after restoring its input's ids.
func batches[T any](path string, sc *arrow.Schema, keep map[string]bool, file func(*T) string) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(nil, err)
			return
		}
		defer f.Close()
		r := parquet.NewGenericReader[T](f)
		defer r.Close()
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		buf := make([]T, 1024)
		pending := 0
		flush := func() bool {
			pending = 0
			return yield(b.NewRecordBatch(), nil) // the reader owns (releases) it
		}
		for {
			n, err := r.Read(buf)
			for i := range n {
				if !keep[file(&buf[i])] {
					continue
				}
				if err := appendRow(b, model.Values(&buf[i])); err != nil {
					yield(nil, fmt.Errorf("%s: %w", path, err))
					return
				}
				if pending++; pending == batchRows && !flush() {
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					yield(nil, fmt.Errorf("%s: %w", path, err))
					return
				}
				break
			}
		}
		if pending > 0 {
			flush()
		}
	}
}

// appendRow appends one row's values (model.Values) to b's columns.
func appendRow(b *array.RecordBuilder, vals []any) error {
	for i, v := range vals {
		fb := b.Field(i)
		if v == nil {
			fb.AppendNull()
			continue
		}
		switch fb := fb.(type) {
		case *array.StringBuilder:
			fb.Append(v.(string))
		case *array.Int64Builder:
			fb.Append(v.(int64))
		case *array.Float64Builder:
			fb.Append(v.(float64))
		case *array.BooleanBuilder:
			fb.Append(v.(bool))
		case *array.TimestampBuilder:
			fb.Append(arrow.Timestamp(v.(time.Time).UnixMicro()))
		default:
			return fmt.Errorf("column %d: no Arrow builder for %T", i, v)
		}
	}
	return nil
}
