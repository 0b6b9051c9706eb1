package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/export"
	"github.com/pchronicle/pchronicle/internal/hugeheap"
	"github.com/pchronicle/pchronicle/internal/model"
)

func init() { register(newExportCmd) }

func newExportCmd(e *env) *cobra.Command {
	var (
		sel          selection
		as, out, enc string
	)
	cmd := &cobra.Command{
		Use:   "export [DATASET]",
		Short: "Write Storylines as canonical events, ATIF documents or OpenAI chat messages",
		Long: `Write the Storylines of Datasets — all of them, or those selected by
coordinates — in an interchange format:

  --as canonical  canonical event JSONL (docs/formats.md): per
                  Storyline one run.start, its message, usage, tool.call and
                  tool.result events, and one run.end; deterministic event ids
  --as atif       one ATIF-v1.7 document per Storyline: JSONL of documents,
                  or with --out DIR one file per Storyline
  --as openai     chat-completions JSONL, one {"messages": [...]} per
                  Storyline, with assistant tool_calls and tool messages

Selection (combined with AND): --source PATH (a Dataset-relative source
path, its _file_), --session ID (repeatable), --run ID. Sources outside
--source are not read. Output goes to stdout, or to --out (a file; a
directory for --as atif). Storylines are written in Dataset, source and
session_id order, so the same Snapshot exports the same bytes.

What each format cannot carry is documented in docs/cli.md (for example,
OpenAI messages have no tool error status, and ATIF has no tool steps).

--format parquet writes each format's Parquet form instead of JSONL, one
file: --as openai one row per Storyline with its messages and their
tool_calls (what a Hugging Face datasets fine-tuning set loads), --as
canonical one row per event, --as atif one row per Storyline with its
document as JSON.`,
		Example: `  pchronicle export ./runs --as canonical > events.jsonl
  pchronicle export ./runs --source harbor/trajectory.json --as atif --out ./atif
  pchronicle export ./runs --session 0b5c3e1a --session 7f0d9b22 --as openai
  pchronicle export --mount prod=./prod --run run-42 --as canonical --out run-42.jsonl
  pchronicle export ./runs --as openai --format parquet -o train.parquet`,
		Args: cobra.MaximumNArgs(1),
	}
	ds := addDatasetFlags(cmd)
	f := cmd.Flags()
	sel.register(f)
	f.StringVar(&as, "as", export.Canonical, "output format: "+strings.Join(export.Formats, ", "))
	f.StringVarP(&out, "out", "o", "", "write to this file instead of stdout (with --as atif: a directory, one file per Storyline)")
	f.StringVar(&enc, "format", "jsonl", "jsonl, or parquet: the format's Parquet form, one file")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !slices.Contains(export.Formats, as) {
			return fmt.Errorf("unknown --as %q (want %s)", as, strings.Join(export.Formats, ", "))
		}
		if err := validExportEncoding(enc, out, e.stdout); err != nil {
			return err
		}
		snap, _, err := ds.open(cmd.Context(), firstArg(args))
		if err != nil {
			return err
		}
		defer snap.Close()
		if err := sel.checkSource(snap); err != nil {
			return err
		}
		n, err := writeExport(cmd.Context(), e, snap, sel, as, out, enc == fmtParquet)
		if err != nil {
			return err
		}
		reportWarnings(e.stderr, snap.Warnings())
		fmt.Fprintf(e.stderr, "exported %d Storylines as %s\n", n, as)
		return nil
	}
	return cmd
}

