package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Error policies, shared by every command that reads many sources.
const (
	errorsStrict = "strict"
	errorsReport = "report"
)

func validErrors(p string) error {
	if p != errorsStrict && p != errorsReport {
		return fmt.Errorf("unknown --errors %q (want strict or report)", p)
	}
	return nil
}

type inspectOptions struct {
	format    string
	steps     bool
	errors    string
	detection int64
}

func init() {
	register(func(e *env) *cobra.Command {
		o := &inspectOptions{}
		cmd := &cobra.Command{
			Use:   "inspect PATH...",
			Short: "Detect, normalize and summarize trajectory files",
			Long: `Detect the format of each file (or of every .json/.jsonl/.ndjson/.traj/.eval/.aider.chat.history.md file under a
directory, in path order, without following symbolic links), normalize it, and
print one row per Storyline: format, session and run ids, agent, model, step and
tool-call counts, token totals, status and warnings.

With --format json or jsonl, each Storyline is one JSON object per line whose
keys are the runs column names (see docs/query-model.md) plus "warnings";
--steps adds its normalized "steps" and "tool_calls".

A file no format recognizes is not a trajectory: it is skipped, and one line
on stderr counts such files and names a few (pchronicle ls --detect says why
each was not recognized). By default (--errors strict) the first unreadable
file stops the command with a non-zero exit. With --errors report, bad files
are listed on stderr after the output and the rest is still inspected. A PATH that cannot be
listed completely (missing, an unreadable directory, a path too long) fails
under both policies.`,
			Example: `  pchronicle inspect trajectory.json
  pchronicle inspect ./runs --errors report
  pchronicle inspect rollout.jsonl --format json --steps | jq .`,
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return runInspect(cmd, e, o, args)
			},
		}
		f := cmd.Flags()
		f.StringVar(&o.format, "format", fmtTable, "output format: table, csv, json or jsonl")
		f.BoolVar(&o.steps, "steps", false, "include normalized steps and tool calls")
		f.StringVar(&o.errors, "errors", errorsStrict, "error policy: strict (stop at the first bad file) or report (list bad files, continue)")
		f.Int64Var(&o.detection, "max-detection-bytes", format.DefaultMaxDetectionBytes, "bytes read from each file to detect its format")
		return cmd
	})
}

// inspectColumns are the table/CSV summary columns.
var inspectColumns = []string{"_file_", "format", "session_id", "run_id", "agent", "model",
	"steps", "tool_calls", "prompt_tokens", "completion_tokens", "status", "warnings"}

func runInspect(cmd *cobra.Command, e *env, o *inspectOptions, args []string) error {
	if err := validFormat(o.format); err != nil {
		return err
	}
	if err := validErrors(o.errors); err != nil {
		return err
	}
	if o.detection <= 0 {
		return fmt.Errorf("--max-detection-bytes: %d is not a positive number of bytes", o.detection)
	}
	ctx := cmd.Context()
	opts := ingest.Options{MaxDetectionBytes: o.detection}
	var table *rowWriter
	if o.format != fmtJSON && o.format != fmtJSONL {
		table = newRowWriter(e.stdout, o.format, inspectColumns)
	}
	var failures []error
	fail := func(err error) error {
		if o.errors == errorsStrict {
			return err
		}
		failures = append(failures, err)
		return nil
	}
	var skipped []string // files that are not trajectories
	err := inspectArgs(ctx, e, o, args, opts, table, fail, func(w string) { skipped = append(skipped, w) })
	if table != nil { // the files listed before a fatal error stay listed
		if cerr := table.Close(); err == nil {
			err = cerr
		}
	}
	reportWarnings(e.stderr, skipped)
	// Bad files found before a fatal error are still listed.
	for _, f := range failures {
		fmt.Fprintln(e.stderr, "error:", f)
	}
	if len(failures) > 0 {
		fmt.Fprintf(e.stderr, "%d file(s) could not be inspected\n", len(failures))
	}
	return err
}

