// Package spawn starts the processes a query's DuckDB runs in, the engine's
// workers: this binary again, told by its environment to serve as one
// (docs/architecture.md, "Workers").
//
// It imports nothing beyond the runtime's own low-level packages, so that a
// one-shot command can start its worker while the rest of the binary is
// still being initialized (Early). Go initializes a package as soon as the
// packages it imports are, and this binary initializes about 250 of them
// before main; a worker's process start and DuckDB open, most of a warm
// query's time, then overlap the command's own start instead of following
// it (docs/performance.md, "The worker started early").
package spawn

import (
	"os"
	"strconv"
	"sync"
)

// Env, set to Version in a process's environment, makes the process a query
// worker speaking that version of the engine's protocol.
const Env = "PCHRONICLE_ENGINE_WORKER"

// Version changes whenever the frames between the engine and its workers
// change.
const Version = 6

// A Process is a started worker and the parent's ends of its pipes.
type Process struct {
	*os.Process
	Stdin  *os.File // the worker's input
	Stdout *os.File // its output: the engine's answers
	Stderr *os.File // its error output, read until the worker exits
}

// Start starts a worker.
func Start() (*Process, error) {
	exe, err := executable()
	if err != nil {
		return nil, err
	}
	var parent, child [3]*os.File
	defer closeAll(child[:]) // the worker's ends: it has its own copies
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(parent[:])
			return nil, err
		}
		if i == 0 { // the worker reads its input
			parent[i], child[i] = w, r
		} else {
			parent[i], child[i] = r, w
		}
	}
	p, err := os.StartProcess(exe, []string{exe}, &os.ProcAttr{
		Env:   append(os.Environ(), Env+"="+strconv.Itoa(Version)),
		Files: child[:],
		Sys:   attr(),
	})
	if err != nil {
		closeAll(parent[:])
		return nil, err
	}
	return &Process{Process: p, Stdin: parent[0], Stdout: parent[1], Stderr: parent[2]}, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

var early struct {
	sync.Mutex
	p *Process
}

// Early starts a worker now and keeps it for TakeEarly. A command that runs
// a query calls it during initialization; a worker it does not take exits
// with the command, whose end closes the worker's input.
func Early() {
	p, err := Start()
	if err != nil {
		return // the engine starts one when it needs it, and reports the error then
	}
	SetEarly(p)
}

// SetEarly keeps p, a worker started before Go's initialization, for
// TakeEarly.
func SetEarly(p *Process) {
	early.Lock()
	early.p = p
	early.Unlock()
}

// TakeEarly returns the worker Early started, once; nil if there is none.
func TakeEarly() *Process {
	early.Lock()
	defer early.Unlock()
	p := early.p
	early.p = nil
	return p
}
