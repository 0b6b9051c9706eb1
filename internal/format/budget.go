package format

import (
	"context"
	"fmt"
	"sync"
)

// documentCharge is how much memory a document read whole counts for, per
// byte of the file: the bytes themselves, their decoded form and the
// Storyline built from them are all alive at once. Measured peaks of
// normalizing one 200 MB document: ATIF 6.2x, OpenAI messages 4.2x
// (docs/performance.md).
const documentCharge = 6

// sessionCharge is the same for a line-oriented file whose Storylines are
// held until the file ends (HoldSession): the lines stream, so only the
// Storylines count. Measured: a 106 MB Claude Code session raised peak RSS
// by 1.5x its size (docs/performance.md).
const sessionCharge = 2

// A DocumentBudget bounds the memory that whole documents take while one
// query's sources are normalized (docs/sql.md, "Limits"): line-oriented
// files stream, but a single-document layout is read and decoded whole —
// and so is a line longer than the read buffer, often a whole document
// written on one line — and several files normalize at once. A document
// waits until the documents before it have been normalized if together
// they would take more than the budget, and fails at once if it alone
// would.
type DocumentBudget struct {
	limit int64
	grow  chan struct{} // held by the one reader whose hold may grow (LineHold)
	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed (and replaced) whenever memory is given back
}

// NewDocumentBudget returns a budget of limit bytes (at most 0: none).
func NewDocumentBudget(limit int64) *DocumentBudget {
	if limit <= 0 {
		return nil
	}
	return &DocumentBudget{limit: limit, grow: make(chan struct{}, 1), freed: make(chan struct{})}
}

func budgetOf(ctx context.Context) *DocumentBudget {
	b, _ := ctx.Value(budgetKey{}).(*DocumentBudget)
	return b
}

type budgetKey struct{}

// WithDocumentBudget returns ctx carrying b for the whole-document reads
// (ReadWhole) done under it.
func WithDocumentBudget(ctx context.Context, b *DocumentBudget) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetError: a document (or one line) alone would take more memory than
// its budget.
type BudgetError struct {
	Path        string // the file, or "" when the caller names it
	Line        int64  // the line read whole, or 0 for the whole file
	Session     bool   // the file is a session held until it ends (HoldSession)
	Size        int64  // its bytes (at least)
	Need, Limit int64  // the memory it would take, and the budget's
}

func (e *BudgetError) Error() string {
	what := fmt.Sprintf("%s: this %s JSON document is read whole", e.Path, byteSize(e.Size))
	switch {
	case e.Session:
		what = fmt.Sprintf("%s: this %s session is held in memory until its file ends", e.Path, byteSize(e.Size))
	case e.Line > 0:
		what = fmt.Sprintf("line %d is longer than %s and read whole", e.Line, byteSize(e.Size))
		if e.Path != "" {
			what = e.Path + ": " + what
		}
	}
	return fmt.Sprintf("%s, which takes about %s of memory, more than max_document_memory (--max-document-memory, now %d bytes) allows: raise it",
		what, byteSize(e.Need), e.Limit)
}

// HoldSession counts a line-oriented file whose Storylines an adapter holds
// until the file ends (a Claude Code session, whose subagents' lines
// interleave with the main conversation's) against the budget in ctx, as
// ReadWhole counts a document: many such sessions normalizing at once wait
// for each other, and one that alone would take more than the budget fails
// before it is read. It returns the function that gives the memory back; a
// file of unknown size holds nothing.
func HoldSession(ctx context.Context, src Source) (release func(), err error) {
	return hold(ctx, src, src.Size, true)
}

// hold counts a document (or a session) of size bytes against the budget
// in ctx, waiting while others hold too much, and returns the function that
// gives it back. Without a budget it holds nothing.
func hold(ctx context.Context, src Source, size int64, session bool) (release func(), err error) {
	b := budgetOf(ctx)
	if b == nil || size <= 0 {
		return func() {}, nil
	}
	need := size * documentCharge
	if session {
		need = size * sessionCharge
	}
	if need > b.limit {
		return nil, &BudgetError{Path: src.Path, Session: session, Size: size, Need: need, Limit: b.limit}
	}
	if err := b.take(ctx, 0, need); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { b.give(need) }) }, nil
}

// CheckDocument fails with a *BudgetError when a document of size bytes
// (what names it: a file, an entry of an archive) alone would take more
// memory than the budget in ctx: what a reader that inflates compressed
// data checks as the bytes grow. Without a budget it never fails.
func CheckDocument(ctx context.Context, what string, size int64) error {
	b := budgetOf(ctx)
	if b == nil {
		return nil
	}
	if need := size * documentCharge; need > b.limit {
		return &BudgetError{Path: what, Size: size, Need: need, Limit: b.limit}
	}
	return nil
}

// take raises a hold of held bytes to need, waiting while the others hold
// too much for it.
func (b *DocumentBudget) take(ctx context.Context, held, need int64) error {
	for {
		b.mu.Lock()
		if b.used-held+need <= b.limit {
			b.used += need - held
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// A LineHold counts a line of unknown length against the budget as it is
// read. Only one reader's hold grows at a time: a growing hold waits
// for holds that do not wait for anything, so two of them can never wait
// for each other.
type LineHold struct {
	b    *DocumentBudget
	held int64
}

// HoldLine starts a growing hold on ctx's budget (nil without one), for a
// reader about to read a line longer than its buffer.
func HoldLine(ctx context.Context) (*LineHold, error) {
	b := budgetOf(ctx)
	if b == nil {
		return nil, nil
	}
	select {
	case b.grow <- struct{}{}:
		return &LineHold{b: b}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// To makes the hold cover a line of size bytes so far (line: its number).
func (g *LineHold) To(ctx context.Context, line, size int64) error {
	need := size * documentCharge
	if need > g.b.limit {
		return &BudgetError{Line: line, Size: size, Need: need, Limit: g.b.limit}
	}
	if err := g.b.take(ctx, g.held, need); err != nil {
		return err
	}
	g.held = need
	return nil
}

// Release gives the hold back and lets another reader's hold grow.
func (g *LineHold) Release() {
	if g == nil {
		return
	}
	g.b.give(g.held)
	<-g.b.grow
}

func (b *DocumentBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// byteSize renders n for messages: 1.5 GB, 200 MB, 12 KB.
func byteSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d bytes", n)
}
