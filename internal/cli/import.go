package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/openhands"
	"github.com/pchronicle/pchronicle/internal/icebergcmd"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/shard"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// Import modes.
const (
	importReplace = "replace"
	importAppend  = "append"
)

type importOptions struct {
	to        string
	mode      string
	errors    string
	detection int64
	jobs      int
	config    string // [remote --to] config file resolving a @pin DEST
	shard     string // I/N: import only this part of the inputs (docs/scale-out.md)
	modeSet   bool   // --mode was given
	iceberg   icebergOptions
}

func init() {
	register(func(e *env) *cobra.Command {
		o := &importOptions{}
		cmd := &cobra.Command{
			Use:   "import SRC... --to DEST",
			Short: "Normalize trajectory files into a new generation of a Storyline store",
			Long: `Normalize every supported file under each SRC (a file, or a directory walked in
path order without following symbolic links) and publish the rows as one new
immutable generation of the Storyline store at DEST, creating the store if
needed. A DEST directory that exists, is not empty and is not a store is
refused: a store is a directory pchronicle owns. Readers of DEST see the
previous generation until the new one is complete.

Each input is named by its path relative to its SRC, with '/' separators; a
SRC that is a file gives its base name. With several SRCs, each path is
prefixed by its SRC's base name (runs/a.json, more/b.json); two inputs that
would get the same name are an error. Queries show the name in
runs.import_file; the store is one source, so _file_ is the store's path. A
session_id that several inputs share is stored as <id>@<input>, the input's
id kept in original_session_id, so (_file_, session_id) stays unique.

--mode replace (default): the new generation holds exactly the given inputs.
--mode append: it holds the current generation's rows plus the given inputs,
whose rows replace any earlier rows of the same input.
The same inputs always give the same rows.

--to iceberg:PATH.db (a SQL catalog in a SQLite file) or iceberg:https://...
(a REST catalog) publishes the rows as Apache Iceberg tables instead; each
input replaces only its own rows, and inputs already published at their
current version are skipped (docs/scale-out.md).

--shard I/N imports only the inputs whose _file_ hashes to part I of N
(0-based), so N processes given the same SRCs import disjoint parts whose
union is the whole import; see docs/scale-out.md.

A file no format recognizes is not a trajectory: it is skipped, never a
failure, and one line on stderr counts such files (pchronicle ls --detect says
why each was not recognized). --errors strict (default): the first unreadable
file stops the import and nothing is published. --errors report: each bad file is listed on
stderr with its reason, contributes no rows, and the rest is imported.`,
			Example: `  pchronicle import ./trajectories --to ./store
  pchronicle import a.jsonl b/ --to ./store --mode append --errors report`,
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				o.modeSet = cmd.Flags().Changed("mode")
				return runImport(cmd.Context(), e, o, args)
			},
		}
		f := cmd.Flags()
		f.StringVar(&o.to, "to", "", "destination Storyline store: a directory, an s3://, az://, gs:// prefix or a @pin (required)")
		f.StringVar(&o.mode, "mode", importReplace, "replace (exactly the given inputs) or append (current rows plus the inputs)")
		f.StringVar(&o.errors, "errors", errorsStrict, "error policy: strict (stop, publish nothing) or report (list bad files, import the rest)")
		f.Int64Var(&o.detection, "max-detection-bytes", format.DefaultMaxDetectionBytes, "bytes read from each file to detect its format")
		f.IntVar(&o.jobs, "jobs", runtime.GOMAXPROCS(0), "files normalized in parallel")
		f.StringVar(&o.shard, "shard", "", "import only part I of N of the inputs (I/N, 0-based), split by a hash of _file_")
		f.StringVarP(&o.config, "config", "c", config.DefaultPath(), "config file with [pins.<name>] (for --to @name)") // [remote --to]
		o.iceberg.flags(f)
		cmd.MarkFlagRequired("to")
		return cmd
	})
}

// importInput is one file to import.
type importInput struct {
	path string
	file string // _file_
	size int64
	// conversation is set for an OpenHands conversation directory, read as
	// one input from its member files.
	conversation *catalog.ConversationRevision
}

// importResult is what normalizing one input produced.
type importResult struct {
	src storyline.SourceInfo
	err error
	// warnings are about the input as a whole: it is not a trajectory
	// (skipped, src unset), or it was being written (its last line left out).
	warnings []string
}

