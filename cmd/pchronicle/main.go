// Command pchronicle opens folders and buckets of AI-agent trajectories and
// makes them queryable with SQL. All logic lives under internal/; this file
// only wires the process to the CLI: its streams, its exit code and its
// signals (docs/cli.md, "Signals").
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pchronicle/pchronicle/internal/cli"
	_ "github.com/pchronicle/pchronicle/internal/cli/early" // starts a query's worker before main
	"github.com/pchronicle/pchronicle/internal/gcfloor"
)

// stopGrace bounds how long a command may take to stop after SIGINT or
// SIGTERM. Commands stop within milliseconds (every wait, read and write
// follows the context); this only guarantees an exit should some system
// call not return. Exiting then is as safe as a crash, which every store
// write survives.
const stopGrace = 10 * time.Second

func main() {
	gcfloor.Start(gcfloor.DefaultFloor)
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	received := make(chan os.Signal, 1)
	go func() {
		sig := <-sigs
		// A second signal gets the default action and ends the process at
		// once, for a user who does not want to wait for the cleanup.
		signal.Stop(sigs)
		received <- sig
		cancel()
		time.AfterFunc(stopGrace, func() {
			fmt.Fprintf(os.Stderr, "pchronicle: did not stop within %s of %s; exiting\n", stopGrace, signalName(sig))
			os.Exit(signalCode(sig))
		})
	}()
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	select {
	case sig := <-received:
		if code != 0 { // a command that completed before it saw the signal keeps its success
			fmt.Fprintf(os.Stderr, "pchronicle: stopped by %s\n", signalName(sig))
			code = signalCode(sig)
		}
	default:
	}
	os.Exit(code)
}

// signalCode is the shell's exit status for a process ended by sig.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}
