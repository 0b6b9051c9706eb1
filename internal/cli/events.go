package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/format"
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

Every line is decoded strictly against the canonical wire schema and checked
against the events already stored: event_id must be new and seq must increase
within each session_id. The first bad line stops the command with an error
naming the file and line, and nothing from the input becomes visible. A valid
input becomes visible at once, as one new revision.`,
		Example: `  pchronicle events append ./data/events.lance events.jsonl
  producer | pchronicle events append ./data/events.lance -`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, name := e.stdin, "<stdin>"
			if len(args) == 2 && args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				in, name = f, args[1]
			}
			return runEventsAppend(cmd, e, configPath, args[0], in, name)
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", config.DefaultPath(), "config file with [pins.<name>] (for STORE @name)") // [remote STORE]
	return cmd
}

func runEventsAppend(cmd *cobra.Command, e *env, configPath, dir string, in io.Reader, name string) error {
	ctx := cmd.Context()
	// [remote STORE] An object-store STORE (URI or @pin) is appended to
	// through a local mirror (remote_stores.go).
	dest, dir, err := openDest(ctx, configPath, dir)
	if err != nil {
		return err
	}
	if dest != nil {
		defer dest.Close()
		return dest.appendEvents(ctx, e, in, name)
	}
	// [/remote STORE]
	s, err := events.OpenOrCreate(dir)
	if err != nil {
		return err
	}
	tx, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	if err := tx.ReadFrom(ctx, in, format.Source{Path: name}); err != nil {
		tx.Abort()
		return fmt.Errorf("nothing appended: %w", err)
	}
	n := tx.Len()
	r, err := tx.Commit(ctx)
	if err != nil {
		return fmt.Errorf("nothing appended: %w", err)
	}
	fmt.Fprintf(e.stderr, "appended %d events to %s (revision %d, %d events in total)\n", n, s.Dir(), r.Revision, r.Events)
	return nil
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
