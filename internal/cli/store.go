package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

func init() {
	register(func(e *env) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "store",
			Short: "Inspect and maintain Storyline stores",
		}
		cmd.AddCommand(storeShowCmd(e), storeGCCmd(e), storeUpgradeCmd(e))
		return cmd
	})
}

var storeShowColumns = []string{"generation", "created_at", "table", "file", "rows", "bytes", "row_groups", "sources", "lineage"}

func storeShowCmd(e *env) *cobra.Command {
	var outFormat string
	cmd := &cobra.Command{
		Use:   "show STORE",
		Short: "Print the current generation of a Storyline store",
		Long: `Pin the generation CURRENT names and print one row per table: its file, row
count, size in bytes and row groups, with the generation's creation time, the
number of imported source files and, for projections, the lineage
(events store URI @ manifest revision).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validFormat(outFormat); err != nil {
				return err
			}
			st, err := storyline.Open(args[0])
			if err != nil {
				return err
			}
			g, err := st.Pin()
			if err != nil {
				return err
			}
			m := g.Manifest
			var lineage *string
			if m.Lineage != nil {
				s := fmt.Sprintf("%s@%d", m.Lineage.EventsURI, m.Lineage.EventsRevision)
				lineage = &s
			}
			rw := newRowWriter(e.stdout, outFormat, storeShowColumns)
			for _, rel := range storyline.Tables {
				t := m.Tables[rel]
				if err := rw.Write([]any{g.Number, m.CreatedAt, rel, t.File, t.Rows, t.Bytes, t.RowGroups, len(m.Sources), lineage}); err != nil {
					return err
				}
			}
			return rw.Close()
		},
	}
	cmd.Flags().StringVar(&outFormat, "format", fmtTable, "output format: table, csv, json or jsonl")
	return cmd
}

func storeGCCmd(e *env) *cobra.Command {
	var retention time.Duration
	cmd := &cobra.Command{
		Use:   "gc STORE",
		Short: "Remove old generations of a Storyline store",
		Long: `Remove every generation that CURRENT does not name and that stopped being
current more than --retention ago, and temporary directories left by
interrupted writers that have not changed for as long. Readers pin a
generation for the life of a Snapshot, so the retention must exceed the
longest-lived Snapshot (a query, or a server between refreshes).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := storyline.Open(args[0])
			if err != nil {
				return err
			}
			removed, err := st.GC(cmd.Context(), retention)
			for _, name := range removed {
				fmt.Fprintln(e.stdout, "removed", name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "%d director(ies) removed\n", len(removed))
			return nil
		},
	}
	cmd.Flags().DurationVar(&retention, "retention", storyline.DefaultRetention, "keep generations replaced less than this long ago")
	return cmd
}

func storeUpgradeCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "upgrade STORE",
		Short: "Rewrite a Storyline store written by an older pchronicle in the current format",
		Long: `Publish the current generation's rows again as a new generation in this
build's format: a session id that two of the store's inputs share is stored
qualified by its input (the input's own id stays in original_session_id), and
import_file is filled. A store written before session ids were made unique is
refused by queries when two inputs share an id; this makes it readable.
Readers of the old generation keep it until gc removes it. Nothing is
written when the store is already current.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := storyline.Open(args[0])
			if err != nil {
				return err
			}
			g, err := st.Upgrade(cmd.Context())
			if err != nil {
				return err
			}
			if g == nil {
				fmt.Fprintf(e.stdout, "%s is already in the current format\n", st.Dir())
				return nil
			}
			fmt.Fprintf(e.stdout, "upgraded %s to %s: %d runs, %d session id(s) qualified\n",
				st.Dir(), g.Name(), g.Manifest.Tables["runs"].Rows, len(g.Manifest.RenamedSessions))
			return nil
		},
	}
}
