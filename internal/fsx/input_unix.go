//go:build unix

package fsx

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// OpenInput opens path for a command that reads it once, start to end: a
// regular file, a character device, or a FIFO such as the /dev/fd/N of a
// shell's process substitution <(cmd). Opening a FIFO blocks in open(2)
// until a writer opens the other end; OpenInput waits for one only until
// ctx is done. Wrap the file in ContextReader to make its reads stop on
// cancellation too.
func OpenInput(ctx context.Context, path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
		// Complete the rendezvous from our side, which releases the blocked
		// open(2), and close what it opened.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			if o := <-done; o.f != nil {
				o.f.Close()
			}
			w.Close()
		}
		return nil, fmt.Errorf("%s: waiting for a writer to open the FIFO: %w", path, ctx.Err())
	}
}
