package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/store/events"
)

func init() {
	register(func(e *env) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "events",
			Short: "Write and maintain canonical events stores (events.lance)",
			Long: `A canonical events store is a directory named events.lance holding immutable
Parquet segments of canonical events and a _manifest.json naming the visible
segments of the current revision (see docs/storage.md).`,
		}
		cmd.AddCommand(eventsAppendCmd(e), eventsCompactCmd(e), eventsGCCmd(e), eventsShowCmd(e))
		return cmd
	})
}

func eventsAppendCmd(e *env) *cobra.Command {
	var configPath string // [remote STORE] config file resolving a @pin STORE
	cmd := &cobra.Command{
		Use:   "append STORE [FILE|-]",
		Short: "Append canonical JSONL events to a store, all or nothing",
		Long: `Read canonical event JSONL from FILE (or standard input when FILE is "-" or
absent) and append it to STORE, creating the store when it does not exist.
FILE may be a regular file, a FIFO or a process substitution <(cmd).

Every line is decoded strictly against the canonical wire schema and checked
against the events already stored: event_id must be new and seq must increase
within each session_id. The first bad line stops the command with an error
naming the file and line, and nothing from the input becomes visible. A valid
input becomes visible at once, as one new revision. Ctrl-C or SIGTERM stops
the command at once, also while it waits for input, and nothing of the input
becomes visible (a store the command created is removed again). Appends to one
store run one after the other; a second one waits for the first.`,
		Example: `  pchronicle events append ./data/events.lance events.jsonl
  producer | pchronicle events append ./data/events.lance -
  pchronicle events append ./data/events.lance <(zcat events.jsonl.gz)`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, src := e.stdin, format.Source{Path: "<stdin>"}
			if len(args) == 2 && args[1] != "-" {
				f, err := fsx.OpenInput(ctx, args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				in, src.Path = f, args[1]
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					src.Size = fi.Size()
				}
			}
			return runEventsAppend(cmd, e, configPath, args[0], fsx.ContextReader(ctx, in), src)
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", config.DefaultPath(), "config file with [pins.<name>] (for STORE @name)") // [remote STORE]
	return cmd
}

func runEventsAppend(cmd *cobra.Command, e *env, configPath, dir string, in io.Reader, src format.Source) error {
	ctx := cmd.Context()
	// [remote STORE] An object-store STORE (URI or @pin) is appended to
	// through a local mirror (remote_stores.go).
	dest, dir, err := openDest(ctx, configPath, dir)
	if err != nil {
		return err
	}
	if dest != nil {
		defer dest.Close()
		return dest.appendEvents(ctx, e, in, src)
	}
	// [/remote STORE]
	s, tx, undo, err := beginAppend(ctx, dir)
	if err != nil {
		return err
	}
	r, err := func() (*events.Revision, error) {
		if err := tx.ReadFrom(ctx, in, src); err != nil {
			tx.Abort()
			return nil, err
		}
		return tx.Commit(ctx)
	}()
	if err != nil {
		undo()
		return fmt.Errorf("nothing appended: %w", err)
	}
	fmt.Fprintf(e.stderr, "appended %d events to %s (revision %d, %d events in total)\n", tx.Len(), s.Dir(), r.Revision, r.Events)
	return nil
}

// beginAppend opens the events store at dir, creating it when it does not
// exist, and begins an append, waiting for other writers until ctx is done.
// A store that a failed append of another process removed while this one
// waited for its lock is created again. undo, for when nothing gets
// appended, removes what this call created (the store while it is still
// empty, and the directories made for it), leaving dir as it was.
func beginAppend(ctx context.Context, dir string) (s *events.Store, tx *events.Tx, undo func(), err error) {
	var created bool
	var parents string // the topmost parent directory created for the store
	undo = func() {
		if created {
			if removed, _ := s.RemoveEmpty(); removed {
				fsx.RemoveCreated(filepath.Dir(s.Dir()), parents)
			}
		}
	}
	for range 3 {
		if s, err = events.Open(dir); errors.Is(err, events.ErrNotStore) {
			var top string
			if top, err = fsx.MkdirAllNew(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
				return nil, nil, nil, err
			}
			parents = cmp.Or(parents, top)
			if s, err = events.Create(dir); err == nil {
				created = true
			} else if errors.Is(err, fs.ErrExist) { // another process created it first
				s, err = events.Open(dir)
			}
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if tx, err = s.Begin(ctx); !errors.Is(err, events.ErrNotStore) {
			break
		}
	}
	if err != nil {
		undo()
		return nil, nil, nil, err
	}
	return s, tx, undo, nil
}
func eventsCompactCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "compact STORE",
		Short: "Merge small segments without changing the events",
		Long: `Merge the small segments of STORE into larger ones and publish them as a new
revision holding exactly the same events: the fact watermark is unchanged and
the layout watermark advances. Replaced segments stay on disk for readers of
older revisions until 'pchronicle events gc' removes them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := events.Open(args[0])
			if err != nil {
				return err
			}
			before, err := s.Pin()
			if err != nil {
				return err
			}
			r, err := s.Compact(cmd.Context())
			if err != nil {
				return err
			}
			if r.Revision == before.Revision {
				fmt.Fprintf(e.stderr, "nothing to compact (revision %d, %d segments)\n", r.Revision, len(r.Segments))
				return nil
			}
			fmt.Fprintf(e.stderr, "compacted %d segments into %d (revision %d)\n", len(before.Segments), len(r.Segments), r.Revision)
			return nil
		},
	}
}

func eventsGCCmd(e *env) *cobra.Command {
	var retention time.Duration
	cmd := &cobra.Command{
		Use:   "gc STORE",
		Short: "Remove segments no longer visible, after a retention period",
		Long: `Remove segment files that the current revision of STORE does not name and
that were retired (by compaction) or orphaned (by a failed append) longer ago
than --retention, and leftover temporary manifests. Readers must not keep an
older revision pinned for longer than the retention.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := events.Open(args[0])
			if err != nil {
				return err
			}
			removed, err := s.GC(cmd.Context(), retention)
			for _, p := range removed {
				fmt.Fprintln(e.stdout, p)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "removed %d files\n", len(removed))
			return nil
		},
	}
	cmd.Flags().DurationVar(&retention, "retention", time.Hour, "keep unreferenced files younger than this")
	return cmd
}

