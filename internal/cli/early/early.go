// Package early starts the query worker of a command that runs a query
// while the binary is still being initialized; cmd/pchronicle imports it
// for that alone. Go initializes this package as soon as its few imports
// are, long before main, so the worker's process start and DuckDB open
// overlap the command's own start (spawn.Early; docs/performance.md, "The
// worker started early").
package early

import (
	"os"
	"slices"

	"github.com/pchronicle/pchronicle/internal/engine/spawn"
)

// Commands run a query in a worker of their own (their Dataset's engine).
var Commands = []string{"query", "find", "stats"}

func init() {
	if wanted(os.Args) {
		spawn.Early()
	}
}

// wanted reports whether a command line runs one of Commands (and not its
// help).
func wanted(args []string) bool {
	if len(args) < 2 || !slices.Contains(Commands, args[1]) {
		return false
	}
	return !slices.ContainsFunc(args[2:], func(a string) bool { return a == "-h" || a == "--help" })
}
