package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
)

func init() { register(newFindCmd) }

// selection picks Storylines by coordinates; find and export share it.
type selection struct {
	source   string
	sessions []string
	run      string
}

func (s *selection) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.source, "source", "", "only the source with this Dataset-relative path (its _file_), e.g. a/trajectory.json")
	fs.StringArrayVar(&s.sessions, "session", nil, "only Storylines with this session_id (repeatable)")
	fs.StringVar(&s.run, "run", "", "only Storylines with this run_id (a main Storyline and its subagents)")
}

// checkSource fails when --source names a source no mounted Dataset holds,
// which would otherwise look like "no match".
func (s *selection) checkSource(snap *catalog.Snapshot) error {
	if s.source == "" {
		return nil
	}
	for _, d := range snap.Datasets {
		if _, err := snap.LookupSource(d.Mount.NamespacePath(), s.source); err == nil {
			return nil
		}
	}
	return fmt.Errorf("--source %q: no mounted Dataset has a source with that path (see `pchronicle ls`)", s.source)
}

var findColumns = []string{"dataset", "_file_", "session_id", "run_id", "agent_name", "agent_model_name", "step_count", "started_at"}

func newFindCmd(e *env) *cobra.Command {
	var (
		sel              selection
		agent, text, out string
	)
	cmd := &cobra.Command{
		Use:   "find [DATASET]",
		Short: "Locate Storylines by session, run, agent or text and print their coordinates",
		Long: `Locate Storylines and print their full coordinates: the Dataset, the source
(_file_) and the session_id — the identity export and the Go API take — plus
run_id, agent, model, step count and start time.

Criteria combine with AND; without any, every Storyline is listed:
  --session ID   session_id equals ID (repeatable: any of them)
  --run ID       run_id equals ID
  --agent NAME   agent_name or agent_id contains NAME (case-insensitive)
  --text TEXT    some step's message or reasoning contains TEXT (case-insensitive)
  --source PATH  only the source whose _file_ is PATH (a Dataset-relative path,
                 not a format hint); other sources are not read at all

find runs as SQL over the runs and steps relations, so --source prunes
sources before anything is normalized.`,
		Example: `  pchronicle find ./runs --session 0b5c3e1a
  pchronicle find ./runs --text "permission denied" --format jsonl
  pchronicle find ./runs --source harbor/trajectory.json --agent terminus
  pchronicle find --mount prod=./prod --mount staging=./staging --run run-42`,
		Args: cobra.MaximumNArgs(1),
	}
	ds := addDatasetFlags(cmd)
	f := cmd.Flags()
	sel.register(f)
	f.StringVar(&agent, "agent", "", "only Storylines whose agent_name or agent_id contains this (case-insensitive)")
	f.StringVar(&text, "text", "", "only Storylines with a step whose message or reasoning contains this (case-insensitive)")
	f.StringVar(&out, "format", fmtTable, "output format: table, csv, json or jsonl")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := validFormat(out); err != nil {
			return err
		}
		snap, eng, closeAll, err := ds.openEngine(cmd.Context(), firstArg(args))
		if err != nil {
			return err
		}
		defer closeAll()
		if err := sel.checkSource(snap); err != nil {
			return err
		}
		rw := newRowWriter(e.stdout, out, findColumns)
		for _, d := range snap.Datasets {
			ctx, done := withNormalizing(cmd.Context(), e.stderr)
			res, err := eng.Query(ctx, findSQL(d, sel, agent, text), engine.QueryOptions{})
			done()
			if err != nil {
				rw.Close() // the rows of the Datasets before stay printed
				return fmt.Errorf("Dataset %s: %w", d.Mount.NamespacePath(), err)
			}
			for _, row := range res.Rows {
				if err := rw.Write(row); err != nil {
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

// findSQL builds the lookup for one Dataset. Every user value is a quoted
// literal, and --source becomes a constant _file_ predicate on each
// relation, which the engine prunes on before resolving anything.
func findSQL(d *catalog.Dataset, sel selection, agent, text string) string {
	schema := engine.Ident(d.Mount.Alias)
	conds := []string{"true"}
	if sel.source != "" {
		conds = append(conds, "r._file_ = "+sqlLiteral(sel.source))
	}
	if len(sel.sessions) > 0 {
		conds = append(conds, "r.session_id IN ("+sqlList(sel.sessions)+")")
	}
	if sel.run != "" {
		conds = append(conds, "r.run_id = "+sqlLiteral(sel.run))
	}
	if agent != "" {
		conds = append(conds, fmt.Sprintf("(%s OR %s)", containsCI("r.agent_name", agent), containsCI("r.agent_id", agent)))
	}
	if text != "" {
		stepConds := []string{"s._file_ = r._file_", "s.session_id = r.session_id"}
		if sel.source != "" {
			stepConds = append(stepConds, "s._file_ = "+sqlLiteral(sel.source))
		}
		stepConds = append(stepConds, fmt.Sprintf("(%s OR %s)", containsCI("s.message_value", text), containsCI("s.reasoning", text)))
		conds = append(conds, fmt.Sprintf("EXISTS (SELECT 1 FROM %s.steps AS s WHERE %s)", schema, strings.Join(stepConds, " AND ")))
	}
	return fmt.Sprintf(`SELECT %s AS dataset, r._file_, r.session_id, r.run_id, r.agent_name, r.agent_model_name, r.step_count, r.started_at
FROM %s.runs AS r
WHERE %s
ORDER BY r._file_, r.session_id`, sqlLiteral(d.Mount.NamespacePath()), schema, strings.Join(conds, "\n  AND "))
}

// containsCI is a case-insensitive substring test with no LIKE wildcards to
// escape.
func containsCI(column, needle string) string {
	return fmt.Sprintf("strpos(lower(%s), lower(%s)) > 0", column, sqlLiteral(needle))
}

// sqlLiteral returns s as a SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func sqlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = sqlLiteral(s)
	}
	return strings.Join(q, ", ")
}
