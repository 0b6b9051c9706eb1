package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// A worker is the process one query's DuckDB runs in (docs/sql.md,
// "Limits"). DuckDB cannot interrupt every computation — a constant it
// folds while planning, one huge string or list — and keeps only its
// buffers under memory_limit, so in the engine's own process a single
// query could run past its timeout and take the memory of the whole
// process, and with it the server. In a worker, the kernel caps what the
// query may map (limitData) and the engine kills it when it does not stop
// within killGrace of its timeout; either way the engine carries on and
// the error says which limit to raise.
type worker struct {
	cmd       *exec.Cmd
	stdin     *os.File
	stdout    *os.File
	bw        *bufio.Writer
	br        *bufio.Reader
	stderr    *cappedBuffer
	exited    chan struct{} // closed when the process has been reaped
	limits    Limits
	dataLimit int64 // what the worker may map beyond its start (0: unbounded)
	buf       []byte

	mu          sync.Mutex
	interrupted bool // the engine closed stdin to interrupt it
	killed      bool // the engine killed it
}

// killGrace is how long a worker has to stop after being interrupted
// before it is killed: DuckDB normally stops within milliseconds.
const killGrace = 250 * time.Millisecond

// startWorker starts a worker and runs the set-up statements in it. ctx
// bounds the start.
func startWorker(ctx context.Context, limits Limits, setup []string) (*worker, error) {
	data, err := dataLimit(limits)
	if err != nil {
		return nil, err
	}
	exe, err := workerExecutable()
	if err != nil {
		return nil, fmt.Errorf("starting the query worker: %w", err)
	}
	w := &worker{limits: limits, dataLimit: data, stderr: &cappedBuffer{max: 16 << 10}, exited: make(chan struct{})}
	w.cmd = exec.Command(exe)
	w.cmd.Env = append(os.Environ(), workerEnv+"="+strconv.Itoa(workerVersion))
	w.cmd.SysProcAttr = workerAttr()
	w.cmd.Stderr = w.stderr
	// Plain pipes: Wait may run (the worker may exit) before the last
	// frames are read, and must not close them.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	w.cmd.Stdin, w.cmd.Stdout = inR, outW
	err = w.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting the query worker: %w", err)
	}
	w.stdin, w.stdout = inW, outR
	w.bw = bufio.NewWriterSize(inW, 64<<10)
	w.br = bufio.NewReaderSize(outR, 64<<10)
	go func() {
		w.cmd.Wait()
		close(w.exited)
	}()
	if err := w.request(ctx, frameOpen, workerOpen{V: workerVersion, DataLimit: data, Stmts: setup}); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// exec runs statements in the worker.
func (w *worker) exec(ctx context.Context, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	return w.request(ctx, frameExec, workerExec{Stmts: stmts})
}

// request sends one request and waits for its ok, interrupting the worker
// if ctx ends first.
func (w *worker) request(ctx context.Context, kind byte, req any) error {
	stop := context.AfterFunc(ctx, w.interrupt)
	defer stop()
	if err := w.send(kind, req); err != nil {
		return err
	}
	kind, payload, err := w.read()
	if err != nil {
		return err
	}
	return w.outcome(kind, payload)
}

// query runs the user's statement; the worker is done with it once the
// rows are read or closed.
func (w *worker) query(ctx context.Context, sqlText string) (*workerRows, error) {
	stop := context.AfterFunc(ctx, w.interrupt)
	fail := func(err error) (*workerRows, error) {
		stop()
		return nil, err
	}
	if err := w.send(frameQuery, workerQuery{SQL: sqlText}); err != nil {
		return fail(err)
	}
	kind, payload, err := w.read()
	if err != nil {
		return fail(err)
	}
	if kind != frameColumns {
		return fail(w.outcome(kind, payload))
	}
	var cols workerColumns
	if err := jsonx.Unmarshal(payload, &cols); err != nil || len(cols.Names) != len(cols.Types) {
		return fail(w.protocolError("a malformed columns answer"))
	}
	return &workerRows{w: w, Columns: cols.Names, Types: cols.Types, stop: stop}, nil
}

func (w *worker) send(kind byte, req any) error {
	if err := writeJSON(w.bw, kind, req); err != nil {
		return w.failed(err)
	}
	if err := w.bw.Flush(); err != nil {
		return w.failed(err)
	}
	return nil
}

