package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/pchronicle/pchronicle/internal/catalog"
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

// describe replaces the words before the bar.
func (p *progress) describe(s string) {
	if p.bar == nil {
		return
	}
	p.mu.Lock()
	p.bar.Describe(s)
	p.mu.Unlock()
}

// normalizing shows, on a terminal, the sources a query normalizes: how
// many of them and how many bytes are done, the rate and the time left
// (catalog.ResolveProgress). Off a terminal it shows nothing.
type normalizing struct {
	w     io.Writer
	mu    sync.Mutex
	bar   *progress
	total int
	done  int
}

// withNormalizing returns ctx with progress reported to w while the
// command's sources are normalized, and the function that clears it,
// which must be called before the result is printed.
func withNormalizing(ctx context.Context, w io.Writer) (context.Context, func()) {
	if !isTerminal(w) {
		return ctx, func() {}
	}
	n := &normalizing{w: w}
	return catalog.WithResolveProgress(ctx, n), n.finish
}

func (n *normalizing) Start(sources int, bytes int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.bar != nil { // a later batch of the same command: a bar of its own
		n.bar.finish()
	}
	n.total, n.done = sources, 0
	n.bar = newProgress(n.w, bytes, n.words(), true)
}

func (n *normalizing) Done(bytes int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.bar == nil {
		return
	}
	n.done++
	n.bar.describe(n.words())
	n.bar.add(bytes)
}

func (n *normalizing) words() string {
	return fmt.Sprintf("normalizing %d/%d sources", n.done, n.total)
}

func (n *normalizing) finish() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.bar != nil {
		n.bar.finish()
		n.bar = nil
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