// writeExport exports the selection to stdout, to the directory out (--as
// atif), or to the file out, which is replaced atomically once the export
// is complete: a failed or interrupted export leaves an existing file as it
// was and no partial one. It returns the number of Storylines written.
func writeExport(ctx context.Context, e *env, snap *catalog.Snapshot, sel selection, as, out string, parquet bool) (n int, err error) {
	run := func(dst io.Writer, dir string) error {
		w, err := newExportWriter(as, dst, dir, parquet)
		if err != nil {
			return err
		}
		n, err = exportSnapshot(ctx, e.stderr, snap, sel, w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil && n == 0 && (sel.source != "" || len(sel.sessions) > 0 || sel.run != "") {
			err = errors.New("no Storyline matched the selection")
		}
		if err == nil {
			err = ctx.Err() // an interrupted export publishes nothing
		}
		return err
	}
	if as == export.ATIF && !parquet {
		return n, run(e.stdout, out)
	}
	return n, writeOutput(e.stdout, out, func(w io.Writer) error { return run(w, "") })
}

// exportSnapshot writes every selected Storyline and returns how many.
// Sources the Snapshot kept with status error (--errors report) are skipped
// with a note; any other failure stops the export.
func exportSnapshot(ctx context.Context, stderr io.Writer, snap *catalog.Snapshot, sel selection, w export.Writer) (int, error) {
	type job struct {
		dataset string
		src     *catalog.Source
	}
	var jobs []job
	for _, d := range snap.Datasets {
		for _, src := range d.Sources {
			if sel.source == "" || src.File == sel.source {
				jobs = append(jobs, job{d.Mount.NamespacePath(), src})
			}
		}
	}
	// Said before any of it is read, as a query's batch says its size: a
	// huge-page reservation made later, once the heap has freed memory at
	// its top, lands on it, and the runtime clears the whole reservation
	// (docs/performance.md, "Huge pages for the heap").
	var input int64
	for _, j := range jobs {
		input += j.src.Size
	}
	hugeheap.Expect(input)
	bar := newProgress(stderr, int64(len(jobs)), "exporting sources", false)
	filter := engine.StorylineFilter{Sessions: sel.sessions, RunID: sel.run}
	reader := engine.NewReader(snap, engine.LimitsFrom(snap.Options))
	defer reader.Close()
	n := 0
	write := func(dataset string) func(string, *model.Storyline) error {
		return func(_ string, sl *model.Storyline) error {
			n++
			return w.Write(dataset, sl)
		}
	}
	// Small sources are read a chunk at a time, which holds their
	// Storylines until their turn; a large one streams on its own.
	var chunk []string
	var chunkDataset string
	var chunkBytes int64
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := reader.EachStorylineOf(ctx, chunkDataset, chunk, filter, write(chunkDataset)); err != nil {
			return fmt.Errorf("Dataset %s: %w", chunkDataset, err)
		}
		bar.add(int64(len(chunk)))
		chunk, chunkBytes = chunk[:0], 0
		return nil
	}
	for _, j := range jobs {
		if j.src.Err != nil {
			fmt.Fprintf(stderr, "skipping %s: %s: %v\n", j.dataset, j.src.File, j.src.Err)
			continue
		}
		if j.dataset != chunkDataset || len(chunk) == exportChunkSources || chunkBytes+j.src.Size > exportChunkBytes {
			if err := flush(); err != nil {
				return n, err
			}
		}
		if j.src.Size > exportChunkBytes {
			err := reader.EachStoryline(ctx, j.dataset, j.src.File, filter, func(sl *model.Storyline) error { return write(j.dataset)(j.src.File, sl) })
			if err != nil {
				return n, fmt.Errorf("Dataset %s: %w", j.dataset, err)
			}
			bar.add(1)
			continue
		}
		chunk, chunkDataset, chunkBytes = append(chunk, j.src.File), j.dataset, chunkBytes+j.src.Size
	}
	if err := flush(); err != nil {
		return n, err
	}
	bar.finish()
	return n, nil
}

// An export resolves up to exportChunkSources sources of at most
// exportChunkBytes in all as one batch and reads them with one query per
// relation (engine.Reader.EachStorylineOf): a resolution and three queries
// per source were most of the time of an export of many small files.
const (
	exportChunkSources = 256
	exportChunkBytes   = 16 << 20
)