func runImport(ctx context.Context, e *env, o *importOptions, args []string) error {
	if o.mode != importReplace && o.mode != importAppend {
		return fmt.Errorf("unknown --mode %q (want replace or append)", o.mode)
	}
	if err := validErrors(o.errors); err != nil {
		return err
	}
	part, err := shard.Parse(o.shard)
	if err != nil {
		return err
	}
	var failures []error
	inputs, err := importInputs(ctx, args, func(err error) error {
		if o.errors == errorsStrict {
			return err
		}
		failures = append(failures, err)
		return nil
	})
	if err != nil {
		return err
	}
	inputs = slices.DeleteFunc(inputs, func(in importInput) bool { return !part.Holds(in.file) })
	if ref, ok := icebergcmd.ParseDest(o.to); ok {
		return runIcebergImport(ctx, e, o, ref, inputs, failures)
	} else if err := o.iceberg.unused(); err != nil {
		return err
	}
	// [remote --to] An object-store DEST (URI or @pin) is imported into a
	// local staging store, then published (remote_stores.go).
	dest, local, err := openDest(ctx, o.config, o.to)
	if err != nil {
		return err
	}
	var st *storyline.Store
	if dest != nil {
		defer dest.Close()
		st, err = dest.stageImport(ctx, o.mode == importAppend)
	} else if err = storyline.CheckTarget(local); err == nil {
		st, err = storyline.Prepare(local)
	} else {
		err = fmt.Errorf("--to %w", err)
	}
	if err != nil {
		return err
	}
	// [/remote --to]
	// An append builds on the current generation: it holds the store lock
	// from reading it to publishing, so concurrent appends run one after the
	// other and none drops another's rows. A replace needs the lock only to
	// publish (the last one wins, as if they had run in turn).
	var w *storyline.Writer
	var prev *storyline.Generation
	if o.mode == importAppend {
		w, prev, err = st.NewGenerationOnCurrent(ctx)
	} else {
		w, err = st.NewGeneration()
	}
	if err != nil {
		return err
	}
	g, results, err := buildGeneration(ctx, e, o, w, prev, inputs)
	if err != nil {
		w.Abort() // publishes nothing; a DEST this import created is removed
		if ctx.Err() != nil {
			return fmt.Errorf("import interrupted, nothing published: %w", err)
		}
		return err
	}
	where := st.Dir()
	if dest != nil { // [remote --to]
		if err := dest.publish(ctx, g); err != nil {
			return err
		}
		where = dest.uri
	}
	imported := 0
	var warnings []string
	for _, r := range results {
		warnings = append(warnings, r.warnings...)
		switch {
		case r.err != nil:
			failures = append(failures, r.err)
		case r.src.File != "":
			imported++
		}
	}
	m := g.Manifest
	fmt.Fprintf(e.stdout, "imported %d file(s) into %s %s: %d runs, %d steps, %d tool_calls\n",
		imported, where, g.Name(),
		m.Tables[model.RelRuns].Rows, m.Tables[model.RelSteps].Rows, m.Tables[model.RelToolCalls].Rows)
	if n := len(m.RenamedSessions); n > 0 {
		fmt.Fprintf(e.stdout, "%d Storyline(s) share a session_id with another input's and are stored as <session_id>@<input> (original_session_id keeps the input's id)\n", n)
	}
	reportWarnings(e.stderr, warnings)
	for _, err := range failures {
		fmt.Fprintln(e.stderr, "error:", err)
	}
	if len(failures) > 0 {
		fmt.Fprintf(e.stderr, "%d input(s) could not be imported\n", len(failures))
	}
	return nil
}

