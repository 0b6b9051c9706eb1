package cli

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar shown only when w is an interactive terminal;
// pipes and logs get nothing (commands print their own summary). A nil
// bar makes every method a no-op, and the methods are safe for concurrent
// use.
type progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

// newProgress starts a bar of total units (-1: a spinner with a count);
// bytes formats the count as sizes.
func newProgress(w io.Writer, total int64, description string, bytes bool) *progress {
	if !isTerminal(w) {
		return &progress{}
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	}
	return &progress{bar: progressbar.NewOptions64(total, opts...)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func (p *progress) add(n int64) {
	if p.bar == nil {
		return
	}
	p.mu.Lock()
	p.bar.Add64(n)
	p.mu.Unlock()
}

// set moves the bar to n (for counters reported as totals).
func (p *progress) set(n int64) {
	if p.bar == nil {
		return
	}
	p.mu.Lock()
	p.bar.Set64(n)
	p.mu.Unlock()
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