// read reads the worker's next frame; a worker that ended without one
// yields why (failed).
func (w *worker) read() (byte, []byte, error) {
	max := int64(math.MaxInt64)
	if w.dataLimit > 0 {
		max = w.dataLimit // no frame is larger than what the worker could hold
	}
	kind, payload, err := readFrame(w.br, w.buf, max)
	if err != nil {
		return 0, nil, w.failed(err)
	}
	w.buf = payload
	return kind, payload, nil
}

// outcome is the error of an answer that is not a columns or rows frame.
func (w *worker) outcome(kind byte, payload []byte) error {
	switch kind {
	case frameOK:
		return nil
	case frameError:
		var we workerError
		if jsonx.Unmarshal(payload, &we) != nil {
			return w.protocolError("a malformed error answer")
		}
		return we.err()
	}
	return w.protocolError(fmt.Sprintf("an unexpected answer %q", kind))
}

func (w *worker) protocolError(what string) error {
	w.kill()
	return &QueryError{Kind: KindInternal, Err: fmt.Errorf("the query worker sent %s", what)}
}

// interrupt asks the worker to stop what it is doing by closing its input
// (DuckDB is interrupted and the worker exits), and kills it if it has not
// exited within killGrace.
func (w *worker) interrupt() {
	w.mu.Lock()
	if w.interrupted {
		w.mu.Unlock()
		return
	}
	w.interrupted = true
	w.mu.Unlock()
	w.stdin.Close()
	go func() {
		select {
		case <-w.exited:
		case <-time.After(killGrace):
			w.kill()
		}
	}()
}

func (w *worker) kill() {
	w.mu.Lock()
	w.killed = true
	w.mu.Unlock()
	w.cmd.Process.Kill()
}

// failed explains a pipe that failed: the worker was interrupted (the
// caller reports its context's error), or it died on its own — out of
// memory, or a crash.
func (w *worker) failed(err error) error {
	w.mu.Lock()
	interrupted := w.interrupted
	w.mu.Unlock()
	if interrupted {
		return fmt.Errorf("the query worker was interrupted: %w", err)
	}
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
		w.kill()
		<-w.exited
		return &QueryError{Kind: KindInternal, Err: fmt.Errorf("the query worker stopped answering: %w", err)}
	}
	return w.deathError()
}

// deathError classifies the end of a worker that died on its own.
func (w *worker) deathError() error {
	state := w.cmd.ProcessState
	stderr := w.stderr.String()
	ws, _ := state.Sys().(syscall.WaitStatus)
	if outOfMemory(stderr) || (ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
		// SIGKILL that the engine did not send is the kernel's OOM killer.
		return &QueryError{Kind: KindResources, Err: errors.New(memoryAdvice("the query's worker process ran out of memory", w.limits))}
	}
	msg := firstLine(strings.TrimSpace(stderr))
	if msg == "" {
		msg = state.String()
	}
	return &QueryError{Kind: KindInternal, Err: fmt.Errorf("the query worker failed: %s", msg)}
}

// outOfMemory reports whether a worker's stderr says an allocation failed:
// Go's runtime (a heap or a thread's stack), the C++ runtime or DuckDB's
// allocator.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "std::bad_alloc", "cannot allocate memory", "failed to create new OS thread"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// close ends the worker: its input closes (an idle or finished worker
// exits), and it is killed if it has not exited within killGrace.
func (w *worker) close() {
	w.interrupt()
	<-w.exited
	w.stdout.Close()
}

// workerRows reads a query's rows as the worker sends them.
type workerRows struct {
	Columns []string
	Types   []string

	w     *worker
	stop  func() bool // ends the context's watch over the worker
	batch valueReader
	vals  []any
	err   error
	done  bool
}

// next decodes the next row into vals; false at the end or on error.
func (r *workerRows) next() bool {
	for len(r.batch.b) == 0 {
		if r.done || r.err != nil {
			return false
		}
		kind, payload, err := r.w.read()
		switch {
		case err != nil:
			r.err = err
		case kind == frameRows:
			r.batch = valueReader{b: payload}
		case kind == frameDone:
			r.done = true
		default:
			r.err = r.w.outcome(kind, payload)
			if r.err == nil {
				r.err = r.w.protocolError("an ok answer among rows")
			}
		}
	}
	vals := make([]any, len(r.Columns))
	for i := range vals {
		v, err := r.batch.value()
		if err != nil {
			r.err = r.w.protocolError("a malformed row")
			return false
		}
		vals[i] = v
	}
	r.vals = vals
	return true
}

// close stops watching the query's context; the worker itself is closed
// with its instance.
func (r *workerRows) close() { r.stop() }

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}
