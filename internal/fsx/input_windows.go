//go:build windows

package fsx

import (
	"context"
	"os"
)

// OpenInput opens path for reading (see input_unix.go); Windows has no
// FIFOs whose open blocks.
func OpenInput(ctx context.Context, path string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.Open(path)
}
