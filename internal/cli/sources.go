package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

func init() {
	register(newLsCmd)
	register(newStatsCmd)
}

func newLsCmd(e *env) *cobra.Command {
	var outFormat string
	var detect bool
	cmd := &cobra.Command{
		Use:     "ls [DATASET]",
		Aliases: []string{"list"},
		Short:   "List the sources of Datasets",
		Long: `Discover and pin the sources of a Dataset (or of every --mount) and list them:
one row per Storyline store, canonical events store, compact source or
peripheral file, with its pinned revision. Nothing is read or normalized.

With --errors report, a candidate that cannot be pinned is listed with status
error instead of failing the command; a missing root or an exceeded limit
fails under both policies.

--detect runs format detection on every file source (reading at most
--max-detection-bytes of each, at its pinned version) and adds two columns:
detected (the format and layout an adapter recognizes) and detection (ok, or
why no adapter recognized the file: such a file is not a trajectory and a
query reads no rows from it).`,
		Example: `  pchronicle ls ./runs
  pchronicle ls --mount prod=./prod --mount staging=./staging --format jsonl
  pchronicle ls @nightly --errors report
  pchronicle ls ./job --detect`,
		Args: cobra.MaximumNArgs(1),
	}
	ds := addDatasetFlags(cmd)
	cmd.Flags().StringVar(&outFormat, "format", fmtTable, "output format: table, csv, json or jsonl")
	cmd.Flags().BoolVar(&detect, "detect", false, "detect each file's format (or why none applies) and show it")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := validFormat(outFormat); err != nil {
			return err
		}
		snap, _, err := ds.open(cmd.Context(), firstArg(args))
		if err != nil {
			return err
		}
		defer snap.Close()
		cols := model.ColumnNames(model.RelSources)
		if detect {
			cols = append(cols, "detected", "detection")
		}
		rw := newRowWriter(e.stdout, outFormat, cols)
		for _, d := range snap.Datasets {
			for i, r := range d.SourceRows() {
				vals := model.Values(&r)
				if detect {
					vals = append(vals, detection(cmd.Context(), d.Sources[i])...)
				}
				if err := rw.Write(vals); err != nil {
					return err
				}
			}
		}
		return rw.Close()
	}
	return cmd
}

// detection is the detected and detection columns of one source.
func detection(ctx context.Context, src *catalog.Source) []any {
	if src.Kind != catalog.KindFile {
		return []any{string(src.Kind) + " store", "ok"}
	}
	det, err := src.Detect(ctx)
	var unrecognized *format.UnrecognizedError
	switch {
	case errors.As(err, &unrecognized):
		return []any{nil, "not a trajectory: " + unrecognized.Reason}
	case err != nil:
		return []any{nil, "error: " + catalog.RedactURI(err.Error())}
	}
	return []any{det.Format + "/" + det.Layout, "ok"}
}

// statsSQL counts each source's rows; run per Dataset and merged in Go.
const statsSQL = `SELECT _file_, count(*) AS storylines, sum(step_count) AS steps, sum(tool_call_count) AS tool_calls,
  sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens, sum(cost_usd) AS cost_usd
FROM %s.runs GROUP BY _file_`

const statsEventsSQL = `SELECT _file_, count(*) AS events FROM %s.events GROUP BY _file_`

func newStatsCmd(e *env) *cobra.Command {
	var outFormat string
	cmd := &cobra.Command{
		Use:   "stats [DATASET]",
		Short: "Count Storylines, steps, tool calls, tokens and events per source and per Dataset",
		Long: `Resolve every source of the Dataset(s) and print, per source, the number of
Storylines, steps, tool calls, events, and the computed token and cost totals,
followed by one total row per Dataset (its _file_ is "*").`,
		Example: `  pchronicle stats ./runs
  pchronicle stats --mount a=./a --mount b=./b --format csv`,
		Args: cobra.MaximumNArgs(1),
	}
	ds := addDatasetFlags(cmd)
	cmd.Flags().StringVar(&outFormat, "format", fmtTable, "output format: table, csv, json or jsonl")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := validFormat(outFormat); err != nil {
			return err
		}
		snap, eng, closeAll, err := ds.openEngine(cmd.Context(), firstArg(args))
		if err != nil {
			return err
		}
		defer closeAll()
		cols := []string{"dataset", "_file_", "source_type", "format", "status", "storylines", "steps", "tool_calls", "events",
			"prompt_tokens", "completion_tokens", "cost_usd"}
		rw := newRowWriter(e.stdout, outFormat, cols)
		for _, d := range snap.Datasets {
			rows, err := datasetStats(cmd, eng, d)
			if err != nil {
				rw.Close() // the rows of the Datasets before stay printed
				return err
			}
			for _, r := range rows {
				if err := rw.Write(r); err != nil {
					return err
				}
			}
		}
		if err := rw.Close(); err != nil {
			return err
		}
		reportWarnings(e.stderr, snap.Warnings())
		return nil
	}
	return cmd
}

// datasetStats returns one row per source plus a total row.
func datasetStats(cmd *cobra.Command, eng *engine.Engine, d *catalog.Dataset) ([][]any, error) {
	schema := engine.Ident(d.Mount.Alias)
	ctx, done := withNormalizing(cmd.Context(), cmd.ErrOrStderr())
	runs, err := eng.Query(ctx, fmt.Sprintf(statsSQL, schema), engine.QueryOptions{})
	done()
	if err != nil {
		return nil, err
	}
	evs, err := eng.Query(cmd.Context(), fmt.Sprintf(statsEventsSQL, schema), engine.QueryOptions{})
	if err != nil {
		return nil, err
	}
	byFile := map[string][]any{}
	for _, r := range runs.Rows {
		byFile[r[0].(string)] = r[1:]
	}
	events := map[string]any{}
	for _, r := range evs.Rows {
		events[r[0].(string)] = r[1]
	}
	total := []any{d.Mount.NamespacePath(), "*", nil, nil, nil, int64(0), int64(0), int64(0), int64(0), nil, nil, nil}
	var out [][]any
	for _, s := range d.Sources {
		counts := byFile[s.File]
		if counts == nil {
			counts = []any{int64(0), nil, nil, nil, nil, nil}
		}
		ev := events[s.File]
		if ev == nil {
			ev = int64(0)
		}
		var format any
		if f := s.Format(); f != "" {
			format = f
		}
		row := []any{d.Mount.NamespacePath(), s.File, string(s.Kind), format, s.Status(),
			counts[0], counts[1], counts[2], ev, counts[3], counts[4], counts[5]}
		for i := 5; i < len(row); i++ {
			total[i] = addNumbers(total[i], row[i])
		}
		out = append(out, row)
	}
	return append(out, total), nil
}

// addNumbers adds SQL aggregate values (int64, float64, HUGEINT strings
// never occur for these sums) treating nil as absent.
func addNumbers(a, b any) any {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return x + y
		}
	case float64:
		if y, ok := b.(float64); ok {
			return x + y
		}
	}
	return a
}

func firstArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}
