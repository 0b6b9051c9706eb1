// Package cli implements the pchronicle command line. Each command lives in
// its own file and registers itself with register, so commands can be added
// without touching a shared switchboard.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/hugeheap"
)

var commands []func(*env) *cobra.Command

// register adds a command constructor; called from init functions.
func register(f func(*env) *cobra.Command) { commands = append(commands, f) }

// env carries the process streams, so commands never touch os.Std* and tests
// can run the CLI in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// ExitError carries a specific exit code out of a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// NewRoot builds the command tree.
func NewRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "pchronicle",
		Short: "Query folders and buckets of AI-agent trajectories with SQL",
		Long: `pchronicle opens a folder or bucket of agent trajectories (ATIF, OpenAI
messages and Codex rollouts, ACTF/ATOF traces, Claude Code transcripts,
OpenHands trajectories, canonical events, and pchronicle's own stores), normalizes them into runs, steps and tool_calls,
and lets you inspect, import and query them.`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Every command but serve ends when its work does, so its heap may
	// take huge pages; a server's may not (package hugeheap).
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		for c := cmd; c != nil; c = c.Parent() {
			if c.Name() == "serve" {
				return
			}
		}
		hugeheap.Allow()
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	for _, f := range commands {
		root.AddCommand(f(e))
	}
	registerCompletions(root)
	return root
}

// sqlAfterFlags moves arguments that begin with "--" but are SQL (a
// statement behind a comment: "-- daily\nSELECT …") after a "--", so the
// flag parser takes them as arguments. A flag never has white space before
// its "="; such SQL always has some. An argument right after a flag is
// left alone: it is that flag's value (--sql "-- daily\nSELECT …").
func sqlAfterFlags(args []string) []string {
	var keep, sql []string
	for i, a := range args {
		if a == "--" {
			return args // the user ended the flags already
		}
		name, _, _ := strings.Cut(a, "=")
		afterFlag := i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=")
		if strings.HasPrefix(a, "--") && strings.ContainsAny(name, " \t\n") && !afterFlag {
			sql = append(sql, a)
		} else {
			keep = append(keep, a)
		}
	}
	if sql == nil {
		return args
	}
	return append(append(keep, "--"), sql...)
}

// Execute runs the CLI with args and returns the process exit code.
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := NewRoot(e)
	root.SetArgs(sqlAfterFlags(args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "pchronicle:", err)
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}
