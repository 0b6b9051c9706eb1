// Package hugeheap backs the Go heap of a one-shot command with transparent
// huge pages once the command starts work that allocates in earnest.
//
// A process pays a page fault for every page of memory it touches first.
// On virtual machines whose hypervisor shadows the guest's page tables one
// costs about 10 µs, and normalizing 100 MB of Codex rollouts faulted in
// about 9,000 pages of fresh heap: a seventh of the command's CPU. Backed
// by a transparent huge page, one fault maps 2 MiB instead of 4 KiB.
//
// Go stopped asking for huge pages itself (Go 1.21.1): in long-lived
// processes its scavenger returns pieces of them and khugepaged collapses
// them again, which inflated memory. A one-shot command ends long before
// that matters, so only a process that calls Allow reserves (the CLI's
// commands, not serve), and only once Expect has seen enough input for the
// forced collection of the reservation to pay off. See docs/performance.md
// ("Huge pages for the heap").
package hugeheap

import (
	"sync"
	"sync/atomic"
)

const (
	// reserveAfter is the input, in bytes, from which a process reserves:
	// with less, the heap stays small enough that the reservation's
	// collection costs more than the faults it saves.
	reserveAfter = 4 << 20
	// reserveBytes is the heap mapped and advised at once: several times
	// what a command normalizing on two threads keeps, and about what an
	// events append keeps of a segment's events until it writes them
	// (~180 MB of heap for 39 MB of JSONL).
	reserveBytes = 192 << 20
	// largeHeap is the heap mapped beyond which a process no longer
	// reserves (reserve).
	largeHeap = 64 << 20
)

var (
	allowed  atomic.Bool
	expected atomic.Int64
	reserved atomic.Bool
	once     sync.Once
)

// Allow lets this process reserve huge pages for its heap. Only a
// short-lived process should call it.
func Allow() { allowed.Store(true) }

// Expect tells the package that the process is about to read n bytes of
// input into Go values (a file to normalize). Once the input expected in
// all reaches reserveAfter, in a process that called Allow, it reserves
// (Reserved reports whether that happened). It is cheap enough to call per
// file.
func Expect(n int64) {
	if n <= 0 || reserved.Load() || !allowed.Load() {
		return
	}
	if expected.Add(n) >= reserveAfter {
		once.Do(func() { reserved.Store(reserve()) })
	}
}

// Reserved reports whether the heap has been advised to use huge pages.
func Reserved() bool { return reserved.Load() }
