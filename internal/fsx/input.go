package fsx

import (
	"context"
	"io"
)

// ContextReader returns a reader of r whose Read returns ctx.Err() as soon
// as ctx is done, even while a Read of r is blocked on a pipe, FIFO or
// terminal with nothing to read: a command reading standard input stops
// promptly on Ctrl-C or SIGTERM instead of waiting for the producer. Each
// Read of r runs on its own goroutine into a buffer of its own; after a
// cancellation that goroutine is left to its blocked read, which ends when
// r is closed or the process exits, and its data is never used.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &ctxReader{ctx: ctx, r: r, done: make(chan readResult, 1)}
}

type ctxReader struct {
	ctx  context.Context
	r    io.Reader
	buf  []byte // owned by the reading goroutine until its result arrives
	done chan readResult
	err  error // sticky cancellation
}

type readResult struct {
	n   int
	err error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if cap(c.buf) < len(p) {
		c.buf = make([]byte, len(p))
	}
	buf := c.buf[:len(p)]
	go func() {
		n, err := c.r.Read(buf)
		c.done <- readResult{n, err}
	}()
	select {
	case res := <-c.done:
		return copy(p, buf[:res.n]), res.err
	case <-c.ctx.Done():
		c.err = c.ctx.Err()
		c.buf = nil // the abandoned goroutine keeps writing into the old one
		return 0, c.err
	}
}
