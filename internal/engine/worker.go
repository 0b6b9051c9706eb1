package engine

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pchronicle/pchronicle/internal/childproc"
	"github.com/pchronicle/pchronicle/internal/engine/spawn"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// A worker is the process a query instance's DuckDB runs in (docs/sql.md,
// "Limits"). DuckDB cannot interrupt every computation — a constant it
// folds while planning, one huge string or list — and keeps only its
// buffers under memory_limit, so in the engine's own process a single
// query could run past its timeout and take the memory of the whole
// process, and with it the server. In a worker, the kernel caps what the
// instance may map (limitData), and the engine kills a worker that has not
// stopped within killGrace of being interrupted; either way the engine
// carries on, and the error says which limit to raise.
//
// To the rest of the engine a worker is a database/sql connection
// (openWorkerDB): it runs statements and streams rows like DuckDB's own
// driver, with DuckDB's errors, so an instance is used the same way
// whether DuckDB runs here or there.
type worker struct {
	proc      *os.Process
	state     *os.ProcessState // how it ended, once exited is closed
	stdin     *os.File
	stdout    *os.File
	bw        *bufio.Writer // to stdin, under wmu
	br        *bufio.Reader
	stderr    *childproc.CappedBuffer
	exited    chan struct{} // closed when the process has been reaped
	limits    Limits
	dataLimit int64 // what the worker may map beyond its first query (0: unbounded)
	buf       []byte
	queries   uint64 // queries sent, numbering them for cancels

	// oomKills is the kernel's count of out-of-memory kills when the
	// worker started (-1: unknown), to tell its OOM killer from a kill -9.
	oomKills int64

	wmu    sync.Mutex // serializes writes to stdin
	mu     sync.Mutex
	broken bool // the worker was killed or died
	killed bool // the engine killed it
}

// killGrace is how long a worker has to stop a query after being asked to
// before it is killed: DuckDB normally stops within milliseconds.
const killGrace = 250 * time.Millisecond

// openWorkerDB returns a database/sql handle whose connections are
// workers with the given limits.
func openWorkerDB(limits Limits) *sql.DB {
	return sql.OpenDB(workerConnector{limits})
}

type workerConnector struct{ limits Limits }

func (c workerConnector) Connect(ctx context.Context) (driver.Conn, error) {
	w, err := startWorker(c.limits)
	if err != nil {
		return nil, err
	}
	if err := w.request(ctx, frameOpen, workerOpen{V: spawn.Version, DataLimit: w.dataLimit, Config: c.limits.openConfig()}); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (workerConnector) Driver() driver.Driver { return workerDriver{} }

type workerDriver struct{}

func (workerDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("query workers are opened through their connector")
}

// startWorker starts a worker process.
func startWorker(limits Limits) (*worker, error) {
	data, err := dataLimit(limits)
	if err != nil {
		return nil, err
	}
	p := spawn.TakeEarly() // a one-shot command's, started before main
	if p == nil {
		if p, err = spawn.Start(); err != nil {
			return nil, fmt.Errorf("starting the query worker: %w", err)
		}
	}
	w := &worker{proc: p.Process, stdin: p.Stdin, stdout: p.Stdout, limits: limits, dataLimit: data,
		stderr: &childproc.CappedBuffer{Max: 16 << 10}, exited: make(chan struct{}), oomKills: oomKills()}
	w.bw = bufio.NewWriterSize(w.stdin, 64<<10)
	w.br = bufio.NewReaderSize(w.stdout, 64<<10)
	copied := make(chan struct{})
	go func() {
		io.Copy(w.stderr, p.Stderr) // until the worker's end closes it
		p.Stderr.Close()
		close(copied)
	}()
	go func() {
		state, err := p.Wait()
		<-copied // what it printed explains its end
		if err != nil {
			state = nil
		}
		w.state = state
		close(w.exited)
	}()
	return w, nil
}

// Prepare is not supported: the engine runs statements directly
// (ExecContext, QueryContext), and database/sql uses them.
func (w *worker) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("query workers do not prepare statements")
}

func (w *worker) Begin() (driver.Tx, error) {
	return nil, errors.New("query workers do not run transactions")
}

