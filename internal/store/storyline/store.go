// Package storyline implements the Storyline store: a directory recognized
// by its CURRENT file, which names the current immutable generation. A
// generation directory (gen-000042/) holds runs.parquet, steps.parquet and
// tool_calls.parquet (zstd, rows sorted by session_id) and a strict JSON
// manifest.json with row counts, byte sizes, the schema version and, for
// projections, the lineage.
//
// Publication writes the whole generation under a temporary name, fsyncs it,
// renames it into place and only then replaces CURRENT atomically, so a
// reader sees the old generation or the new one, never a mix. Readers Pin
// the generation once and never re-read CURRENT; old generations stay on
// disk until GC removes them after the retention period. docs/storage.md
// documents the layout and guarantees.
package storyline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

// CurrentFile names the file whose presence makes a directory a store.
const CurrentFile = "CURRENT"

const (
	genPrefix = "gen-"
	tmpPrefix = ".tmp-gen-"
	lockFile  = "LOCK"
)

// ErrNotStore is matched by errors for directories without CURRENT.
var ErrNotStore = errors.New("not a storyline store (no CURRENT file)")

// Store is an opened Storyline store directory. It holds no open files; a
// Store is safe for concurrent use.
type Store struct {
	dir string
	now func() time.Time // injectable for retention tests
}

// Generation is a pinned, immutable generation.
type Generation struct {
	Number   int64
	Dir      string // absolute path of the generation directory
	Manifest Manifest
}

// Path returns the absolute path of a relation's Parquet file (runs, steps
// or tool_calls).
func (g *Generation) Path(rel string) string {
	return filepath.Join(g.Dir, g.Manifest.Tables[rel].File)
}

// Name is the generation directory name, e.g. gen-000042.
func (g *Generation) Name() string { return genName(g.Number) }

// IsStore reports whether dir is a Storyline store (has a CURRENT file).
func IsStore(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, CurrentFile))
	return err == nil && st.Mode().IsRegular()
}

// Create makes dir (and missing parents) a new store whose current
// generation 0 is empty, so that every store can be pinned and queried.
// It fails if dir is already a store.
func Create(dir string) error {
	s, err := Prepare(dir)
	if err != nil {
		return err
	}
	w, err := s.NewGeneration()
	if err != nil {
		return err
	}
	_, err = w.commit(context.Background(), nil, true)
	return err
}

// Prepare returns a handle for writing to dir whether or not it is a store
// yet. If it is not, nothing is created until the first Commit, which makes
// it a store with that generation as its first (Pin fails with ErrNotStore
// until then). Importers use it so that a failed first import leaves no
// store behind.
func Prepare(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storyline: %w", err)
	}
	return &Store{dir: abs, now: time.Now}, nil
}

// ErrNotEmpty is matched by CheckTarget's error for a directory that holds
// files of its own, or a file.
var ErrNotEmpty = errors.New("not an empty directory or a Storyline store")

// CheckTarget reports whether an importer may make dir a store: dir is a
// store already, or does not exist, or holds nothing but what an unfinished
// first write of a store leaves (LOCK, .tmp-gen-*, gen-*). Any other
// content is the user's (a folder of trajectories, typically): a store
// written there would take it over, and discovery would then read the
// folder as the store and never again as the user's files.
func CheckTarget(dir string) error {
	if IsStore(dir) {
		return nil
	}
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err == nil && !st.IsDir() {
		return fmt.Errorf("%s is a file, %w: a store is a directory pchronicle owns, so name a new or empty directory", dir, ErrNotEmpty)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("storyline: %w", err)
	}
	var foreign []string
	for _, e := range entries {
		name := e.Name()
		// What a store's writers leave while they work: the lock, a
		// generation being built, and CURRENT being replaced (fsx's
		// temporary name) by a concurrent first import.
		if name == lockFile || strings.HasPrefix(name, tmpPrefix) || strings.HasPrefix(name, "."+CurrentFile+".tmp-") ||
			(e.IsDir() && strings.HasPrefix(name, genPrefix)) {
			continue
		}
		if e.IsDir() {
			name += "/"
		}
		foreign = append(foreign, name)
	}
	if len(foreign) == 0 {
		return nil
	}
	more := ""
	if len(foreign) > 3 {
		more = fmt.Sprintf(" and %d more", len(foreign)-3)
		foreign = foreign[:3]
	}
	return fmt.Errorf("%s is %w (it holds %s%s): a store is a directory pchronicle owns, so name a new or empty directory",
		dir, ErrNotEmpty, strings.Join(foreign, ", "), more)
}

// Open opens an existing store.
func Open(dir string) (*Store, error) {
	s, err := Prepare(dir)
	if err != nil {
		return nil, err
	}
	if !IsStore(s.dir) {
		return nil, fmt.Errorf("storyline: %s: %w", dir, ErrNotStore)
	}
	return s, nil
}

