//go:build !(linux || solaris || darwin || freebsd || netbsd || openbsd || dragonfly)

package catalog

import "os"

// openDir opens a directory to list it.
func openDir(path string) (*os.File, error) { return os.Open(path) }
