//go:build !linux

package engine

// limitData does nothing here: only Linux enforces a cap on mapped memory
// (RLIMIT_DATA) that covers mmap. Timeouts still stop workers.
func limitData(extra int64) (int64, error) { return 0, nil }

// mappedData is unknown here, so workers retire by query count alone.
func mappedData() (int64, error) { return 0, nil }
