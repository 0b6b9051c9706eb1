// Package childproc starts the child processes that work is isolated in —
// a query's DuckDB (engine) and a Directory request (worker) — which talk to
// their parent over their stdin and stdout.
package childproc

import (
	"os"
	"os/exec"
	"sync"
)

// Start starts cmd with plain pipes as its stdin and stdout and returns
// the parent's ends. Plain pipes rather than cmd.StdoutPipe: Wait runs as
// soon as the child exits, and must not close its output before the parent
// has read it.
func Start(cmd *exec.Cmd) (stdin, stdout *os.File, err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close() // the child's ends
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, err
	}
	return inW, outR, nil
}

// CappedBuffer keeps the first Max bytes written to it: a child's stderr,
// kept to explain its failure without holding whatever it prints.
type CappedBuffer struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

func (c *CappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.Max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (c *CappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}
