package testutil

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update rewrites golden files from the current output instead of comparing
// (go test ./... -run Golden -update); review the diff before committing.
var Update = flag.Bool("update", false, "rewrite golden files under testdata/ from the current output")

// Golden compares got with the golden file at path (relative to the test's
// package), or rewrites the file with -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	got = append(bytes.TrimSpace(got), '\n')
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the current output; rerun with -update and review the diff", path)
	}
}