// IsValid tells database/sql not to reuse a worker that broke.
func (w *worker) IsValid() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.broken
}

// ExecContext runs one statement without arguments.
func (w *worker) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) > 0 {
		return nil, errors.New("query workers take no statement arguments")
	}
	if err := w.execAll(ctx, []string{query}); err != nil {
		var se *statementError
		if errors.As(err, &se) {
			err = se.err
		}
		return nil, err
	}
	return driver.ResultNoRows, nil
}

// execAll runs statements in order in one round trip; it stops at the first
// that fails, and a *statementError names it.
func (w *worker) execAll(ctx context.Context, stmts []string) error {
	return w.request(ctx, frameExec, workerExec{SQL: stmts})
}

// QueryContext runs one statement, with string arguments only, and returns
// its rows, which stream from the worker as they are read.
func (w *worker) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	stmt := workerStatement{SQL: query}
	for _, a := range args {
		s, ok := a.Value.(string)
		if !ok {
			return nil, fmt.Errorf("query workers take only string arguments, not %T", a.Value)
		}
		stmt.Args = append(stmt.Args, s)
	}
	r := w.startQuery(ctx, frameRows)
	if err := w.send(frameQuery, stmt); err != nil {
		return nil, r.end(err)
	}
	kind, payload, err := w.read()
	if err != nil {
		return nil, r.end(err)
	}
	if kind != frameColumns {
		return nil, r.end(w.outcome(kind, payload))
	}
	var cols workerColumns
	if err := jsonx.Unmarshal(payload, &cols); err != nil || len(cols.Names) != len(cols.Types) {
		return nil, r.end(w.protocolError("a malformed columns answer"))
	}
	r.columns, r.types = cols.Names, cols.Types
	return r, nil
}

// startQuery numbers the next query and watches ctx to cancel it; its
// result comes in frames of the data kind.
func (w *worker) startQuery(ctx context.Context, data byte) *workerRows {
	w.queries++
	r := &workerRows{w: w, query: w.queries, data: data, ended: make(chan struct{})}
	r.stop = context.AfterFunc(ctx, r.interrupt)
	return r
}

