package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/engine"
)

func init() {
	register(func(e *env) *cobra.Command {
		var (
			sqlFlag, outFormat, outFile string
			explain                     bool
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
  pchronicle query ./runs --sql "SELECT * FROM steps WHERE _file_ = 'a/trajectory.json'" --format jsonl
  pchronicle query ./runs "SELECT * FROM tool_calls" --format parquet -o tool_calls.parquet
  pchronicle query --mount live=./capture --mount archive=./archive \
      --sql "SELECT 'live', count(*) FROM live.runs UNION ALL SELECT 'archive', count(*) FROM archive.runs"`,
			Args: cobra.MaximumNArgs(2),
		}
		ds := addDatasetFlags(cmd)
		f := cmd.Flags()
		f.StringVar(&sqlFlag, "sql", "", "the SQL statement (instead of the SQL argument)")
		f.StringVar(&outFormat, "format", fmtTable, "output format: table, csv, json, jsonl, arrow (an Arrow IPC stream) or parquet")
		f.StringVarP(&outFile, "output", "o", "", "write the result to this file, replaced once it is complete (arrow and parquet need it when stdout is a terminal)")
		f.BoolVar(&explain, "explain", false, "print the source pruning report (to stderr) before the result")
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			if err := validQueryFormat(outFormat, outFile, e.stdout); err != nil {
				return err
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
			if isColumnar(outFormat) {
				return queryColumnar(cmd.Context(), e, eng, sqlText, outFormat, outFile, explain)
			}
			rows, err := eng.Stream(cmd.Context(), sqlText, engine.QueryOptions{})
			if err != nil {
				return err
			}
			defer rows.Close()
			writeNotes(e.stderr, explain, rows.Pruning, rows.Warnings)
			return writeOutput(e.stdout, outFile, func(w io.Writer) error { return writeRows(w, outFormat, rows) })
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
// stay printed when reading fails (the command then exits non-zero).
func writeRows(w io.Writer, outFormat string, rows *engine.Rows) error {
	rw := newRowWriter(w, outFormat, rows.Columns)
	for rows.Next() {
		if err := rw.Write(rows.Values()); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		rw.Close()
		return err
	}
	return rw.Close()
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
