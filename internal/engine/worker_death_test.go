package engine

import "testing"

// TestOutOfMemoryRecognizesEveryAllocator checks the worker deaths that are
// reported as running out of memory (naming --memory-limit) rather than as
// an internal failure: each line is what that runtime prints as it dies.
func TestOutOfMemoryRecognizesEveryAllocator(t *testing.T) {
	for _, c := range []struct {
		stderr string
		want   bool
	}{
		{"fatal error: runtime: out of memory", true},
		{"terminate called after throwing an instance of 'std::bad_alloc'", true},
		{"runtime: cannot allocate memory", true},
		{"runtime: failed to create new OS thread (have 12 already; errno=12)", true},
		{"runtime/cgo: pthread_create failed: Resource temporarily unavailable", true},
		{"panic: runtime error: index out of range [3] with length 3", false},
		{"query worker: protocol version \"3\", this binary speaks 4", false},
		{"", false},
	} {
		if got := outOfMemory(c.stderr); got != c.want {
			t.Errorf("outOfMemory(%q) = %v, want %v", c.stderr, got, c.want)
		}
	}
}
