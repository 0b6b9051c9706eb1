package fsx

import (
	"fmt"
	"os"
	"path/filepath"
)

// Ancestor returns the nearest of dir and its parents that holds an entry
// named name (the repository root is Ancestor(wd, "go.mod")).
func Ancestor(dir, name string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for start := dir; ; {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s in %s or above it", name, start)
		}
		dir = parent
	}
}
