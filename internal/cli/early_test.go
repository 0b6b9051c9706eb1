package cli

import (
	"io"
	"testing"

	"github.com/pchronicle/pchronicle/internal/cli/early"
)

// TestEarlyCommandsRunQueries: the commands whose worker starts before main
// (package early names them, since it runs before this package exists) are
// commands of the tree that open a Dataset.
func TestEarlyCommandsRunQueries(t *testing.T) {
	root := NewRoot(&env{stdin: nil, stdout: io.Discard, stderr: io.Discard})
	for _, name := range early.Commands {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd == root || cmd.Name() != name || cmd.Flags().Lookup("mount") == nil {
			t.Errorf("%q is not a command that opens a Dataset", name)
		}
	}
}
