package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/engine"
)

func init() {
	register(func(e *env) *cobra.Command {
		var (
			sqlFlag, sqlFile, outFormat, outFile string
			explain                              bool
			maxRows                              int
		)
		cmd := &cobra.Command{
			Use:   "query [DATASET] [SQL]",
			Short: "Run read-only SQL over one or more Datasets",
			Long: `Run one read-only SQL statement (SELECT, VALUES, DESCRIBE or EXPLAIN, in
DuckDB's dialect) over Datasets. Every Dataset schema has six relations:
sources, runs, steps, tool_calls, events and projections (docs/query-model.md).

A positional DATASET (a path, or @pin from the config file) is mounted as the
schema "dataset", which is also the default: "runs" means "dataset.runs".
With --mount NAME=URI (repeatable) each Dataset is its own schema and names
must be qualified: "prod.runs". A positional Dataset and --mount are mutually
exclusive. Cross-Dataset joins are allowed; a join of two trajectory relations
of the same Dataset must include _file_ equality.

Sources are pruned by _file_ predicates before anything is read; --explain
prints how many sources each relation considered, skipped and resolved.`,
			Example: `  pchronicle query ./runs "SELECT agent_name, count(*) FROM runs GROUP BY 1"
  pchronicle query ./runs -f report.sql --format markdown
  echo "SUMMARIZE runs" | pchronicle query ./runs --sql -
  pchronicle query ./runs --sql "SELECT * FROM steps WHERE _file_ = 'a/trajectory.json'" --format jsonl
  pchronicle query ./runs "SELECT * FROM tool_calls" --format parquet -o tool_calls.parquet
  pchronicle query --mount live=./capture --mount archive=./archive \
      --sql "SELECT 'live', count(*) FROM live.runs UNION ALL SELECT 'archive', count(*) FROM archive.runs"`,
			Args: cobra.MaximumNArgs(2),
		}
		ds := addDatasetFlags(cmd)
		f := cmd.Flags()
		f.StringVar(&sqlFlag, "sql", "", "the SQL statement (instead of the SQL argument); - reads it from standard input")
		f.StringVarP(&sqlFile, "file", "f", "", "read the SQL statement from this file")
		f.StringVar(&outFormat, "format", fmtTable, "output format: table, markdown, csv, json, jsonl, arrow (an Arrow IPC stream) or parquet")
		f.StringVarP(&outFile, "output", "o", "", "write the result to this file, replaced once it is complete (arrow and parquet need it when stdout is a terminal)")
		f.IntVar(&maxRows, "max-rows", -1, "rows a table shows, the rest counted in its footer (0: all; default 40 on a terminal, all elsewhere)")
		f.BoolVar(&explain, "explain", false, "print the source pruning report (to stderr) before the result")
		cmd.RunE = func(cmd *cobra.Command, args []string) (err error) {
			if err := validQueryFormat(outFormat, outFile, e.stdout); err != nil {
				return err
			}
			if sqlFile != "" || sqlFlag == "-" {
				if sqlFlag, err = readSQL(e.stdin, sqlFlag, sqlFile); err != nil {
					return err
				}
			}
			positional, sqlText, err := splitQueryArgs(args, sqlFlag, len(ds.mounts) > 0)
			if err != nil {
				return err
			}
			_, eng, closeAll, err := ds.openEngine(cmd.Context(), positional)
			if err != nil {
				return err
			}
			defer closeAll()
			defer func() { err = inUserTerms(cmd, err) }()
			ctx, done := withNormalizing(cmd.Context(), e.stderr)
			if sqlText, err = expandPivot(ctx, eng, sqlText); err != nil {
				done()
				return err
			}
			if isColumnar(outFormat) {
				return queryColumnar(ctx, done, e, eng, sqlText, outFormat, outFile, explain)
			}
			rows, err := eng.Stream(ctx, sqlText, engine.QueryOptions{})
			done()
			if err != nil {
				return err
			}
			defer rows.Close()
			writeNotes(e.stderr, explain, rows.Pruning, rows.Warnings)
			return writeOutput(e.stdout, outFile, func(w io.Writer) error { return writeRows(w, outFormat, maxRows, rows) })
		}
		return cmd
	})
}

// splitQueryArgs sorts the positional arguments into the Dataset and the SQL.
func splitQueryArgs(args []string, sqlFlag string, mounted bool) (dataset, sqlText string, err error) {
	var rest []string
	if mounted {
		rest = args
	} else {
		if len(args) == 0 {
			return "", "", fmt.Errorf("no Dataset: give a path or @pin, or --mount NAME=URI")
		}
		dataset, rest = args[0], args[1:]
		if looksLikeSQL(dataset) {
			if _, err := os.Stat(dataset); err != nil {
				return "", "", fmt.Errorf("no Dataset: %q is SQL; give the Dataset first (a path, or @pin): pchronicle query ./runs %q", clip(dataset, 40), clip(dataset, 40))
			}
		}
	}
	switch {
	case sqlFlag != "" && len(rest) > 0:
		return "", "", fmt.Errorf("give the SQL either as an argument or with --sql, not both")
	case sqlFlag != "":
		sqlText = sqlFlag
	case len(rest) == 1:
		sqlText = rest[0]
	case len(rest) > 1:
		return "", "", fmt.Errorf("a positional Dataset and --mount are mutually exclusive: with --mount, the only argument is the SQL")
	}
	if strings.TrimSpace(sqlText) == "" {
		return "", "", fmt.Errorf("no SQL: give it as an argument or with --sql")
	}
	return dataset, sqlText, nil
}

