//go:build linux || solaris || darwin || freebsd || netbsd || openbsd || dragonfly

package catalog

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func fileRevision(fi os.FileInfo) FileRevision {
	rev := FileRevision{Size: fi.Size(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		rev.Dev, rev.Inode, rev.ChangeTime = uint64(st.Dev), uint64(st.Ino), changeTime(st)
	}
	return rev
}

// lstatAt pins the file name of the open directory dir (at dirPath) without
// following a symlink, relative to the directory: no path lookup per file.
// With no dir, it looks the whole path up.
func lstatAt(dir *os.File, dirPath, name string) (FileRevision, error) {
	var st unix.Stat_t
	var err error
	fd, rel := unix.AT_FDCWD, name
	if dir != nil {
		fd = int(dir.Fd())
	} else {
		rel = filepath.Join(dirPath, name)
	}
	for {
		if err = lstatatRaw(fd, rel, &st); err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return FileRevision{}, &os.PathError{Op: "lstat", Path: filepath.Join(dirPath, name), Err: err}
	}
	return FileRevision{Size: st.Size, ModTime: time.Unix(st.Mtim.Unix()), Dev: uint64(st.Dev), Inode: uint64(st.Ino),
		ChangeTime: time.Unix(st.Ctim.Unix())}, nil
}
