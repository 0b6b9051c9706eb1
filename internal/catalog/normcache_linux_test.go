//go:build linux

package catalog_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

func changeTime(fi os.FileInfo) time.Time {
	return time.Unix(fi.Sys().(*syscall.Stat_t).Ctim.Unix())
}

// watchOpens reports, once stop is called, how many times files in dir were
// opened, read, written or had their metadata changed (inotify).
func watchOpens(t *testing.T, dir string) (stop func() int) {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_ACCESS|syscall.IN_MODIFY|syscall.IN_ATTRIB); err != nil {
		t.Fatal(err)
	}
	return func() int {
		defer syscall.Close(fd)
		n := 0
		buf := make([]byte, 64<<10)
		for {
			k, err := syscall.Read(fd, buf)
			if k <= 0 || err != nil {
				return n
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= k; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				if ev.Len > 0 { // an event of a file in dir, not of dir itself
					n++
				}
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// TestSourcesAreNeverTouched: the cache writes nothing to a source, and a
// process served from the cache does not even open one (its atime and
// everything else stay as they were); the check itself sees the opens of a
// process that normalizes.
func TestSourcesAreNeverTouched(t *testing.T) {
	defer catalog.SetRacyWindow(0)()
	root, dir := t.TempDir(), t.TempDir()
	files := map[string]string{"a.jsonl": chat("one"), "b.jsonl": chat("bee")}
	for name, content := range files {
		os.WriteFile(filepath.Join(root, name), []byte(content), 0o644)
	}
	type state struct {
		fi      os.FileInfo
		atime   time.Time
		content []byte
	}
	snapshot := func() map[string]state {
		out := map[string]state{}
		for name := range files {
			p := filepath.Join(root, name)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(p) // after the stat: its own read may move the atime
			out[name] = state{fi, time.Unix(fi.Sys().(*syscall.Stat_t).Atim.Unix()), b}
		}
		return out
	}
	same := func(a, b map[string]state, atime bool) {
		t.Helper()
		for name := range files {
			x, y := a[name], b[name]
			if x.fi.Size() != y.fi.Size() || !x.fi.ModTime().Equal(y.fi.ModTime()) || changeTime(x.fi) != changeTime(y.fi) ||
				x.fi.Mode() != y.fi.Mode() || !bytes.Equal(x.content, y.content) || (atime && !x.atime.Equal(y.atime)) {
				t.Fatalf("%s was touched: %v %v → %v %v", name, x.fi.ModTime(), x.atime, y.fi.ModTime(), y.atime)
			}
		}
	}
	before := snapshot()
	stop := watchOpens(t, root)
	mustCachedQuery(t, root, cacheOptions(dir), batchSQL)
	if n := stop(); n == 0 {
		t.Fatal("the watch saw no open of a normalizing process")
	}
	afterCold := snapshot()
	same(before, afterCold, false)
	stop = watchOpens(t, root)
	mustCachedQuery(t, root, cacheOptions(dir), batchSQL)
	if n := stop(); n != 0 {
		t.Fatalf("a process served from the cache opened or changed sources %d times", n)
	}
	same(afterCold, snapshot(), true)
	if st := testutil.CacheStats(t, dir); st.Hits != 2 {
		t.Fatalf("stats %+v", st)
	}
}
