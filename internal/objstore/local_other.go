//go:build !unix

package objstore

import (
	"errors"
	"io/fs"
)

const oNoFollow = 0

var errNotDir = errors.New("not a directory")

func devIno(fs.FileInfo) (dev, ino uint64) { return 0, 0 }

// lockDir is a no-op off Unix: PutIfMatch there only narrows the race.
func lockDir(string) (func(), error) { return func() {}, nil }