// importInputs lists the files of every SRC with their _file_ values.
// fail decides whether a SRC that cannot be listed stops the import.
func importInputs(ctx context.Context, args []string, fail func(error) error) ([]importInput, error) {
	var inputs []importInput
	owner := map[string]string{}
	for _, arg := range args {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, err
		}
		// A listing that failed fails the import under every policy: report
		// mode is for a bad file among trusted members, and publishing what
		// an incomplete listing found would replace a store's rows with less.
		files, err := catalog.PeripheralFiles(ctx, arg)
		if err != nil {
			return nil, err
		}
		files = catalog.GroupConversations(files)
		base := filepath.Base(abs)
		for _, f := range files {
			if f.Err != nil {
				if err := fail(fmt.Errorf("%s: %w", f.Path, f.Err)); err != nil {
					return nil, err
				}
				continue
			}
			file := f.File
			switch {
			case f.File == ".":
				file = base
			case len(args) > 1:
				file = base + "/" + f.File
			}
			if prev, dup := owner[file]; dup {
				return nil, fmt.Errorf("%s and %s would both be imported as _file_ %q; import them separately or rename one", prev, f.Path, file)
			}
			owner[file] = f.Path
			conv, _ := f.Revision.(*catalog.ConversationRevision)
			inputs = append(inputs, importInput{path: f.Path, file: file, size: f.Size, conversation: conv})
		}
	}
	return inputs, nil
}

// buildGeneration normalizes the inputs in parallel into w and commits it,
// with the rows of prev that the inputs do not replace (append mode; nil
// otherwise). In strict mode the first failure cancels the rest and is
// returned; in report mode a failed input's rows are discarded and its
// error kept in its result.
func buildGeneration(ctx context.Context, e *env, o *importOptions, w *storyline.Writer, prev *storyline.Generation,
	inputs []importInput) (*storyline.Generation, []importResult, error) {
	var total int64
	for _, in := range inputs {
		total += in.size
	}
	bar := newProgress(e.stderr, total, "importing", true)
	results := make([]importResult, len(inputs))
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(max(1, o.jobs))
	opts := ingest.Options{MaxDetectionBytes: o.detection}
	for i, in := range inputs {
		if gctx.Err() != nil {
			break // cancelled, or a strict failure: start no more inputs
		}
		eg.Go(func() error {
			results[i] = importOne(gctx, w, in, opts)
			bar.add(in.size)
			if results[i].err != nil && o.errors == errorsStrict {
				return results[i].err
			}
			return nil
		})
	}
	err := eg.Wait()
	bar.finish()
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	imported := map[string]bool{}
	for _, r := range results {
		if r.err == nil && r.src.File != "" { // not one skipped as no trajectory
			imported[r.src.File] = true
			w.AddSource(r.src)
		}
	}
	if prev != nil {
		if err := carryOver(ctx, w, prev, imported); err != nil {
			return nil, nil, err
		}
	}
	g, err := w.Commit(ctx, nil)
	return g, results, err
}

// importOne normalizes one input into w; on failure its rows are discarded.
func importOne(ctx context.Context, w *storyline.Writer, in importInput, opts ingest.Options) importResult {
	var n int64
	opts.Parts = true
	add := func(sl *model.Storyline) error {
		if !sl.More {
			n++
		}
		return w.Add(sl)
	}
	var det ingest.Detection
	var err error
	if in.conversation != nil {
		det = ingest.Detection{Format: format.OpenHands, Layout: openhands.LayoutConversation}
		err = in.conversation.Normalize(ctx, format.Source{Path: in.path, File: in.file}, 0, add)
	} else {
		det, err = ingest.NormalizeFile(ctx, in.path, in.file, opts, add)
	}
	if errors.Is(err, format.ErrUnrecognized) { // not a trajectory: skipped, never a failure
		w.Discard(in.file)
		return importResult{warnings: []string{catalog.NotTrajectoryWarning(in.file, err)}}
	}
	if err != nil {
		w.Discard(in.file)
		return importResult{err: err}
	}
	var warnings []string
	for _, wn := range det.Warnings {
		wn.File = in.file
		warnings = append(warnings, wn.String())
	}
	return importResult{src: storyline.SourceInfo{File: in.file, Format: det.Format, Layout: det.Layout, Bytes: in.size, Storylines: n},
		warnings: warnings}
}

// carryOver copies the previous generation's rows and sources for every
// _file_ this import did not replace (append mode).
func carryOver(ctx context.Context, w *storyline.Writer, prev *storyline.Generation, imported map[string]bool) error {
	for _, src := range prev.Manifest.Sources {
		if !imported[src.File] {
			w.AddSource(src)
		}
	}
	return w.CopyFrom(ctx, prev, func(file, _ string) bool { return !imported[file] })
}
