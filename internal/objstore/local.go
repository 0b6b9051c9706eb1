package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

// Local is a Bucket over a local directory. Symbolic links are never
// followed (docs/query-model.md), and a pin is the file's size, mtime, device and
// inode: change detection, not a content hash.
type Local struct {
	root string
}

// NewLocal returns the Bucket rooted at dir. The directory need not exist
// yet (a writer creates it); listing a missing root is ErrNotFound.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Local{root: abs}, nil
}

func (l *Local) String() string { return "file://" + filepath.ToSlash(l.root) }
func (l *Local) Close() error   { return nil }

// path maps a key to its file, refusing keys that would leave the root.
func (l *Local) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("%s: invalid key %q", l, key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("%s: invalid key %q", l, key)
		}
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), nil
}

func (l *Local) info(key string, fi fs.FileInfo) ObjectInfo {
	dev, ino := devIno(fi)
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime(), Dev: dev, Inode: ino}
}

// List walks the directories the prefix can reach, emitting regular files in
// key order. Sibling names sort with a '/' appended to directories, which
// makes the depth-first walk produce exactly the byte order of the keys.
func (l *Local) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if _, err := os.Stat(l.root); err != nil {
		return l.fsErr(err, "list")
	}
	return l.walk(ctx, prefix[:strings.LastIndexByte(prefix, '/')+1], prefix, fn)
}

type localEntry struct {
	sortKey string // key, with '/' appended for a directory
	entry   fs.DirEntry
}

func (l *Local) walk(ctx context.Context, dirKey, prefix string, fn func(ObjectInfo) error) error {
	entries, err := os.ReadDir(filepath.Join(l.root, filepath.FromSlash(dirKey)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return nil // nothing under this prefix, as on an object store
	}
	if err != nil {
		return l.fsErr(err, "list")
	}
	var keep []localEntry
	for _, e := range entries {
		key := dirKey + e.Name()
		switch {
		case e.Type()&fs.ModeSymlink != 0:
		case e.IsDir():
			if sk := key + "/"; strings.HasPrefix(sk, prefix) || strings.HasPrefix(prefix, sk) {
				keep = append(keep, localEntry{sk, e})
			}
		case e.Type().IsRegular() && strings.HasPrefix(key, prefix):
			keep = append(keep, localEntry{key, e})
		}
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i].sortKey < keep[j].sortKey })
	for _, k := range keep {
		if err := ctx.Err(); err != nil {
			return err
		}
		if k.entry.IsDir() {
			if err := l.walk(ctx, k.sortKey, prefix, fn); err != nil {
				return err
			}
			continue
		}
		fi, err := k.entry.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir
		}
		if err != nil {
			return l.fsErr(err, "list")
		}
		if err := fn(l.info(k.sortKey, fi)); err != nil {
			return err
		}
	}
	return nil
}

func (l *Local) Stat(_ context.Context, key string) (ObjectInfo, error) {
	p, err := l.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return ObjectInfo{}, l.fsErr(err, "stat "+key)
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, fmt.Errorf("%s: stat %s: not a regular file: %w", l, key, ErrNotFound)
	}
	return l.info(key, fi), nil
}

// ReadPinned opens the file without following links and checks its
// fingerprint on the open descriptor, and again when the read reaches EOF.
func (l *Local) ReadPinned(_ context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	p, err := l.path(pin.Key)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &ChangedError{Bucket: l.String(), Pinned: pin, Reason: "object is gone"}
	}
	if err != nil {
		return nil, l.fsErr(err, "read "+pin.Key)
	}
	check := func() error {
		fi, err := f.Stat()
		if err != nil {
			return l.fsErr(err, "read "+pin.Key)
		}
		if reason := localMismatch(pin, l.info(pin.Key, fi)); reason != "" {
			return &ChangedError{Bucket: l.String(), Pinned: pin, Reason: reason}
		}
		return nil
	}
	if err := check(); err != nil {
		f.Close()
		return nil, err
	}
	return newCheckedReader(f, l.String(), pin, check), nil
}

func localMismatch(pin, seen ObjectInfo) string {
	switch {
	case seen.Size != pin.Size:
		return fmt.Sprintf("size is %d", seen.Size)
	case !seen.ModTime.Equal(pin.ModTime):
		return "mtime is " + seen.ModTime.UTC().Format("2006-01-02T15:04:05.999999999Z")
	case pin.Inode != 0 && (seen.Dev != pin.Dev || seen.Inode != pin.Inode):
		return "the file was replaced"
	}
	return ""
}

// Put replaces key atomically (temp file, fsync, rename).
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	p, err := l.prepare(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := fsx.WriteAtomic(p, 0o644, copyExactly(r, size)); err != nil {
		return ObjectInfo{}, l.fsErr(err, "put "+key)
	}
	return l.Stat(ctx, key)
}

// PutIfAbsent links a fully written temp file into place: link(2) fails if
// the name exists, so the publication is atomic even between processes.
func (l *Local) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	p, err := l.prepare(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	tmp, err := writeTemp(filepath.Dir(p), filepath.Base(p), r, size)
	if err != nil {
		return ObjectInfo{}, l.fsErr(err, "put "+key)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ObjectInfo{}, fmt.Errorf("%s: put %s: object exists: %w", l, key, ErrPrecondition)
		}
		return ObjectInfo{}, l.fsErr(err, "put "+key)
	}
	if err := fsx.SyncDir(filepath.Dir(p)); err != nil {
		return ObjectInfo{}, l.fsErr(err, "put "+key)
	}
	return l.Stat(ctx, key)
}

// PutIfMatch compares and replaces under an advisory lock on the directory,
// so it is atomic among writers using this package (not against others).
func (l *Local) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	p, err := l.prepare(prev.Key)
	if err != nil {
		return ObjectInfo{}, err
	}
	unlock, err := lockDir(filepath.Dir(p))
	if err != nil {
		return ObjectInfo{}, l.fsErr(err, "lock for "+prev.Key)
	}
	defer unlock()
	cur, err := l.Stat(ctx, prev.Key)
	if errors.Is(err, ErrNotFound) {
		return ObjectInfo{}, fmt.Errorf("%s: put %s: object is gone: %w", l, prev.Key, ErrPrecondition)
	}
	if err != nil {
		return ObjectInfo{}, err
	}
	if reason := localMismatch(prev, cur); reason != "" {
		return ObjectInfo{}, fmt.Errorf("%s: put %s: %s: %w", l, prev.Key, reason, ErrPrecondition)
	}
	return l.Put(ctx, prev.Key, r, size)
}

func (l *Local) prepare(key string) (string, error) {
	p, err := l.path(key)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", l.fsErr(err, "put "+key)
	}
	return p, nil
}

func writeTemp(dir, base string, r io.Reader, size int64) (string, error) {
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return "", err
	}
	err = copyExactly(r, size)(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// copyExactly copies size bytes and fails on a short or long source, so a
// truncated upload never becomes an object.
func copyExactly(r io.Reader, size int64) func(io.Writer) error {
	return func(w io.Writer) error {
		n, err := io.Copy(w, io.LimitReader(r, size+1))
		if err != nil {
			return err
		}
		if n != size {
			return fmt.Errorf("source has %d bytes, expected %d", n, size)
		}
		return nil
	}
}

func (l *Local) fsErr(err error, op string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %s: %w: %w", l, op, ErrNotFound, err)
	}
	return fmt.Errorf("%s: %s: %w", l, op, err)
}
