package hugeheap

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"unsafe"

	"golang.org/x/sys/unix"
)

// thpSetting is where Linux says when it backs anonymous memory with
// transparent huge pages: always, only where madvise asked (madvise), or
// never; the one in force is in brackets.
const thpSetting = "/sys/kernel/mm/transparent_hugepage/enabled"

// arenaBytes is the Go heap's arena size on 64-bit Linux; the heap grows
// upward from an arena's start.
const arenaBytes = 64 << 20

// probe is a heap object whose address shows where the heap starts.
var probe *[64]byte

// reserve maps reserveBytes of heap, asks for huge pages over everything
// mapped from the start of the heap's first arena to the end of that
// reservation, and frees the reservation at once. The collector then hands
// out those pages first (it allocates at the lowest free address), so what
// the process allocates next faults in 2 MiB at a time. It reports whether
// it advised the heap: not when the kernel already backs all memory with
// huge pages, never does, or refuses the advice, nor in a process whose
// memory is capped (RLIMIT_AS or RLIMIT_DATA), which the reservation must
// never be what runs out of it, nor in one whose heap has already grown
// past largeHeap: the reservation could then take memory the heap used
// before, which the runtime clears, touching every page. Untouched, the
// reservation costs address space, not memory. A small heap that has freed
// pages at its top risks the same (an allocation starting on them is
// cleared whole), which is why callers say their input before reading it:
// the reservation then comes while the heap is young.
func reserve() bool {
	setting, err := os.ReadFile(thpSetting)
	if err != nil || !bytes.Contains(setting, []byte("[madvise]")) || capped() || heapMapped() > largeHeap {
		return false
	}
	probe = new([64]byte)
	start := uintptr(unsafe.Pointer(probe))
	probe = nil
	buf := make([]byte, reserveBytes) // new memory: the runtime does not clear it, so nothing is touched
	first := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	lo := min(start, first) &^ (arenaBytes - 1)
	hi := max(start, first+reserveBytes)
	// A range that spans an unmapped gap is advised where it is mapped,
	// and reported as ENOMEM: that is not a failure here.
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE)
	runtime.KeepAlive(buf) // mapped until here; the collection frees it
	runtime.GC()
	return errno == 0 || errno == unix.ENOMEM
}

// heapMapped is the heap the runtime has mapped, in use or not.
func heapMapped() uint64 {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}
	metrics.Read(samples)
	var n uint64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			n += s.Value.Uint64()
		}
	}
	return n
}

// capped reports whether the process may map only so much.
func capped() bool {
	for _, resource := range []int{unix.RLIMIT_AS, unix.RLIMIT_DATA} {
		var lim unix.Rlimit
		if unix.Getrlimit(resource, &lim) != nil || lim.Cur != unix.RLIM_INFINITY {
			return true
		}
	}
	return false
}
