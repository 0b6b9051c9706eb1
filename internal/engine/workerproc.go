package engine

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/pchronicle/pchronicle/internal/engine/spawn"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// A process whose environment sets spawn.Env is a query worker
// (worker.go): the engine starts its own binary that way, so every program
// that links the engine — pchronicle, the benchmarks, any test binary — can
// serve as its own worker without a command of its own. The check runs at
// initialization, before main (or TestMain) does anything else.
func init() {
	v, ok := os.LookupEnv(spawn.Env)
	if !ok {
		return
	}
	if v != strconv.Itoa(spawn.Version) {
		fmt.Fprintf(os.Stderr, "query worker: protocol version %q, this binary speaks %d\n", v, spawn.Version)
		os.Exit(2)
	}
	if err := serveWorker(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "query worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// maxRequestBytes bounds one request frame (a statement filling a large
// sources table is the biggest).
const maxRequestBytes = 1 << 30

// serveWorker is a worker's whole life: the open request starts an
// in-memory DuckDB, then each exec request runs a statement and each query
// request runs one and streams its rows back, until the input ends — the
// engine closed it, or died — which also interrupts whatever DuckDB is
// doing. A cancel request stops the query being streamed. The worker never
// reads a file or the network on its own: everything it runs comes from
// the engine, which has validated the user's SQL and sandboxes the
// instance before any query.
func serveWorker(in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &workerServer{ctx: ctx, reqs: make(chan workerRequest), bw: bufio.NewWriterSize(out, 64<<10)}
	// Requests are read off the query's goroutine, so that a cancel or the
	// end of the input reaches DuckDB while it runs.
	go func() {
		defer cancel()
		br := bufio.NewReaderSize(in, 64<<10)
		var queries uint64
		for {
			kind, payload, err := readFrame(br, nil, maxRequestBytes)
			if err != nil {
				return
			}
			if kind == frameCancel {
				var c workerCancel
				if jsonx.Unmarshal(payload, &c) == nil {
					w.cancelQuery(c.Query)
				}
				continue
			}
			req := workerRequest{kind: kind, payload: payload}
			if kind == frameQuery || kind == frameArrowQuery {
				queries++
				req.query = queries
			}
			select {
			case w.reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	req, ok := w.next()
	if !ok { // an unused spare, closed by the engine
		return nil
	}
	var open workerOpen
	if req.kind != frameOpen || jsonx.Unmarshal(req.payload, &open) != nil || open.V != spawn.Version {
		return fmt.Errorf("the first request is not an open request of protocol version %d", spawn.Version)
	}
	db, err := sql.Open("duckdb", open.Config)
	if err == nil {
		w.conn, err = db.Conn(ctx)
	}
	if err := w.answer(err); err != nil || w.conn == nil {
		return err
	}
	limited := false
	for {
		req, ok := w.next()
		if !ok {
			return nil
		}
		switch req.kind {
		case frameExec:
			var exec workerExec
			if err := jsonx.Unmarshal(req.payload, &exec); err != nil {
				return fmt.Errorf("a malformed request: %w", err)
			}
			if err := w.answer(w.exec(ctx, exec.SQL)); err != nil {
				return err
			}
		case frameQuery, frameArrowQuery:
			var stmt workerStatement
			if err := jsonx.Unmarshal(req.payload, &stmt); err != nil {
				return fmt.Errorf("a malformed request: %w", err)
			}
			if !limited {
				// The cap comes with the first query, once DuckDB runs with
				// its threads started and the sandbox set up, on top of what
				// the process maps then: it bounds what queries add.
				if _, err := limitData(open.DataLimit); err != nil {
					return w.answer(fmt.Errorf("limiting the query worker's memory: %w", err))
				}
				limited = true
			}
			run := w.query
			if req.kind == frameArrowQuery {
				run = w.arrowQuery
			}
			if err := run(req.query, stmt); err != nil {
				return err
			}
		default:
			return fmt.Errorf("an unknown request %q", req.kind)
		}
	}
}

type workerRequest struct {
	kind    byte
	payload []byte
	query   uint64 // a query's number (workerCancel)
}

// workerServer runs a worker's requests on its DuckDB connection.
type workerServer struct {
	ctx  context.Context // ends with the worker's input
	reqs chan workerRequest
	bw   *bufio.Writer
	conn *sql.Conn

	mu       sync.Mutex
	running  uint64             // the number of the query being run (0: none)
	cancel   context.CancelFunc // its cancel
	canceled uint64             // the last query a cancel named
}

// next returns the next request, or false once the input has ended.
func (w *workerServer) next() (workerRequest, bool) {
	select {
	case req := <-w.reqs:
		return req, true
	case <-w.ctx.Done():
		return workerRequest{}, false
	}
}

// exec runs statements in order and stops at the first that fails.
func (w *workerServer) exec(ctx context.Context, stmts []string) error {
	for i, stmt := range stmts {
		if _, err := w.conn.ExecContext(ctx, stmt); err != nil {
			return &statementError{index: i, err: err}
		}
	}
	return nil
}

// answer sends the outcome of a request.
func (w *workerServer) answer(err error) error {
	if err != nil {
		if werr := writeJSON(w.bw, frameError, newWorkerError(err)); werr != nil {
			return werr
		}
	} else if werr := writeFrame(w.bw, frameOK, nil); werr != nil {
		return werr
	}
	return w.bw.Flush()
}

// cancelQuery stops query n if it runs, or keeps it from starting if it
// has not started yet; a cancel of a query that already ended is ignored.
func (w *workerServer) cancelQuery(n uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.canceled = max(w.canceled, n)
	if w.running == n && w.cancel != nil {
		w.cancel()
	}
}

// started registers query n as the one running, for cancelQuery, and
// returns its context and what to call when it ends.
func (w *workerServer) started(n uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancel(w.ctx)
	w.mu.Lock()
	w.running, w.cancel = n, cancel
	if w.canceled >= n {
		cancel()
	}
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		w.running, w.cancel = 0, nil
		w.mu.Unlock()
		cancel()
	}
}

// rowsFrameBytes is about how much of a result is sent at once.
const rowsFrameBytes = 64 << 10

// query runs the statement and streams its columns, its rows in frames of
// about rowsFrameBytes, and the end: done, or the error that ended it (a
// cancel is one). The engine reads as it needs; the pipe holds the worker
// back. Only a failure to write is returned: the engine is gone.
func (w *workerServer) query(n uint64, stmt workerStatement) error {
	ctx, done := w.started(n)
	defer done()
	args := make([]any, len(stmt.Args))
	for i, a := range stmt.Args {
		args[i] = a
	}
	rows, err := w.conn.QueryContext(ctx, stmt.SQL, args...)
	if err != nil {
		return w.answer(err)
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return w.answer(err)
	}
	hdr := workerColumns{}
	for _, c := range cols {
		hdr.Names = append(hdr.Names, c.Name())
		hdr.Types = append(hdr.Types, c.DatabaseTypeName())
	}
	if err := writeJSON(w.bw, frameColumns, hdr); err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var batch []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return w.answer(err)
		}
		for _, v := range vals {
			if batch, err = appendValue(batch, plainValue(v)); err != nil {
				return w.answer(err)
			}
		}
		if len(batch) >= rowsFrameBytes {
			if err := writeFrame(w.bw, frameRows, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		if ctx.Err() != nil {
			return w.answer(ctx.Err())
		}
	}
	if err := rows.Err(); err != nil {
		return w.answer(err)
	}
	if len(batch) > 0 {
		if err := writeFrame(w.bw, frameRows, batch); err != nil {
			return err
		}
	}
	if err := writeFrame(w.bw, frameDone, nil); err != nil {
		return err
	}
	return w.bw.Flush()
}
