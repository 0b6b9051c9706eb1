//go:build unix && !(linux && (amd64 || arm64))

package catalog

import "golang.org/x/sys/unix"

func lstatatRaw(dirfd int, name string, st *unix.Stat_t) error {
	return unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
}
