package main

import (
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestLoad is the load test, short: the real binary serves a growing
// Dataset with --refresh-every while clients mix point queries, run
// lists, Storyline pages, aggregates and catalog reads. Every answer must
// be 2xx and agree with every other answer naming the same snapshot.
// `go run ./bench/serve -only load` runs it for a minute.
func TestLoad(t *testing.T) {
	*work = t.TempDir()
	d := 10 * time.Second
	if testing.Short() {
		d = 4 * time.Second
	}
	rep, err := Load(LoadConfig{Bin: testutil.Binary(t), Dir: t.TempDir() + "/ds", Duration: d, Clients: 3, Files: 60})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Failures > 0 || rep.Requests < 50 {
		t.Fatalf("%d failures in %d requests:\n%s", rep.Failures, rep.Requests, rep)
	}
	if rep.Snapshots < 2 || rep.FilesAdded < 5 {
		t.Fatalf("the test must span refreshes: %d snapshots, %d files added", rep.Snapshots, rep.FilesAdded)
	}
}
