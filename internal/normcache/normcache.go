// Package normcache keeps the normalized rows of peripheral trajectory
// files between processes, so that a query over files that did not change
// reads Parquet rather than normalizing them again. It is derived,
// disposable state (docs/storage.md, "Normalization cache"):
//
//   - an entry is found only by a Key that digests the source's exact pin
//     and everything else its rows depend on, this build included, so it is
//     used only when all of that is identical;
//   - an entry is published whole (a staging directory renamed into place)
//     and is immutable afterwards; its manifest lists every file with its
//     size and checksum, and its name is the digest of the manifest,
//     so a lookup verifies everything it serves and removes a bad entry
//     instead (nothing is fsynced: a crash costs a rebuild, never a wrong
//     row);
//   - the total size is bounded, the least recently used entries going
//     first; processes sharing the directory coordinate through one lock
//     file for the index and the counters, and through renames for entries.
//
// The package knows nothing of formats or catalogs: a caller stores named
// files (one per relation) for a set of members and gets them back as private copies
// into a directory of its own.
package normcache

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/pchronicle/pchronicle/internal/model"
)

// layoutDir is the directory of this layout version inside a cache
// directory; a later layout uses another name and ignores this one.
const layoutDir = "normcache-v1"

// Names inside the layout directory.
const (
	entriesDir = "entries"    // entries/<id>/: manifest.json and the files
	stagingDir = "staging"    // locked directories of entries being written
	indexFile  = "index"      // append-only "<key> <entry id>" lines
	statsFile  = "stats.json" // counters since the last clear
	lockFile   = "lock"       // serializes index and counter updates, eviction, clear
)

// Cache is one cache directory. It is safe for concurrent use, and several
// processes may share the directory.
type Cache struct {
	dir   string // the layout directory
	build string // this build's identity, part of every Key

	idx index
}

// DefaultDir is the cache directory used unless another is given:
// pchronicle under the user cache directory ($XDG_CACHE_HOME or ~/.cache
// on Linux, ~/Library/Caches on macOS, %LocalAppData% on Windows).
func DefaultDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "pchronicle"), nil
}

var opened struct {
	mu     sync.Mutex
	caches map[string]*Cache
}

// Open returns the cache in dir, creating its directories (private to the
// user: entries hold the content of the trajectories). Every Open of one
// directory in a process returns the same Cache, so its index is read once.
func Open(dir string) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("normalization cache %s: %w", dir, err)
	}
	build, err := buildIdentity()
	if err != nil {
		return nil, fmt.Errorf("normalization cache %s: %w", dir, err)
	}
	layout := filepath.Join(abs, layoutDir)
	opened.mu.Lock()
	defer opened.mu.Unlock()
	if c := opened.caches[layout]; c != nil {
		return c, nil
	}
	c, err := open(layout, build)
	if err != nil {
		return nil, err
	}
	if opened.caches == nil {
		opened.caches = map[string]*Cache{}
	}
	opened.caches[layout] = c
	return c, nil
}

func open(layout, build string) (*Cache, error) {
	for _, d := range []string{filepath.Dir(layout), layout, filepath.Join(layout, entriesDir), filepath.Join(layout, stagingDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("normalization cache: %w", err)
		}
	}
	return &Cache{dir: layout, build: build}, nil
}

// Dir is the cache directory (as given to Open, made absolute).
func (c *Cache) Dir() string { return filepath.Dir(c.dir) }

func (c *Cache) path(names ...string) string {
	return filepath.Join(append([]string{c.dir}, names...)...)
}

// Key identifies one source's normalized rows.
type Key [16]byte

func (k Key) String() string { return hex.EncodeToString(k[:]) }

func parseKey(s string) (Key, bool) {
	var k Key
	if len(s) != 2*len(k) {
		return k, false
	}
	_, err := hex.Decode(k[:], []byte(s))
	return k, err == nil
}

// Key digests fields — the source's identity and exact pin, and every
// option that changes its rows — together with the cache layout, this
// build's identity and the row schema version. Fields are
// length-prefixed, so no two lists of fields share a key.
func (c *Cache) Key(fields ...string) Key {
	var room [512]byte
	buf := room[:0]
	field := func(v string) {
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(append(buf, ':'), v...)
	}
	field(layoutDir)
	field(c.build)
	field(strconv.Itoa(model.SchemaVersion))
	for _, f := range fields {
		field(f)
	}
	// A few hundred bytes: SHA-256 (in hardware on most CPUs) takes a
	// third of BLAKE3's time, and a query over many sources computes a key
	// per source and part.
	sum := sha256.Sum256(buf)
	return Key(sum[:len(Key{})])
}

// buildIdentity names the code that normalizes: an entry written by
// another build of pchronicle is never used, because any change to an
// adapter may change the rows it writes, and no version number a person
// bumps would be as reliable. It is the Go build ID of the executable
// (an ELF note, read without reading the program), or else a digest of
// the whole executable.
var buildIdentity = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("identifying this build: %w", err)
	}
	return executableIdentity(exe)
})

func executableIdentity(exe string) (string, error) {
	if f, err := elf.Open(exe); err == nil {
		defer f.Close()
		if s := f.Section(".note.go.buildid"); s != nil {
			if note, err := s.Data(); err == nil && len(note) > 0 {
				return "go-buildid:" + digest(note), nil
			}
		}
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("identifying this build: %w", err)
	}
	defer f.Close()
	h := blake3.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("identifying this build: %w", err)
	}
	return "executable:" + hex.EncodeToString(h.Sum(nil)), nil
}

func digest(data []byte) string {
	sum := blake3.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// errCorrupt marks an entry that failed verification: it is removed, and
// what it held is rebuilt by the caller.
var errCorrupt = errors.New("corrupt cache entry")
