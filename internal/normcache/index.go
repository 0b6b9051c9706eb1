package normcache

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

// index maps keys to the entries that hold them. On disk it is one file:
// a header line naming its incarnation, then "<key> <entry id>\n" lines,
// appended under the lock; eviction compacts it into a new incarnation,
// replacing the file by a rename. It is a hint: a line may lead to an
// entry that is gone or corrupt, and the lookup then finds out and moves
// on. In memory it is read once and then only the lines appended since; a
// new incarnation (the inode number alone could be reused) is read again
// whole.
type index struct {
	mu      sync.Mutex
	header  string // of the incarnation read so far; "" before the first read
	offset  int64  // bytes of it consumed (whole lines)
	entries map[Key][]string
}

// headerPrefix starts an index file's first line.
const headerPrefix = "# normcache index "

// refresh brings the in-memory index up to date with the file.
func (c *Cache) refresh() map[Key][]string {
	x := &c.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	f, err := os.Open(c.path(indexFile))
	if err != nil {
		x.header, x.offset, x.entries = "", 0, nil // no index yet (or cleared)
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return x.entries
	}
	head := make([]byte, len(headerPrefix)+2*incarnationBytes+1)
	if _, err := io.ReadFull(f, head); err != nil {
		return x.entries
	}
	if string(head) != x.header || fi.Size() < x.offset {
		x.header, x.offset, x.entries = string(head), int64(len(head)), map[Key][]string{}
	}
	if fi.Size() == x.offset {
		return x.entries
	}
	data, err := io.ReadAll(io.NewSectionReader(f, x.offset, fi.Size()-x.offset))
	if err != nil {
		return x.entries
	}
	end := bytes.LastIndexByte(data, '\n') + 1 // a line still being appended waits for the next refresh
	x.offset += int64(end)
	for rest := string(data[:end]); rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		key, id, ok := strings.Cut(line, " ")
		k, kok := parseKey(key)
		if !ok || !kok || !isEntryID(id) {
			continue // a damaged line: ignored
		}
		x.entries[k] = append(x.entries[k], id)
	}
	return x.entries
}

// incarnationBytes is the size of an index incarnation's random name.
const incarnationBytes = 8

// newIndexHeader names a new incarnation of the index file.
func newIndexHeader() string {
	b := make([]byte, incarnationBytes)
	rand.Read(b)
	return headerPrefix + hex.EncodeToString(b) + "\n"
}

// appendIndex adds the lines of one entry; the caller holds the lock.
func (c *Cache) appendIndex(id string, members []Member) error {
	var b strings.Builder
	for _, m := range members {
		b.WriteString(m.Key.String())
		b.WriteByte(' ')
		b.WriteString(id)
		b.WriteByte('\n')
	}
	f, err := os.OpenFile(c.path(indexFile), os.O_WRONLY|os.O_APPEND, 0)
	if os.IsNotExist(err) {
		return replaceFile(c.path(indexFile), []byte(newIndexHeader()+b.String()))
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rewriteIndex keeps the lines whose entry is in keep; the caller holds
// the lock.
func (c *Cache) rewriteIndex(keep map[string]bool) error {
	data, err := os.ReadFile(c.path(indexFile))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var b bytes.Buffer
	b.WriteString(newIndexHeader())
	for _, line := range strings.Split(string(data), "\n") {
		if _, id, ok := strings.Cut(line, " "); ok && keep[id] {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return replaceFile(c.path(indexFile), b.Bytes())
}

// replaceFile replaces path by data through a rename, without fsync: the
// files it is used for are derived state that a crash may lose.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// locked runs fn holding the cache's lock (shared by every process using
// the directory).
func (c *Cache) locked(ctx context.Context, fn func() error) error {
	unlock, err := fsx.Lock(ctx, c.path(lockFile))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}
