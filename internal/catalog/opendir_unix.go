//go:build linux || solaris || darwin || freebsd || netbsd || openbsd || dragonfly

package catalog

import (
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens a directory to list it or to stat its files relative to it.
// os.Open would also offer the descriptor to the network poller: four fcntl
// calls and an epoll_ctl, all failed or undone for a directory, which were
// a third of the system calls of a walk over a tree of small directories.
func openDir(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
