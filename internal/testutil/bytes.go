package testutil

import (
	"bytes"
	"testing"
)

// Replace returns data with the first old replaced by new, failing the test
// when data has no old: a seed or fixture edited that way must really
// differ from the original.
func Replace(t testing.TB, data []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("no %q to replace in %.200s", old, data)
	}
	return bytes.Replace(data, []byte(old), []byte(new), 1)
}