// OpenOrCreate opens the store at dir, creating it first when dir is not a
// store yet.
func OpenOrCreate(dir string) (*Store, error) {
	if !IsStore(dir) {
		if err := Create(dir); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return Open(dir)
}

// Dir is the store's absolute directory.
func (s *Store) Dir() string { return s.dir }

// Pin reads CURRENT once and returns the generation it names, after
// checking its manifest and that every table file has the recorded size.
// Callers keep using the returned Generation; they never re-read CURRENT.
func (s *Store) Pin() (*Generation, error) {
	num, err := s.current()
	if err != nil {
		return nil, err
	}
	return s.generation(num)
}

// current parses CURRENT, which holds one generation directory name.
func (s *Store) current() (int64, error) {
	path := filepath.Join(s.dir, CurrentFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("storyline: %s: %w", s.dir, ErrNotStore)
	}
	if err != nil {
		return 0, fmt.Errorf("storyline: %w", err)
	}
	name := strings.TrimSuffix(string(data), "\n")
	num, ok := ParseGenerationName(name)
	if !ok {
		return 0, fmt.Errorf("storyline: %s: corrupt: want a generation name like gen-000001, got %q", path, truncate(name, 40))
	}
	return num, nil
}

// generation loads and checks generation num.
func (s *Store) generation(num int64) (*Generation, error) {
	dir := filepath.Join(s.dir, genName(num))
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("storyline: %s names %s: %w", filepath.Join(s.dir, CurrentFile), genName(num), err)
	}
	m, err := readManifest(dir, num)
	if err != nil {
		return nil, err
	}
	g := &Generation{Number: num, Dir: dir, Manifest: m}
	for _, rel := range Tables {
		path := g.Path(rel)
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("storyline: table %s: %w", rel, err)
		}
		if want := m.Tables[rel].Bytes; st.Size() != want {
			return nil, fmt.Errorf("storyline: %s: %d bytes, manifest records %d (truncated or replaced file)", path, st.Size(), want)
		}
	}
	return g, nil
}

// publish makes generation num current. The caller holds the store lock.
// The outgoing generation's directory mtime is set to now first, because GC
// measures retention from the moment a generation stops being current.
func (s *Store) publish(num int64) error {
	if prev, err := s.current(); err == nil {
		now := s.now()
		// Best effort: a missing previous generation has nothing to protect.
		_ = os.Chtimes(filepath.Join(s.dir, genName(prev)), now, now)
	}
	return fsx.WriteFileAtomic(filepath.Join(s.dir, CurrentFile), []byte(genName(num)+"\n"), 0o644)
}

// nextNumber returns one more than the highest generation on disk or named
// by CURRENT, so numbers never repeat even after failed publications.
func (s *Store) nextNumber() (int64, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("storyline: %w", err)
	}
	next := int64(0)
	if cur, err := s.current(); err == nil {
		next = cur + 1
	}
	for _, e := range entries {
		if n, ok := ParseGenerationName(e.Name()); ok && n >= next {
			next = n + 1
		}
	}
	return next, nil
}

func genName(n int64) string { return fmt.Sprintf("%s%06d", genPrefix, n) }

// ParseGenerationName parses a generation directory name (gen- and at
// least six digits) into its number.
func ParseGenerationName(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, genPrefix)
	if !ok || len(digits) < 6 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// lockStore takes the store's writer lock, waiting for the current holder
// until ctx is done: publications and GC of one store are serialized;
// readers never lock.
func lockStore(ctx context.Context, dir string) (unlock func(), err error) {
	unlock, err = fsx.Lock(ctx, filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("storyline: %w", err)
	}
	return unlock, nil
}

// removeUnpublished removes what a failed writer leaves in a directory
// that never became a store: the lock file, and the directories the writer
// created for it (created, the topmost; see fsx.MkdirAllNew) as far as they
// are empty, so a directory the user made keeps their files. Nothing is
// removed while another writer's temp directory or generation is there:
// that writer is still at work (writers create it before they lock). held
// is the store lock when the caller holds it; otherwise the lock is taken
// only if it is free.
func (s *Store) removeUnpublished(held func(), created string) {
	if held == nil {
		unlock, ok, err := fsx.TryLock(filepath.Join(s.dir, lockFile))
		if err != nil || !ok {
			return
		}
		defer unlock()
	}
	if IsStore(s.dir) {
		return
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, gen := ParseGenerationName(e.Name()); gen || strings.HasPrefix(e.Name(), tmpPrefix) {
			return
		}
	}
	os.Remove(filepath.Join(s.dir, lockFile))
	fsx.RemoveCreated(s.dir, created)
}
