// Package events implements the canonical events store: a directory named
// events.lance holding immutable, sorted Parquet segments of canonical events
// and a _manifest.json that names the visible segments of one revision.
//
// Writers (Append, Compact, GC) serialize on an advisory lock and publish a
// revision by writing its segments completely, then replacing _manifest.json
// atomically. Readers Pin a revision by decoding _manifest.json once and only
// ever open the segments it names, which are never modified; a pinned
// revision stays readable while newer ones are published (until GC removes
// its retired segments after the retention period). See
// docs/storage.md (canonical events store).
package events

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Names inside the store directory.
const (
	DirName      = "events.lance"
	ManifestName = "_manifest.json"
	lockName     = "_lock"
	segmentsDir  = "segments"
)

// ErrNotStore is matched (errors.Is) when a directory is not an events store.
var ErrNotStore = errors.New("not an events store")

// IsStore reports whether dir is an events store: a directory named
// events.lance that holds _manifest.json (the discovery rule).
func IsStore(dir string) bool {
	if filepath.Base(filepath.Clean(dir)) != DirName {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, ManifestName))
	return err == nil && st.Mode().IsRegular()
}

// Store is an open events store. It is safe for concurrent use; writers in
// other goroutines and processes are serialized by the store lock.
type Store struct {
	dir string

	mu  sync.Mutex // guards idx
	idx *index     // stream state of the last revision this Store saw, for Append
}

// Create makes a new, empty store at dir (revision 0). The directory's base
// name must be events.lance; an existing store is an error.
func Create(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if filepath.Base(abs) != DirName {
		return nil, fmt.Errorf("%s: an events store directory must be named %s", dir, DirName)
	}
	if err := os.MkdirAll(filepath.Join(abs, segmentsDir), 0o755); err != nil {
		return nil, err
	}
	s := &Store{dir: abs}
	unlock, err := s.lock(context.Background()) // held only by short critical sections
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(abs, ManifestName)); err == nil {
		return nil, fmt.Errorf("%s: %w", dir, fs.ErrExist)
	}
	m := &Manifest{FormatVersion: FormatVersion, SchemaVersion: model.SchemaVersion, Segments: []Segment{}, CreatedAt: time.Now().UTC()}
	if err := s.publish(m); err != nil {
		return nil, err
	}
	return s, fsx.SyncDir(filepath.Dir(abs))
}

// Open opens the store at dir. The manifest is read by Pin, not here, so
// a corrupt manifest is reported by the first Pin.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if !IsStore(abs) {
		return nil, fmt.Errorf("%s: %w (want a directory named %s holding %s)", dir, ErrNotStore, DirName, ManifestName)
	}
	return &Store{dir: abs}, nil
}

// OpenOrCreate opens the store at dir, creating it when dir does not exist
// or is empty.
func OpenOrCreate(dir string) (*Store, error) {
	if IsStore(dir) {
		return Open(dir)
	}
	s, err := Create(dir)
	if errors.Is(err, fs.ErrExist) { // another process created it first
		return Open(dir)
	}
	return s, err
}

// Dir returns the absolute store directory.
func (s *Store) Dir() string { return s.dir }

// Pin reads _manifest.json once and returns that revision. The Revision never
// re-reads the manifest; it reads only the segments it names.
func (s *Store) Pin() (*Revision, error) {
	path := filepath.Join(s.dir, ManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := decodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt manifest: %w", path, err)
	}
	return &Revision{Dir: s.dir, Manifest: *m}, nil
}

// publish writes m as the new _manifest.json atomically; callers hold the
// lock.
func (s *Store) publish(m *Manifest) error {
	data, err := encodeManifest(m)
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(filepath.Join(s.dir, ManifestName), data, 0o644)
}

// Revision is one pinned, immutable state of the store.
type Revision struct {
	// Dir is the absolute store directory.
	Dir string
	Manifest
}

// Path returns the absolute path of a segment of r.
func (r *Revision) Path(seg *Segment) string {
	return filepath.Join(r.Dir, filepath.FromSlash(seg.Path))
}

// Paths returns the absolute paths of r's segments, in manifest order.
func (r *Revision) Paths() []string {
	paths := make([]string, len(r.Segments))
	for i := range r.Segments {
		paths[i] = r.Path(&r.Segments[i])
	}
	return paths
}

// lock takes the store's writer lock (fsx.Lock on _lock), waiting for the
// current holder until ctx is done. A store removed meanwhile (RemoveEmpty)
// gives an error matching ErrNotStore.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	unlock, err = fsx.Lock(ctx, filepath.Join(s.dir, lockName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (removed while waiting for its lock): %w", s.dir, ErrNotStore, err)
	}
	return unlock, err
}

// RemoveEmpty removes the store if it holds no events and nobody is
// writing to it: revision 0, no segments, and nothing in the directory but
// what Create made. It is how a command that created the store and then
// appended nothing (a bad line, Ctrl-C) leaves the directory as it found
// it. It reports whether the store was removed; a store in use or holding
// anything else is left alone.
func (s *Store) RemoveEmpty() (bool, error) {
	unlock, ok, err := fsx.TryLock(filepath.Join(s.dir, lockName))
	if err != nil || !ok {
		return false, err
	}
	defer unlock()
	r, err := s.Pin()
	if err != nil {
		return false, err
	}
	if r.Revision != 0 || len(r.Segments) != 0 {
		return false, nil
	}
	created := map[string]bool{ManifestName: true, lockName: true, segmentsDir: true}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !created[e.Name()] {
			return false, nil
		}
	}
	if segs, err := os.ReadDir(filepath.Join(s.dir, segmentsDir)); err != nil || len(segs) > 0 {
		return false, err
	}
	// The manifest goes first: from then on the directory is no store.
	if err := os.Remove(filepath.Join(s.dir, ManifestName)); err != nil {
		return false, err
	}
	os.Remove(filepath.Join(s.dir, segmentsDir))
	os.Remove(filepath.Join(s.dir, lockName))
	return true, os.Remove(s.dir)
}
