package normcache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// testCache is a private cache (not through Open's per-process registry,
// so each test has its own index) in a temp directory, and the bound its
// sessions store within.
type testCache struct {
	*Cache
	bound int64
}

func newCache(t *testing.T, bound int64) testCache {
	t.Helper()
	c, err := open(filepath.Join(t.TempDir(), layoutDir), "test-build")
	if err != nil {
		t.Fatal(err)
	}
	return testCache{c, bound}
}

func (c testCache) session(t *testing.T) *Session { return c.Session(t.TempDir(), c.bound) }

// relFiles writes one file per relation with content derived from tag and
// returns relation → path.
func relFiles(t *testing.T, tag string, size int) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for _, rel := range []string{"runs", "steps", "tool_calls"} {
		p := filepath.Join(dir, rel+".parquet")
		body := bytes.Repeat([]byte(rel+":"+tag+";"), size/len(rel+":"+tag+";")+1)[:size]
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		out[rel] = p
	}
	return out
}

func store(t *testing.T, c testCache, members []Member, owners []string, files map[string]string) {
	t.Helper()
	s := c.session(t)
	if err := s.Store(context.Background(), members, owners, files); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameContent fails unless every relation of a hit holds the bytes of the
// stored file.
func sameContent(t *testing.T, h *Hit, files map[string]string) {
	t.Helper()
	if len(h.Files) != len(files) {
		t.Fatalf("hit has relations %v, stored %v", h.Files, files)
	}
	for rel, p := range files {
		if got, want := read(t, h.Files[rel]), read(t, p); got != want {
			t.Fatalf("%s: served %d bytes that differ from the %d stored", rel, len(got), len(want))
		}
	}
}

func TestStoreAndLookup(t *testing.T) {
	c := newCache(t, 1<<30)
	ka, kb, kn := c.Key("a"), c.Key("b"), c.Key("config.json")
	files := relFiles(t, "ab", 1000)
	store(t, c, []Member{
		{Key: ka, File: "a.jsonl", Format: "openai"},
		{Key: kb, File: "b.jsonl", Format: "atif", Warnings: []string{"b: something"}},
		{Key: kn, File: "config.json", NoRows: true, Warnings: []string{"config.json: unrecognized"}},
	}, []string{"a.jsonl", "b.jsonl", "failed.jsonl"}, files)

	dir := t.TempDir()
	s := c.Session(dir, c.bound)
	hits := s.Lookup([]Key{ka, c.Key("unknown"), kb, kn}, Largest)
	if hits[1] != nil {
		t.Fatalf("unknown key hit %+v", hits[1])
	}
	a, b, n := hits[0], hits[2], hits[3]
	if a == nil || b == nil || n == nil {
		t.Fatalf("stored keys missed: %v", hits)
	}
	sameContent(t, a, files)
	if a.Format != "openai" || b.Format != "atif" || !reflect.DeepEqual(b.Warnings, []string{"b: something"}) || !n.NoRows {
		t.Fatalf("members came back as %+v / %+v / %+v", a.Member, b.Member, n.Member)
	}
	if !reflect.DeepEqual(a.Owners, []string{"a.jsonl", "b.jsonl", "failed.jsonl"}) {
		t.Fatalf("owners %v", a.Owners)
	}
	if a.Files["runs"] != b.Files["runs"] || a.Dir != filepath.Join(dir, a.Entry) || !strings.HasPrefix(a.Files["runs"], dir) {
		t.Fatalf("hits of one entry must share files linked under the session dir: %v %v", a.Files, b.Files)
	}
	// Linking again in the same session returns the same files.
	if again := s.Lookup([]Key{ka}, Smallest)[0]; again == nil || again.Files["steps"] != a.Files["steps"] {
		t.Fatalf("second lookup in the session: %+v", again)
	}
	s.Close()
	st, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 1 || st.Hits != 4 || st.Misses != 1 || st.Stored != 1 || st.Bytes < 3000 {
		t.Fatalf("stats %+v", st)
	}
}

// TestWantChoosesTheEntry: a source normalized alone and in a batch is in
// two entries; each kind of lookup gets the one it asked for.
func TestWantChoosesTheEntry(t *testing.T) {
	c := newCache(t, 1<<30)
	ka, kb := c.Key("a"), c.Key("b")
	batch, solo := relFiles(t, "batch", 100), relFiles(t, "solo", 100)
	store(t, c, []Member{{Key: ka, File: "a"}, {Key: kb, File: "b"}}, []string{"a", "b"}, batch)
	store(t, c, []Member{{Key: ka, File: "a"}}, []string{"a"}, solo)
	s := c.session(t)
	for _, tt := range []struct {
		want  Want
		key   Key
		files map[string]string
	}{{Largest, ka, batch}, {Smallest, ka, solo}, {Own, ka, solo}, {Smallest, kb, batch}} {
		h := s.Lookup([]Key{tt.key}, tt.want)[0]
		if h == nil {
			t.Fatalf("want %d: miss", tt.want)
		}
		sameContent(t, h, tt.files)
	}
	if h := s.Lookup([]Key{kb}, Own)[0]; h != nil {
		t.Fatalf("Own lookup of a source that is only in a shared entry hit %+v", h)
	}
}

// A batch lookup in which many keys would each take a small entry of its
// own passes over those (a batch normalizes them again more cheaply than it
// links them) and takes any other: a large entry of one source, an entry
// shared by several, a shared one over a small one of the same source. A
// few small entries are taken.
func TestBatchPassesOverManySmallEntriesOfOneSource(t *testing.T) {
	c := newCache(t, 1<<30)
	var smallKeys []Key
	for i := range smallEntriesMin {
		k := c.Key(fmt.Sprint("small", i))
		smallKeys = append(smallKeys, k)
		store(t, c, []Member{{Key: k, File: fmt.Sprint("small", i)}}, []string{fmt.Sprint("small", i)}, relFiles(t, fmt.Sprint("small", i), 100))
	}
	kLarge, kShared, kBoth := c.Key("large"), c.Key("shared"), c.Key("both")
	large, shared := relFiles(t, "large", smallEntryBytes/3+1), relFiles(t, "shared", 100)
	store(t, c, []Member{{Key: kLarge, File: "large"}}, []string{"large"}, large)
	store(t, c, []Member{{Key: kBoth, File: "both"}}, []string{"both"}, relFiles(t, "both", 100))
	store(t, c, []Member{{Key: kShared, File: "shared"}, {Key: kBoth, File: "both"}}, []string{"shared", "both"}, shared)
	s := c.session(t)
	hits := s.Lookup(append([]Key{kLarge, kShared, kBoth}, smallKeys...), Batch)
	for i, files := range []map[string]string{large, shared, shared} {
		if hits[i] == nil {
			t.Fatalf("key %d: miss", i)
		}
		sameContent(t, hits[i], files)
	}
	for i, h := range hits[3:] {
		if h != nil {
			t.Fatalf("small entry %d of %d was served to a batch: %+v", i, smallEntriesMin, h)
		}
	}
	few := s.Lookup(append([]Key{kLarge}, smallKeys[:3]...), Batch)
	for i, h := range few {
		if h == nil {
			t.Fatalf("a batch with %d small entries missed key %d", 3, i)
		}
	}
}

// TestCorruptEntryIsNeverServed damages a stored entry in every way a crash,
// a full disk or a stray write could and checks that the lookup misses,
// removes the entry and counts it, and that a rebuild is then served.
func TestCorruptEntryIsNeverServed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		damage func(t *testing.T, entry string)
	}{
		{"truncated file", func(t *testing.T, e string) { os.Truncate(filepath.Join(e, "steps.parquet"), 10) }},
		{"empty file", func(t *testing.T, e string) { os.Truncate(filepath.Join(e, "runs.parquet"), 0) }},
		{"flipped byte", func(t *testing.T, e string) {
			p := filepath.Join(e, "tool_calls.parquet")
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			os.WriteFile(p, b, 0o644)
		}},
		{"grown file", func(t *testing.T, e string) {
			f, _ := os.OpenFile(filepath.Join(e, "steps.parquet"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("x")
			f.Close()
		}},
		{"missing file", func(t *testing.T, e string) { os.Remove(filepath.Join(e, "runs.parquet")) }},
		{"missing manifest", func(t *testing.T, e string) { os.Remove(filepath.Join(e, manifestFile)) }},
		{"edited manifest", func(t *testing.T, e string) {
			p := filepath.Join(e, manifestFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"format":"openai"`), []byte(`"format":"atif!!"`), 1), 0o644)
		}},
		{"truncated manifest", func(t *testing.T, e string) { os.Truncate(filepath.Join(e, manifestFile), 20) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, 1<<30)
			k := c.Key("a")
			files := relFiles(t, "v1", 5000)
			store(t, c, []Member{{Key: k, File: "a", Format: "openai"}}, []string{"a"}, files)
			ids := c.refresh()[k]
			if len(ids) != 1 {
				t.Fatalf("index has %v", ids)
			}
			entry := c.path(entriesDir, ids[0])
			tt.damage(t, entry)

			s := c.session(t)
			if h := s.Lookup([]Key{k}, Smallest)[0]; h != nil {
				t.Fatalf("a damaged entry was served: %+v", h)
			}
			if _, err := os.Lstat(entry); !os.IsNotExist(err) {
				t.Fatalf("the damaged entry was not removed: %v", err)
			}
			s.Close()
			if st, _ := c.Stats(context.Background()); st.Rejected != 1 || st.Entries != 0 {
				t.Fatalf("stats after the damage: %+v", st)
			}
			rebuilt := relFiles(t, "v2", 5000)
			store(t, c, []Member{{Key: k, File: "a", Format: "openai"}}, []string{"a"}, rebuilt)
			h := c.session(t).Lookup([]Key{k}, Smallest)[0]
			if h == nil {
				t.Fatal("the rebuilt entry missed")
			}
			sameContent(t, h, rebuilt)
		})
	}
}

// TestDamagedIndexLinesAreIgnored: lines that are cut, garbled or lead to
// an entry that does not hold the key never produce a hit.
func TestDamagedIndexLinesAreIgnored(t *testing.T) {
	c := newCache(t, 1<<30)
	ka, kb := c.Key("a"), c.Key("b")
	files := relFiles(t, "a", 100)
	store(t, c, []Member{{Key: ka, File: "a"}}, []string{"a"}, files)
	id := c.refresh()[ka][0]
	f, err := os.OpenFile(c.path(indexFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "garbage\n%s %s\nzz%s %s\n%s %s", kb, id, ka.String()[2:], id, ka, id[:5]) // last line unfinished
	f.Close()
	s := c.session(t)
	hits := s.Lookup([]Key{ka, kb}, Smallest)
	if hits[0] == nil || hits[1] != nil {
		t.Fatalf("hits %v: want a's entry and no hit for b (its line names an entry without it)", hits)
	}
	sameContent(t, hits[0], files)
}

// TestEvictionKeepsTheBound stores entries past the bound: after every
// store the entries fit, the least recently used went first, and the
// index no longer names evicted entries.
func TestEvictionKeepsTheBound(t *testing.T) {
	const size = 10_000 // per relation: an entry is ~30 KB with its manifest
	bound := int64(100_000)
	c := newCache(t, bound)
	var keys []Key
	for i := 0; i < 12; i++ {
		k := c.Key(fmt.Sprint(i))
		keys = append(keys, k)
		store(t, c, []Member{{Key: k, File: fmt.Sprint(i)}}, []string{fmt.Sprint(i)}, relFiles(t, fmt.Sprint(i), size))
		if i == 2 {
			// Use entry 0, so that entry 1 is the least recently used.
			if c.session(t).Lookup([]Key{keys[0]}, Smallest)[0] == nil {
				t.Fatal("entry 0 missed")
			}
		}
		time.Sleep(20 * time.Millisecond) // distinct mtimes
		_, total := c.listEntries()
		if total > bound {
			t.Fatalf("after store %d the entries hold %d bytes, bound %d", i, total, bound)
		}
		if i == 3 { // the fourth entry did not fit
			hits := c.session(t).Lookup(keys, Smallest)
			if hits[0] == nil || hits[1] != nil || hits[3] == nil {
				t.Fatalf("after the first eviction: entry 0 (used) %v, 1 (least recently used) %v, 3 (newest) %v", hits[0] != nil, hits[1] != nil, hits[3] != nil)
			}
		}
	}
	if c.session(t).Lookup(keys[11:], Smallest)[0] == nil {
		t.Fatalf("the newest entry is not found (index lines %v)", c.refresh()[keys[11]])
	}
	st, _ := c.Stats(context.Background())
	if st.Evicted == 0 || st.Entries+int(st.Evicted) != 12 {
		t.Fatalf("stats %+v", st)
	}
	index := read(t, c.path(indexFile))
	if strings.Contains(index, keys[1].String()) {
		t.Fatal("the index still names an evicted entry")
	}
}

func TestEntryLargerThanTheBoundIsNotKept(t *testing.T) {
	c := newCache(t, 1000)
	k := c.Key("big")
	store(t, c, []Member{{Key: k, File: "big"}}, []string{"big"}, relFiles(t, "big", 2000))
	if h := c.session(t).Lookup([]Key{k}, Smallest)[0]; h != nil {
		t.Fatal("an entry larger than the bound was kept")
	}
	if entries, _ := c.listEntries(); len(entries) != 0 {
		t.Fatalf("entries %v", entries)
	}
}

func TestClear(t *testing.T) {
	c := newCache(t, 1<<30)
	k := c.Key("a")
	store(t, c, []Member{{Key: k, File: "a"}}, []string{"a"}, relFiles(t, "a", 100))
	s := c.session(t)
	h := s.Lookup([]Key{k}, Smallest)[0]
	if h == nil {
		t.Fatal("miss before clear")
	}
	s.Close()
	before, _ := c.Stats(context.Background())
	time.Sleep(10 * time.Millisecond)
	if err := c.Clear(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, _ := c.Stats(context.Background())
	if after.Entries != 0 || after.Bytes != 0 || after.Hits != 0 || !after.Since.After(before.Since) {
		t.Fatalf("after clear: %+v (before %+v)", after, before)
	}
	if c.session(t).Lookup([]Key{k}, Smallest)[0] != nil {
		t.Fatal("hit after clear")
	}
	if read(t, h.Files["runs"]) == "" {
		t.Fatal("a reader's linked files must survive a clear")
	}
}

func TestKeysSeparateTheirFields(t *testing.T) {
	c := newCache(t, 1)
	other := &Cache{build: "another-build"}
	for _, pair := range [][2]Key{
		{c.Key("ab", "c"), c.Key("a", "bc")},
		{c.Key("a"), c.Key("a", "")},
		{c.Key("a"), other.Key("a")},
	} {
		if pair[0] == pair[1] {
			t.Fatalf("two different field lists share key %s", pair[0])
		}
	}
	if c.Key("x", "y") != c.Key("x", "y") {
		t.Fatal("a key is not deterministic")
	}
}

// TestBuildIdentity: the test binary (ELF on Linux) is identified by its Go
// build ID; any other file by its content.
func TestBuildIdentity(t *testing.T) {
	id, err := buildIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "go-buildid:") && !strings.HasPrefix(id, "executable:") {
		t.Fatalf("build identity %q", id)
	}
	p := filepath.Join(t.TempDir(), "prog")
	os.WriteFile(p, []byte("not an executable"), 0o755)
	a, err := executableIdentity(p)
	if err != nil || !strings.HasPrefix(a, "executable:") {
		t.Fatalf("identity of a plain file: %q %v", a, err)
	}
	os.WriteFile(p, []byte("not an executable!"), 0o755)
	if b, _ := executableIdentity(p); b == a {
		t.Fatal("changed content, same identity")
	}
}

func TestOpenSharesTheCacheOfADirectory(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir + "/.")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a.Dir() != dir {
		t.Fatalf("Open of one directory: %p %p, dir %s", a, b, a.Dir())
	}
	if fi, err := os.Stat(filepath.Join(dir, layoutDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("layout directory: %v %v", fi, err)
	}
}

// TestChecksumCoversEverySegment: a file is checksummed in segments on
// several CPUs; damage anywhere, segments in another order, or a cut at a
// segment boundary each change what verification compares, while a copy
// of the same bytes gives the same checksum.
func TestChecksumCoversEverySegment(t *testing.T) {
	orig := make([]byte, 2*checksumSegment+checksumSegment/2)
	for i := range orig {
		orig[i] = byte(i * 7 / 5)
	}
	segment := func(b []byte, i int) []byte { return b[i*checksumSegment : min(len(b), (i+1)*checksumSegment)] }
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flip := func(at int) []byte {
		b := bytes.Clone(orig)
		b[at] ^= 0x40
		return b
	}
	// The first two segments exchanged (they are of equal size).
	swapped := slices.Concat(segment(orig, 1), segment(orig, 0), segment(orig, 2))
	for _, tt := range []struct {
		name string
		body []byte
		same bool
	}{
		{"copy", bytes.Clone(orig), true},
		{"first byte", flip(0), false},
		{"last byte of a segment", flip(checksumSegment - 1), false},
		{"in the last, short segment", flip(len(orig) - 1), false},
		{"segments exchanged", swapped, false},
		{"cut at a segment boundary", orig[:2*checksumSegment], false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sums, sizes, err := checksumFiles([]string{write("orig", orig), write("other", tt.body)})
			if err != nil {
				t.Fatal(err)
			}
			if sizes[0] != int64(len(orig)) || sizes[1] != int64(len(tt.body)) {
				t.Fatalf("sizes %v, want %d and %d", sizes, len(orig), len(tt.body))
			}
			if same := sums[0] == sums[1] && sizes[0] == sizes[1]; same != tt.same {
				t.Fatalf("verification would find them the same: %v, want %v (%s vs %s)", same, tt.same, sums[0], sums[1])
			}
		})
	}
}
