// Package early starts the query worker of a command that runs a query
// before the binary has started; cmd/pchronicle imports it for that alone.
// On Linux a C constructor starts it before the Go runtime (early_linux.go);
// elsewhere, or if that did not start one, this package's initialization
// does, which Go runs as soon as its few imports are initialized, long
// before main. Either way the worker's process start and DuckDB open overlap
// the command's own start (docs/performance.md, "The worker started early").
package early

import (
	"os"
	"slices"

	"github.com/pchronicle/pchronicle/internal/engine/spawn"
)

// Commands run a query in a worker of their own (their Dataset's engine).
var Commands = []string{"query", "find", "stats"}

// adopted says that the worker was started before the runtime (started),
// not by Early.
var adopted bool

func init() {
	if p := started(); p != nil {
		spawn.SetEarly(p)
		adopted = true
		return
	}
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
