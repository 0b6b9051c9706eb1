package cli

import (
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// reportWarnings prints, on stderr, what a command's sources skipped or
// left out — files that are not trajectories, still being written, or
// unreadable and skipped — summarized by reason (catalog.SummarizeWarnings):
// one policy for every command (docs/cli.md, "Files that are skipped").
func reportWarnings(w io.Writer, warnings []string) {
	for _, line := range catalog.SummarizeWarnings(warnings) {
		fmt.Fprintln(w, "pchronicle: warning:", line)
	}
}
