package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/projection"
)

func init() {
	register(func(e *env) *cobra.Command {
		var full bool
		cmd := &cobra.Command{
			Use:   "project STORE",
			Short: "Build or update the Storyline projection of a canonical events store",
			Long: `Build, or bring up to date, the Storyline projection of the canonical events
store STORE (X/events.lance): the Storyline store X/events.storyline holding
runs, steps and tool_calls normalized from the events of STORE's current
revision. The new generation's lineage names STORE and that revision.

A projection that already reflects the current events is left as it is. One
built from an older revision is updated incrementally: only sessions that
gained events since are normalized again, the rest is copied. --full
normalizes every session. Either way, the same revision gives the same rows.`,
			Example: `  pchronicle project ./data/events.lance`,
			Args:    cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				update := projection.Update
				if full {
					update = projection.Rebuild
				}
				res, err := update(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				g := res.Generation
				if res.Mode == projection.ModeFresh {
					fmt.Fprintf(e.stderr, "%s is up to date (%s, events revision %d)\n", g.Dir, g.Name(), g.Manifest.Lineage.EventsRevision)
					return nil
				}
				fmt.Fprintf(e.stderr, "%s: %s from events revision %d (%s: %d sessions, %d events normalized; %d runs, %d steps, %d tool calls)\n",
					g.Dir, g.Name(), res.Revision.Revision, res.Mode, res.Sessions, res.Events,
					g.Manifest.Tables[model.RelRuns].Rows, g.Manifest.Tables[model.RelSteps].Rows, g.Manifest.Tables[model.RelToolCalls].Rows)
				return nil
			},
		}
		cmd.Flags().BoolVar(&full, "full", false, "normalize every session instead of only the changed ones")
		return cmd
	})
}
