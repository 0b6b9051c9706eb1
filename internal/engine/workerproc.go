package engine

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// workerEnv, set to workerVersion in a process's environment, makes the
// process a query worker (worker.go): the engine starts its own binary
// that way, so every program that links the engine — pchronicle, the
// benchmarks, any test binary — can serve as its own worker without a
// command of its own. The check runs at initialization, before main (or
// TestMain) does anything else.
const workerEnv = "PCHRONICLE_ENGINE_WORKER"

// workerVersion changes whenever the frames change.
const workerVersion = 1

func init() {
	v, ok := os.LookupEnv(workerEnv)
	if !ok {
		return
	}
	if v != strconv.Itoa(workerVersion) {
		fmt.Fprintf(os.Stderr, "query worker: protocol version %q, this binary speaks %d\n", v, workerVersion)
		os.Exit(2)
	}
	if err := serveWorker(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "query worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// maxRequestBytes bounds one request frame (set-up statements filling a
// large sources table are the biggest).
const maxRequestBytes = 1 << 30

// serveWorker is a worker's whole life: open an in-memory DuckDB and run
// the set-up of the open request, then the requests that follow, the last
// being the query, whose rows it streams back. It exits after the query,
// or as soon as its input ends (the engine closes it to interrupt), which
// cancels whatever DuckDB is doing. It never reads a file or the network
// on its own: everything it runs comes from the engine, which has already
// validated the user's SQL, and the set-up sandboxes the instance before
// the query.
func serveWorker(in io.Reader, out io.Writer) error {
	br := bufio.NewReaderSize(in, 64<<10)
	bw := bufio.NewWriterSize(out, 64<<10)
	kind, payload, err := readFrame(br, nil, maxRequestBytes)
	if err == io.EOF { // an unused spare, closed by the engine
		return nil
	}
	if err != nil {
		return err
	}
	var open workerOpen
	if kind != frameOpen || jsonx.Unmarshal(payload, &open) != nil || open.V != workerVersion {
		return fmt.Errorf("the first request is not an open request of protocol version %d", workerVersion)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	w := &workerServer{conn: conn, bw: bw}
	if err := w.exec(ctx, open.Stmts); err != nil {
		return w.answer(err)
	}
	// The limit comes after DuckDB started its threads, on top of what the
	// process then maps, so that it bounds what queries add.
	if err := limitData(open.DataLimit); err != nil {
		return w.answer(fmt.Errorf("limiting the query worker's memory: %w", err))
	}
	if err := w.answer(nil); err != nil {
		return err
	}
	// Requests are read off the query's goroutine so that the end of the
	// input interrupts DuckDB.
	type request struct {
		kind    byte
		payload []byte
	}
	reqs := make(chan request)
	go func() {
		defer cancel()
		for {
			kind, payload, err := readFrame(br, nil, maxRequestBytes)
			if err != nil {
				return
			}
			select {
			case reqs <- request{kind, payload}:
			case <-ctx.Done():
				return
			}
			if kind == frameQuery { // nothing follows but the end of the input
				io.Copy(io.Discard, br)
				return
			}
		}
	}()
	for {
		var req request
		select {
		case req = <-reqs:
		case <-ctx.Done():
			return nil
		}
		switch req.kind {
		case frameExec:
			var x workerExec
			if err := jsonx.Unmarshal(req.payload, &x); err != nil {
				return fmt.Errorf("a malformed exec request: %w", err)
			}
			if err := w.answer(w.exec(ctx, x.Stmts)); err != nil {
				return err
			}
		case frameQuery:
			var q workerQuery
			if err := jsonx.Unmarshal(req.payload, &q); err != nil {
				return fmt.Errorf("a malformed query request: %w", err)
			}
			return w.query(ctx, q.SQL)
		default:
			return fmt.Errorf("an unknown request %q", req.kind)
		}
	}
}

// workerServer runs a worker's requests on its DuckDB connection.
type workerServer struct {
	conn *sql.Conn
	bw   *bufio.Writer
}

// exec runs set-up statements; an error names the statement.
func (w *workerServer) exec(ctx context.Context, stmts []string) error {
	for _, stmt := range stmts {
		if _, err := w.conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %v", firstLine(stmt), err)
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

// rowsFrameBytes is about how much of a result is sent at once.
const rowsFrameBytes = 64 << 10

// query runs the statement and streams its columns, its rows in frames of
// about rowsFrameBytes, and the end (done, or the error that ended it).
// The engine reads as it needs; the pipe holds the worker back.
func (w *workerServer) query(ctx context.Context, sqlText string) error {
	rows, err := w.conn.QueryContext(ctx, sqlText)
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
