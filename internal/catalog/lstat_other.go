//go:build !(linux || solaris || darwin || freebsd || netbsd || openbsd || dragonfly)

package catalog

import (
	"os"
	"path/filepath"
)

// fileRevision has no device and inode here; the fingerprint falls back to
// size and mtime.
func fileRevision(fi os.FileInfo) FileRevision {
	return FileRevision{Size: fi.Size(), ModTime: fi.ModTime()}
}

func lstatAt(_ *os.File, dirPath, name string) (FileRevision, error) {
	fi, err := os.Lstat(filepath.Join(dirPath, name))
	if err != nil {
		return FileRevision{}, err
	}
	return fileRevision(fi), nil
}