// inspectArgs inspects every file of every argument, passing each bad file
// to fail and the warning of each file that is not a trajectory to skip
// (never a failure). A listing that fails stops the command under both
// error policies: report mode is for bad files of a complete listing.
func inspectArgs(ctx context.Context, e *env, o *inspectOptions, args []string, opts ingest.Options, table *rowWriter,
	fail func(error) error, skip func(warning string)) error {
	structured := table == nil
	for _, arg := range args {
		files, err := catalog.PeripheralFiles(ctx, arg)
		if err != nil {
			return err
		}
		for _, f := range files {
			if f.Err != nil {
				if err := fail(f.Err); err != nil {
					return err
				}
				continue
			}
			display := arg
			if f.File != "." {
				display = filepath.ToSlash(filepath.Join(arg, f.File))
			}
			_, err := ingest.NormalizeFile(ctx, f.Path, display, opts, func(sl *model.Storyline) error {
				if structured {
					return writeStorylineJSON(e.stdout, sl, o.steps)
				}
				if err := table.Write(summaryRow(sl)); err != nil {
					return err
				}
				if o.steps && o.format == fmtTable {
					return writeStepsTable(table, sl)
				}
				return nil
			})
			if errors.Is(err, format.ErrUnrecognized) {
				skip(catalog.NotTrajectoryWarning(display, err))
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err := fail(err); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func summaryRow(sl *model.Storyline) []any {
	r := &sl.Run
	return []any{r.File, r.SourceFormat, r.SessionID, r.RunID, r.AgentName, r.AgentModelName,
		r.StepCount, r.ToolCallCount, r.PromptTokens, r.CompletionTokens, r.Status, len(sl.Warnings)}
}

// writeStepsTable prints a Storyline's steps indented under its summary row.
func writeStepsTable(t *rowWriter, sl *model.Storyline) error {
	calls := map[string][]string{}
	for _, tc := range sl.ToolCalls {
		calls[tc.StepID] = append(calls[tc.StepID], fmt.Sprintf("%s(%s)->%s", tc.FunctionName, tc.ToolCallID, tc.ResultStatus))
	}
	for _, st := range sl.Steps {
		msg := model.Deref(st.MessageValue)
		if len(calls[st.StepID]) > 0 {
			msg = strings.Join(calls[st.StepID], " ") + " " + msg
		}
		copied := ""
		if st.IsCopiedContext {
			copied = "copied"
		}
		row := make([]any, len(inspectColumns))
		row[0] = "  step " + st.StepID
		row[1] = st.Source
		row[2] = st.MessageKind
		row[5] = st.ModelName
		row[8], row[9] = st.PromptTokens, st.CompletionTokens
		row[10] = copied
		row[11] = msg
		if err := t.Write(row); err != nil {
			return err
		}
	}
	return nil
}

// writeStorylineJSON prints one Storyline as a JSON object: the runs columns,
// then warnings, then (with steps) its steps and tool calls.
func writeStorylineJSON(w io.Writer, sl *model.Storyline, steps bool) error {
	run, err := jsonx.Marshal(&sl.Run)
	if err != nil {
		return err
	}
	warnings := make([]string, len(sl.Warnings))
	for i, wn := range sl.Warnings {
		warnings[i] = wn.String()
	}
	tail := map[string]any{"warnings": warnings}
	keys := []string{"warnings"}
	if steps {
		tail["steps"], tail["tool_calls"] = nonNil(sl.Steps), nonNil(sl.ToolCalls)
		keys = append(keys, "steps", "tool_calls")
	}
	var b strings.Builder
	b.Write(run[:len(run)-1])
	for _, k := range keys {
		v, err := jsonx.Marshal(tail[k])
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, ",%q:%s", k, v)
	}
	b.WriteString("}\n")
	_, err = io.WriteString(w, b.String())
	return err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
