//go:build unix

package testutil

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TooDeepDir creates under root a chain of directories whose path is longer
// than PATH_MAX, so that opening the deepest by path fails with
// ENAMETOOLONG (as it does for every user: no permission trick, which root
// would ignore). It creates them relative to open parents, writes file
// (with content) at the bottom, and returns the bottom directory's path
// relative to root.
func TooDeepDir(t testing.TB, root, file, content string) string {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("d", 200)
	var rel []string
	for len(root)+len(rel)*(len(name)+1) <= 4096+len(name) {
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd, rel = next, append(rel, name)
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, file, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, []byte(content)); err != nil {
		t.Fatal(err)
	}
	// t.TempDir's cleanup (os.RemoveAll) removes such trees relative to
	// open parents, so no cleanup is needed here.
	return filepath.Join(rel...)
}
