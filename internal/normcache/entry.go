package normcache

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sync/errgroup"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// manifestFile is an entry's manifest; the entry's directory is named after
// its digest (entryID).
const manifestFile = "manifest.json"

// manifestLayout is the manifest's format version.
const manifestLayout = 2

// Member is one source whose normalized rows an entry holds.
type Member struct {
	Key Key
	// File is the _file_ value of its rows.
	File string
	// Format is the format detected when it was normalized.
	Format string
	// Warnings are what its normalization reported (kept as they were).
	Warnings []string
	// NoRows marks a source that contributes no rows (a file no adapter
	// recognized, under the warn policy): its warnings say why.
	NoRows bool
}

// manifest is an entry's manifest.json: strict JSON, written once.
type manifest struct {
	Layout    int          `json:"layout"`
	CreatedAt time.Time    `json:"created_at"`
	Members   []memberJSON `json:"members"`
	// Owners are the _file_ values of every source with rows in the
	// files: the members, and sources normalized with them that could not
	// be kept (one that failed half way).
	Owners []string   `json:"owners"`
	Files  []fileJSON `json:"files"`

	members map[Key]int // index into Members
}

type memberJSON struct {
	Key      string   `json:"key"`
	File     string   `json:"file"`
	Format   string   `json:"format"`
	Warnings []string `json:"warnings,omitempty"`
	NoRows   bool     `json:"no_rows,omitempty"`
}

type fileJSON struct {
	Relation string `json:"relation"`
	Bytes    int64  `json:"bytes"`
	XXH3     string `json:"xxh3"`
}