// writeRows prints a streamed result as it is read; rows already printed
// stay printed when reading fails (the command then exits non-zero). A
// result cut at --max-output-rows says so in the output too, so a reader
// of the file alone cannot take it for the whole answer.
func writeRows(w io.Writer, outFormat string, maxRows int, rows *engine.Rows) error {
	if outFormat == fmtTable && slices.Equal(rows.Columns, []string{"explain_key", "explain_value"}) {
		return writePlan(w, rows)
	}
	rw := newRowWriter(w, outFormat, rows.Columns)
	rw.maxRows(maxRows)
	rw.jsonColumns(rows.Types)
	rw.columnTypes(rows.Types)
	n := 0
	for rows.Next() {
		if err := rw.Write(rows.Values()); err != nil {
			return err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		if errors.Is(err, engine.ErrTooManyRows) {
			err = tooManyRows(n)
			rw.stop(err.Error())
		}
		rw.Close()
		return err
	}
	return rw.Close()
}

// inUserTerms says why a query stopped in the terms of the command line:
// the flag whose limit it reached, or the interrupt the user sent.
func inUserTerms(cmd *cobra.Command, err error) error {
	switch {
	case err == nil:
		return nil
	case cmd.Context().Err() != nil:
		return fmt.Errorf("query interrupted (Ctrl-C or a signal): %w", err)
	case errors.Is(err, context.DeadlineExceeded):
		limit := "the default"
		if f := cmd.Flags().Lookup("timeout"); f != nil {
			limit = f.Value.String()
		}
		return fmt.Errorf("the query ran longer than --timeout (%s): raise --timeout, or 0 for none: %w", limit, err)
	}
	return err
}

// writePlan prints EXPLAIN's plan as DuckDB's CLI does: the drawn tree as
// it is, not a table cell with its line breaks escaped.
func writePlan(w io.Writer, rows *engine.Rows) error {
	for rows.Next() {
		v := rows.Values()
		if _, err := fmt.Fprintf(w, "%s:\n%s\n", plain(v[0]), strings.TrimRight(plain(v[1]), "\n")); err != nil {
			return err
		}
	}
	return rows.Err()
}

// tooManyRows is engine.ErrTooManyRows in the command's terms: the flag
// that sets the cap, and how many rows were written before it.
type tooManyRows int

func (n tooManyRows) Error() string {
	return fmt.Sprintf("the result has more than %s rows (--max-output-rows): add a LIMIT, or raise --max-output-rows (0: no limit)", commas(int64(n)))
}

func (tooManyRows) Unwrap() error { return engine.ErrTooManyRows }

// readSQL reads the statement of --sql - (standard input) or -f FILE.
func readSQL(stdin io.Reader, sqlFlag, file string) (string, error) {
	if file != "" && sqlFlag != "" {
		return "", fmt.Errorf("give the SQL either with -f or with --sql, not both")
	}
	var b []byte
	var err error
	if file != "" {
		b, err = os.ReadFile(file)
	} else {
		b, err = io.ReadAll(stdin)
	}
	if err != nil {
		return "", fmt.Errorf("reading the SQL: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		if file == "" {
			file = "standard input"
		}
		return "", fmt.Errorf("no SQL in %s", file)
	}
	return string(b), nil
}

// sqlStarts are the words a statement that query accepts begins with.
var sqlStarts = []string{"SELECT", "WITH", "FROM", "VALUES", "DESCRIBE", "EXPLAIN", "SUMMARIZE", "PIVOT", "UNPIVOT", "SHOW", "TABLE"}

// looksLikeSQL reports whether a positional argument is a statement rather
// than a Dataset, so `query "SELECT 1"` says that the Dataset is missing.
func looksLikeSQL(s string) bool {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "--") || strings.HasPrefix(s, "/*") {
		return true
	}
	fields := strings.Fields(s)
	return len(fields) > 1 && slices.Contains(sqlStarts, strings.ToUpper(strings.TrimLeft(fields[0], "(")))
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func writePruning(w io.Writer, reports []engine.RelationReport) {
	for _, r := range reports {
		fmt.Fprintf(w, "%s.%s: %d sources considered, %d skipped by _file_ pruning, %d resolved",
			r.Dataset, r.Relation, r.Considered, r.Skipped, len(r.Resolved))
		if len(r.Resolved) > 0 && len(r.Resolved) <= 10 {
			fmt.Fprintf(w, " (%s)", strings.Join(r.Resolved, ", "))
		}
		if r.Lean {
			fmt.Fprint(w, "; no free-text column read: normalized lean")
		}
		fmt.Fprintln(w)
	}
}
