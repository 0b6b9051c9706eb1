//go:build !unix

package catalog

import "os"

// devIno is unavailable here; the fingerprint falls back to size and mtime.
func devIno(os.FileInfo) (dev, ino uint64) { return 0, 0 }
