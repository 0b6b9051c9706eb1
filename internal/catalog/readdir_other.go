//go:build !linux

package catalog

import (
	"errors"
	"io"
	"os"
)

// readEntries reads the entries of the open directory f a batch at a time.
func readEntries(f *os.File, fn func(batch []dirEntry) error) error {
	for {
		list, err := f.ReadDir(1024)
		batch := make([]dirEntry, len(list))
		for i, e := range list {
			batch[i] = dirEntry{name: e.Name(), typ: e.Type()}
		}
		if len(batch) > 0 {
			if ferr := fn(batch); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(list) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