// relationName is what a relation may be called: it becomes a file name.
var relationName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`) })

// fileName is the file of a relation inside an entry.
func fileName(relation string) string { return relation + ".parquet" }

// decodeManifest reads a manifest strictly and checks what a reader relies
// on; any failure is errCorrupt.
func decodeManifest(data []byte) (*manifest, error) {
	var m manifest
	if err := jsonx.DecodeStrict(data, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", errCorrupt, err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", errCorrupt, err)
	}
	return &m, nil
}

func (m *manifest) validate() error {
	if m.Layout != manifestLayout {
		return fmt.Errorf("layout %d, this build reads %d", m.Layout, manifestLayout)
	}
	if len(m.Members) == 0 {
		return errors.New("no members")
	}
	owners := map[string]bool{}
	for _, o := range m.Owners {
		if owners[o] {
			return fmt.Errorf("owner %q twice", o)
		}
		owners[o] = true
	}
	m.members = make(map[Key]int, len(m.Members))
	for i, mb := range m.Members {
		k, ok := parseKey(mb.Key)
		if !ok {
			return fmt.Errorf("member %d: bad key %q", i, mb.Key)
		}
		if _, dup := m.members[k]; dup {
			return fmt.Errorf("member %d: key %s twice", i, mb.Key)
		}
		if !mb.NoRows && !owners[mb.File] {
			return fmt.Errorf("member %d: %q has rows but is not an owner", i, mb.File)
		}
		m.members[k] = i
	}
	seen := map[string]bool{}
	for _, f := range m.Files {
		if !relationName().MatchString(f.Relation) || seen[f.Relation] {
			return fmt.Errorf("bad or repeated relation %q", f.Relation)
		}
		seen[f.Relation] = true
		if f.Bytes < 0 {
			return fmt.Errorf("%s: negative size", f.Relation)
		}
		if sum, err := hex.DecodeString(f.XXH3); err != nil || len(sum) != 16 {
			return fmt.Errorf("%s: bad digest %q", f.Relation, f.XXH3)
		}
	}
	if len(m.Files) > 0 && len(m.Owners) == 0 {
		return errors.New("files without owners")
	}
	return nil
}

func (m *manifest) member(k Key) (Member, bool) {
	i, ok := m.members[k]
	if !ok {
		return Member{}, false
	}
	mb := m.Members[i]
	return Member{Key: k, File: mb.File, Format: mb.Format, Warnings: mb.Warnings, NoRows: mb.NoRows}, true
}

func (m *manifest) bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Bytes
	}
	return n
}

// entryID names an entry after its manifest's digest, so that reading the
// manifest back verifies it.
func entryID(manifestData []byte) string { return digest(manifestData)[:32] }

// isEntryID reports whether s has the form of an entry's id: 32 lowercase
// hex digits.
func isEntryID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// readManifest reads and verifies the manifest of entry id.
func (c *Cache) readManifest(id string) (*manifest, error) {
	data, err := os.ReadFile(c.path(entriesDir, id, manifestFile))
	if err != nil {
		return nil, c.missing(id, err)
	}
	if entryID(data) != id {
		return nil, fmt.Errorf("%w: manifest does not match its digest", errCorrupt)
	}
	return decodeManifest(data)
}

// write stages the files (relation → path, copied, then digested: a hard
// link would let a later write into the cache reach the Snapshot that
// normalized them) with their manifest and publishes the entry by a rename. It
// returns the entry's id and its size (files and manifest). Nothing is fsynced: a
// lookup verifies every file, so a crash costs at most a rebuild.
func (c *Cache) write(members []Member, owners []string, files map[string]string) (string, int64, error) {
	stage, release, err := fsx.MkdirTempLocked(c.path(stagingDir), stagingPrefix)
	if err != nil {
		return "", 0, err
	}
	defer release()
	published := false
	defer func() {
		if !published {
			os.RemoveAll(stage)
		}
	}()
	m := manifest{Layout: manifestLayout, CreatedAt: time.Now().UTC(), Owners: owners}
	for _, mb := range members {
		m.Members = append(m.Members, memberJSON{Key: mb.Key.String(), File: mb.File, Format: mb.Format, Warnings: mb.Warnings, NoRows: mb.NoRows})
	}
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	staged := make([]string, len(rels))
	for i, rel := range rels {
		if !relationName().MatchString(rel) {
			return "", 0, fmt.Errorf("normalization cache: bad relation name %q", rel)
		}
		staged[i] = filepath.Join(stage, fileName(rel))
		if err := fsx.Copy(files[rel], staged[i]); err != nil {
			return "", 0, err
		}
	}
	sums, sizes, err := checksumFiles(staged)
	if err != nil {
		return "", 0, err
	}
	for i, rel := range rels {
		m.Files = append(m.Files, fileJSON{Relation: rel, Bytes: sizes[i], XXH3: sums[i]})
	}
	if err := m.validate(); err != nil {
		return "", 0, fmt.Errorf("normalization cache: %w", err)
	}
	data, err := jsonx.Marshal(&m)
	if err != nil {
		return "", 0, err
	}
	id := entryID(data)
	if err := os.WriteFile(filepath.Join(stage, manifestFile), data, 0o600); err != nil {
		return "", 0, err
	}
	// The staging lock goes before the rename; the removal itself makes
	// the directory recently modified, which keeps reclaimers off it.
	if err := os.Remove(filepath.Join(stage, fsx.TempLockFile)); err != nil {
		return "", 0, err
	}
	if err := os.Rename(stage, c.path(entriesDir, id)); err != nil {
		if _, statErr := os.Lstat(c.path(entriesDir, id)); statErr != nil {
			return "", 0, err
		}
		// The same entry exists already (the id is the manifest's digest).
	} else {
		published = true
	}
	return id, m.bytes() + int64(len(data)), nil
}

// checksumSegment is the unit of a file's checksum: files are read and
// hashed in segments of this size on all CPUs, so that verifying one large
// entry file (a hit's main cost) is not bound to one core.
const checksumSegment = 4 << 20

// checksumBuffers are what checksumFiles reads into: pieces small enough
// to stay in the CPU's cache between the copy and the hash (whole segments
// would go through memory twice), reused because a fresh buffer's pages
// cost a warm query more than hashing them (page faults).
var checksumBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// checksumFiles returns each file's size and checksum (hex): XXH3-128 over
// the XXH3-128 digests of its segments. The checksum guards against
// truncation, damage and crashes, not against an adversary (who could write
// the cache directory anyway), so it need not be cryptographic; it runs at
// memory speed, where BLAKE3 (1.6 GB/s per core) made the check of a
// warm query cost more than its query.
func checksumFiles(paths []string) (sums []string, sizes []int64, err error) {
	files := make([]*os.File, len(paths))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	sizes = make([]int64, len(paths))
	segments := make([][]xxh3.Uint128, len(paths))
	type segment struct{ file, index int }
	var work []segment
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		files[i] = f
		st, err := f.Stat()
		if err != nil {
			return nil, nil, err
		}
		sizes[i] = st.Size()
		n := int((st.Size() + checksumSegment - 1) / checksumSegment)
		segments[i] = make([]xxh3.Uint128, n)
		for j := range n {
			work = append(work, segment{i, j})
		}
	}
	var next atomic.Int64
	var g errgroup.Group
	for range min(runtime.GOMAXPROCS(0), len(work)) {
		g.Go(func() error {
			bp := checksumBuffers.Get().(*[]byte)
			defer checksumBuffers.Put(bp)
			buf := *bp
			h := xxh3.New()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(work) {
					return nil
				}
				s := work[k]
				h.Reset()
				off := int64(s.index) * checksumSegment
				end := min(off+checksumSegment, sizes[s.file])
				for ; off < end; off += int64(len(buf)) {
					piece := buf[:min(int64(len(buf)), end-off)]
					if _, err := files[s.file].ReadAt(piece, off); err != nil {
						return fmt.Errorf("%s: %w", paths[s.file], err)
					}
					h.Write(piece)
				}
				segments[s.file][s.index] = h.Sum128()
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	sums = make([]string, len(paths))
	for i, segs := range segments {
		list := make([]byte, 0, 16*len(segs))
		for _, s := range segs {
			b := s.Bytes()
			list = append(list, b[:]...)
		}
		b := xxh3.Hash128(list).Bytes()
		sums[i] = hex.EncodeToString(b[:])
	}
	return sums, sizes, nil
}

// link makes the files of entry id available under dir as private copies
// and verifies the copies against the manifest: a missing, truncated or
// altered file is errCorrupt. A copy, not a hard link: the Snapshot then
// reads exactly the bytes that were verified, whatever anyone writes into
// the cache while it lives (docs/storage.md, "What a Snapshot trusts"). It
// returns relation → copied path.
func (c *Cache) link(id string, m *manifest, dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	linked := make([]string, len(m.Files))
	for i, f := range m.Files {
		linked[i] = filepath.Join(dir, fileName(f.Relation))
		if err := fsx.Copy(c.path(entriesDir, id, fileName(f.Relation)), linked[i]); err != nil {
			return nil, c.missing(id, err)
		}
	}
	sums, sizes, err := checksumFiles(linked)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m.Files))
	for i, f := range m.Files {
		if sizes[i] != f.Bytes || sums[i] != f.XXH3 {
			return nil, fmt.Errorf("%w: %s holds %d bytes with digest %s, the manifest records %d bytes with %s",
				errCorrupt, f.Relation, sizes[i], sums[i], f.Bytes, f.XXH3)
		}
		out[f.Relation] = linked[i]
	}
	return out, nil
}

// missing explains a file of entry id that could not be opened: when the
// whole entry is gone, it was evicted or cleared meanwhile (a plain miss);
// when only the file is, the entry is corrupt.
func (c *Cache) missing(id string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Lstat(c.path(entriesDir, id)); serr != nil {
		return err
	}
	return fmt.Errorf("%w: %v", errCorrupt, err)
}

// removals makes the names of entries being removed unique.
var removals atomic.Int64

// remove deletes an entry (corrupt, or evicted). It is first renamed out
// of entries/, so that readers see a whole entry or none (missing), then
// deleted. Its index lines stay until the next compaction; they lead
// nowhere.
func (c *Cache) remove(id string) error {
	gone := c.path(stagingDir, fmt.Sprintf("%s%s-%d-%d", removedPrefix, id, os.Getpid(), removals.Add(1)))
	if err := os.Rename(c.path(entriesDir, id), gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed by someone else
		}
		return err
	}
	return os.RemoveAll(gone)
}

// touch records a use of an entry for the eviction order (its
// directory's mtime).
func (c *Cache) touch(id string) {
	now := time.Now()
	os.Chtimes(c.path(entriesDir, id), now, now) // best effort: a lost touch only moves the entry up the eviction order
}
