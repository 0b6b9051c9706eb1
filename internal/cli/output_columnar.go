package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/pchronicle/pchronicle/internal/columnar"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/export"
	"github.com/pchronicle/pchronicle/internal/fsx"
)

// Columnar output formats (docs/cli.md, "Arrow and Parquet"): a query's
// result as an Arrow IPC stream or a Parquet file, with DuckDB's types,
// written from the engine's Arrow record batches as they come.
const (
	fmtArrow   = "arrow"
	fmtParquet = "parquet"
)

func isColumnar(format string) bool { return format == fmtArrow || format == fmtParquet }

// queryFormats are the values of query's --format: the row formats and the
// columnar ones.
var queryFormats = append(slices.Clone(rowFormats), fmtArrow, fmtParquet)

// validQueryFormat accepts the row formats and the columnar ones; a
// columnar format is binary, so it needs -o or a stdout that is not a
// terminal.
func validQueryFormat(format, out string, stdout io.Writer) error {
	if !slices.Contains(queryFormats, format) {
		return fmt.Errorf("unknown --format %q (want %s)", format, orList(queryFormats))
	}
	if !isColumnar(format) {
		return nil
	}
	return notToTerminal(format, out, stdout)
}

// notToTerminal refuses to write a binary format to a terminal.
func notToTerminal(format, out string, stdout io.Writer) error {
	if out == "" && isTerminal(stdout) {
		return fmt.Errorf("--format %s writes binary data: give -o FILE, or redirect or pipe stdout", format)
	}
	return nil
}

// validExportEncoding checks export's --format: jsonl, or parquet, which
// is binary like query's columnar formats.
func validExportEncoding(enc, out string, stdout io.Writer) error {
	switch enc {
	case "jsonl":
		return nil
	case fmtParquet:
		return notToTerminal(enc, out, stdout)
	}
	return fmt.Errorf("unknown --format %q (want jsonl or parquet)", enc)
}

// newExportWriter is the export writer of format as: JSONL (or ATIF files
// in dir), or its Parquet form.
func newExportWriter(as string, w io.Writer, dir string, parquet bool) (export.Writer, error) {
	if parquet {
		return export.NewParquet(as, w)
	}
	return export.New(as, w, dir)
}

// queryColumnar runs the query as Arrow record batches and writes them.
// queryColumnar runs a query whose result is written as Arrow or Parquet;
// normalized is called once the sources are read (the progress display ends).
func queryColumnar(ctx context.Context, normalized func(), e *env, eng *engine.Engine, sqlText, format, out string, explain bool) error {
	rows, err := eng.StreamArrow(ctx, sqlText, engine.QueryOptions{})
	normalized()
	if err != nil {
		return err
	}
	defer rows.Close()
	writeNotes(e.stderr, explain, rows.Pruning, rows.Warnings)
	return writeOutput(e.stdout, out, func(w io.Writer) error {
		return writeColumnar(w, format, rows)
	})
}

// writeNotes prints what a query says besides its rows: the pruning report
// (--explain) and its sources' warnings.
func writeNotes(stderr io.Writer, explain bool, pruning []engine.RelationReport, warnings []string) {
	if explain {
		writePruning(stderr, pruning)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "pchronicle: warning:", w)
	}
}

// writeOutput runs write on the file out, which is replaced atomically once
// write succeeds (a failed or interrupted write leaves an existing file as
// it was and no partial one; a device or FIFO, such as /dev/stdout or
// >(gzip), is written in place), or on stdout when out is empty.
func writeOutput(stdout io.Writer, out string, write func(io.Writer) error) error {
	if out == "" {
		return write(stdout)
	}
	if fi, err := os.Stat(out); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		f, err := os.OpenFile(out, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return errors.Join(write(f), f.Close())
	}
	return fsx.WriteAtomic(out, 0o644, write)
}

// writeColumnar writes every batch of rows as an Arrow IPC stream or a
// Parquet file.
func writeColumnar(w io.Writer, format string, rows columnar.RecordBatches) error {
	if format == fmtArrow {
		return columnar.WriteArrowStream(w, rows)
	}
	return columnar.WriteParquet(w, rows, nil)
}
