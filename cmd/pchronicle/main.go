// Command pchronicle opens folders and buckets of AI-agent trajectories and
// makes them queryable with SQL. All logic lives under internal/; this file
// only wires the process to the CLI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pchronicle/pchronicle/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