// request sends one request and waits for its answer; if ctx ends first,
// the worker is killed (a statement other than a query has no cancel).
func (w *worker) request(ctx context.Context, kind byte, req any) error {
	stop := context.AfterFunc(ctx, w.kill)
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

func (w *worker) send(kind byte, req any) error {
	data, err := jsonx.Marshal(req)
	if err != nil {
		return err
	}
	w.wmu.Lock()
	err = writeFrame(w.bw, kind, data)
	if err == nil {
		err = w.bw.Flush()
	}
	w.wmu.Unlock()
	if err != nil {
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

// kill ends the worker at once.
func (w *worker) kill() {
	w.mu.Lock()
	w.broken, w.killed = true, true
	w.mu.Unlock()
	w.proc.Kill()
}

// failed explains a pipe that failed: the engine killed the worker (the
// caller reports why, e.g. its context's error), or it died on its own —
// out of memory, or a crash.
func (w *worker) failed(err error) error {
	w.mu.Lock()
	w.broken = true
	killed := w.killed
	w.mu.Unlock()
	if killed {
		return fmt.Errorf("the query worker was stopped: %w", err)
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
	stderr := w.stderr.String()
	var ws syscall.WaitStatus
	if w.state != nil {
		ws, _ = w.state.Sys().(syscall.WaitStatus)
	}
	killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL
	if outOfMemory(stderr) || killed && oomKilledSince(w.oomKills) {
		return &QueryError{Kind: KindResources, Err: fmt.Errorf("the query's process ran out of memory%s: %s", w.capText(), memoryHint(w.limits))}
	}
	if killed {
		return &QueryError{Kind: KindInternal, Err: errors.New("the query's process was killed (SIGKILL) from outside pchronicle, and the kernel reports no out-of-memory kill")}
	}
	msg := firstLine(strings.TrimSpace(stderr))
	if msg == "" && w.state != nil {
		msg = w.state.String()
	}
	return &QueryError{Kind: KindInternal, Err: fmt.Errorf("the query worker failed: %s", msg)}
}

// oomKills reads the kernel's count of out-of-memory kills (-1 where it
// cannot be read).
func oomKills() int64 {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// oomKilledSince reports whether the kernel's OOM killer killed a process
// since its count was before: the likeliest sender of a SIGKILL the engine
// did not send. Where the count cannot be read, it is assumed.
func oomKilledSince(before int64) bool {
	now := oomKills()
	return before < 0 || now < 0 || now > before
}

// outOfMemory reports whether a worker's stderr says an allocation failed:
// Go's runtime (a heap or a thread's stack: the cap on what the worker may
// map makes a new thread's stack fail with EAGAIN, which cgo reports as
// pthread_create's "Resource temporarily unavailable"), the C++ runtime or
// DuckDB's allocator.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "std::bad_alloc", "cannot allocate memory", "failed to create new OS thread",
		"pthread_create failed: Resource temporarily unavailable"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// Close ends the worker: its input closes, so it exits (interrupting
// anything it still runs), and it is killed if it has not exited within
// killGrace.
func (w *worker) Close() error {
	w.wmu.Lock()
	w.stdin.Close()
	w.wmu.Unlock()
	w.stdout.Close() // a worker still writing rows gets EPIPE
	select {
	case <-w.exited:
	case <-time.After(killGrace):
		w.kill()
		<-w.exited
	}
	return nil
}

// workerRows is a query's result as the worker streams it.
type workerRows struct {
	w       *worker
	query   uint64 // its number, for a cancel
	data    byte   // the kind of its data frames: frameRows or frameArrow
	columns []string
	types   []string
	stop    func() bool   // ends the watch over the query's context
	ended   chan struct{} // closed when the last frame of the query was read
	once    sync.Once
	batch   valueReader
	err     error // what ended the rows (io.EOF: done)
}

func (r *workerRows) Columns() []string { return r.columns }

func (r *workerRows) ColumnTypeDatabaseTypeName(i int) string { return r.types[i] }

// Next decodes the next row into dest; io.EOF at the end.
func (r *workerRows) Next(dest []driver.Value) error {
	if err := r.fill(); err != nil {
		return err
	}
	for i := range dest {
		v, err := r.batch.value()
		if err != nil {
			return r.end(r.w.protocolError("a malformed row"))
		}
		dest[i] = v
	}
	return nil
}

// fill reads frames until one holds rows, or the query ends.
func (r *workerRows) fill() error {
	for len(r.batch.b) == 0 {
		if r.err != nil {
			return r.err
		}
		kind, payload, err := r.w.read()
		switch {
		case err != nil:
			return r.end(err)
		case kind == r.data && (kind == frameArrow || len(r.columns) > 0):
			r.batch = valueReader{b: payload}
		case kind == frameDone:
			return r.end(io.EOF)
		default:
			err := r.w.outcome(kind, payload)
			if err == nil {
				err = r.w.protocolError("an unexpected answer among rows")
			}
			return r.end(err)
		}
	}
	return nil
}

// end records what ended the query's frames and returns it.
func (r *workerRows) end(err error) error {
	r.once.Do(func() {
		r.err = err
		r.stop()
		close(r.ended)
	})
	return r.err
}

// interrupt asks the worker to stop the query, and kills it if the query
// has not ended within killGrace.
func (r *workerRows) interrupt() {
	data, _ := jsonx.Marshal(workerCancel{Query: r.query})
	r.w.wmu.Lock()
	writeFrame(r.w.bw, frameCancel, data)
	r.w.bw.Flush()
	r.w.wmu.Unlock()
	select {
	case <-r.ended:
	case <-time.After(killGrace):
		r.w.kill()
	}
}

// Close stops a query that is still streaming (the worker answers the
// cancel by ending the rows) and skips what it still sends, so that the
// worker can run the next statement.
func (r *workerRows) Close() error {
	if r.err != nil {
		return nil
	}
	go r.interrupt()
	for r.fill() == nil {
		r.batch.b = nil
	}
	return nil
}

// capText describes the worker's cap, for messages.
func (w *worker) capText() string {
	if w.dataLimit <= 0 {
		return ""
	}
	return fmt.Sprintf(" (it may map %s beyond what it held before its first query)", formatBytes(w.dataLimit))
}

func formatBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
