package fsx

import (
	"io"
	"os"
)

// LinkOrCopy makes dst (which must not exist) a hard link to src, or a
// copy of it where linking fails (another filesystem, a filesystem without
// links). Callers share immutable files this way: a Snapshot carrying a
// resolution over, the normalization cache storing and serving entries.
func LinkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return Copy(src, dst)
}

// Copy makes dst (which must not exist, created private to the user) a
// copy of src that shares no bytes with it: what one process writes into
// either later never shows in the other. io.Copy between files uses
// copy_file_range on Linux, which a filesystem with reflinks (btrfs, XFS)
// may serve without copying the data.
func Copy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}
