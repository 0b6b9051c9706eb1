//go:build !linux

package hugeheap

// reserve does nothing: transparent huge pages are Linux's.
func reserve() bool { return false }
