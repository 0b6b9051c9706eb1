package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

// ChunkSize is the unit in which Download copies a pinned object.
const ChunkSize = 1 << 20

// Download copies the pinned object to dstPath through a 1 MiB buffer into a temp
// file in the destination directory, a check that the final size is the
// pinned size, then an atomic rename. The object is never held in memory
// whole, and dstPath never holds a partial or changed copy.
func Download(ctx context.Context, b Bucket, pin ObjectInfo, dstPath string) error {
	rc, err := b.ReadPinned(ctx, pin)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(dstPath), 0o755); err != nil {
		return err
	}
	return fsx.WriteAtomic(dstPath, 0o644, func(w io.Writer) error {
		buf := make([]byte, ChunkSize)
		var n int64
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			k, rerr := rc.Read(buf)
			if k > 0 {
				if _, err := w.Write(buf[:k]); err != nil {
					return err
				}
				n += int64(k)
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return downloadErr(b, pin, rerr)
			}
		}
		if n != pin.Size {
			return &ChangedError{Bucket: b.String(), Pinned: pin, Reason: fmt.Sprintf("downloaded %d bytes, pinned %d", n, pin.Size)}
		}
		return nil
	})
}

// downloadErr names the object in a failed read, unless the error already
// does (the remote backends' *Error and every *ChangedError).
func downloadErr(b Bucket, pin ObjectInfo, err error) error {
	var oe *Error
	var ce *ChangedError
	if errors.As(err, &oe) || errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("download %s/%s: %w", b, pin.Key, err)
}