func eventsShowCmd(e *env) *cobra.Command {
	var outFormat string
	cmd := &cobra.Command{
		Use:   "show STORE",
		Short: "Print a store's revision, watermarks and segments",
		Long: `Print the pinned revision of STORE: a summary line on stderr (revision, fact
and layout watermarks, event count) and one row per visible segment.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validFormat(outFormat); err != nil {
				return err
			}
			s, err := events.Open(args[0])
			if err != nil {
				return err
			}
			r, err := s.Pin()
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "%s: revision %d, fact_watermark %d, layout_watermark %d, %d events in %d segments\n",
				s.Dir(), r.Revision, r.FactWatermark, r.LayoutWatermark, r.Events, len(r.Segments))
			return printSegments(e.stdout, outFormat, r.Segments)
		},
	}
	cmd.Flags().StringVar(&outFormat, "format", fmtTable, "output format: table, csv, json or jsonl")
	return cmd
}

var segmentColumns = []string{"path", "rows", "bytes", "revision", "fact_revisions", "sessions",
	"min_session_id", "max_session_id", "min_seq", "max_seq", "min_ts", "max_ts"}

func printSegments(w io.Writer, outFormat string, segs []events.Segment) error {
	rw := newRowWriter(w, outFormat, segmentColumns)
	for _, s := range segs {
		facts := fmt.Sprint(s.MinFactRevision)
		if s.MaxFactRevision != s.MinFactRevision {
			facts += fmt.Sprintf("-%d", s.MaxFactRevision)
		}
		err := rw.Write([]any{s.Path, s.Rows, s.Bytes, s.Revision, facts, s.Sessions,
			s.MinSession, s.MaxSession, s.MinSeq, s.MaxSeq, s.MinTS.Format(time.RFC3339Nano), s.MaxTS.Format(time.RFC3339Nano)})
		if err != nil {
			return err
		}
	}
	return rw.Close()
}
