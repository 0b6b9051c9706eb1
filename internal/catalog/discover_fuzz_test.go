package catalog

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
)

// treeNames are the names a fuzzed tree is made of: the markers of every
// store kind, a directory that may be an events store, candidate files and
// a file that is none.
var treeNames = []string{"a", "b", eventsDirName, currentFile, eventsManifest, compactManifest, "run.jsonl", "t.json", "x.txt"}

// treeExcludes are the --exclude globs a fuzzed walk may run with.
var treeExcludes = [][]string{nil, {"a"}, {"**/b"}, {"a/b"}, {"**/" + eventsDirName}, {"b/*.jsonl"}}

// FuzzDiscoverMatchesAWalkByStat: over a tree the input describes (files,
// directories and symlinks named like store markers and candidates, and an
// --exclude glob), discovery finds the sources, in the order, that a plain
// walk finds which recognizes a store by an lstat of each marker file:
// reading the markers from a directory's listing changes nothing.
func FuzzDiscoverMatchesAWalkByStat(f *testing.F) {
	// Each entry is two bytes: the directory it goes in (0: the root, then
	// the directories in the order made) and what it is: a name of treeNames
	// (0–8) as a file, plus 9 as a directory, 18 a symlink to a file, 27 a
	// symlink to a directory. The first byte picks the --exclude.
	for _, seed := range [][]byte{
		{0, 0, 9, 1, 3, 1, 6, 0, 10, 2, 6, 0, 7},          // a store a/ (CURRENT), b/run.jsonl, t.json
		{0, 0, 11, 1, 4, 0, 9, 2, 4, 2, 11, 3, 6},         // an events store; a/_manifest.json and a/events.lance/ that are none
		{4, 0, 11, 1, 4, 0, 9, 2, 4, 2, 11, 3, 6},         // the same, events.lance excluded
		{0, 0, 9, 1, 21, 1, 6, 0, 10, 2, 12, 2, 7, 0, 33}, // CURRENT a symlink, CURRENT a directory, a symlinked directory
		{1, 0, 9, 1, 3, 0, 10, 2, 5, 2, 6, 0, 6},          // a store in excluded a/, a compact store b/
		{2, 0, 9, 1, 10, 2, 6, 1, 6, 0, 10, 3, 7, 3, 8},   // a/b/ and b/ excluded by **/b
		{0, 0, 3, 0, 6}, // the root a store
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec []byte) {
		if len(spec) == 0 {
			return
		}
		root, outside := t.TempDir(), t.TempDir()
		outsideFile := filepath.Join(outside, "target.jsonl")
		if err := os.WriteFile(outsideFile, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		filter := PathFilter{Exclude: treeExcludes[int(spec[0])%len(treeExcludes)]}
		buildTree(t, root, outside, outsideFile, spec[1:])
		got, err := discover(context.Background(), root, DefaultOptions(), nil, filter)
		if err != nil {
			t.Fatal(err)
		}
		if want := walkByStat(t, root, filter); files(got) != want {
			t.Fatalf("exclude %q:\n got %s\nwant %s", filter.Exclude, files(got), want)
		}
	})
}

// buildTree makes the tree of spec, two bytes an entry: which directory
// made so far it goes in, and what it is (a name of treeNames, and a file,
// a directory or a symlink to a file or a directory outside the tree).
func buildTree(t *testing.T, root, outside, outsideFile string, spec []byte) {
	dirs := []string{root}
	for i := 0; i+1 < len(spec) && i < 80; i += 2 {
		parent := dirs[int(spec[i])%len(dirs)]
		what := int(spec[i+1])
		name := treeNames[what%len(treeNames)]
		p := filepath.Join(parent, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		var err error
		switch what / len(treeNames) % 4 {
		case 0:
			content := "{}"
			switch name {
			case currentFile:
				content = "gen-000001\n"
			case compactManifest:
				content = `kind = "leaf"` + "\n"
			}
			err = os.WriteFile(p, []byte(content), 0o644)
		case 1:
			if err = os.Mkdir(p, 0o755); err == nil {
				dirs = append(dirs, p)
			}
		case 2:
			err = os.Symlink(outsideFile, p)
		case 3:
			err = os.Symlink(outside, p)
		}
		if err != nil {
			t.Skip(err) // symlinks may be refused
		}
	}
}

// walkByStat is discovery as a plain walk: entries in name order, symlinks
// skipped, a directory a store when an lstat finds its marker as a regular
// file, else walked unless excluded; candidate files kept by the filter.
func walkByStat(t *testing.T, root string, filter PathFilter) string {
	regular := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	kind := func(dir string) SourceKind {
		switch {
		case regular(filepath.Join(dir, currentFile)):
			return KindStoryline
		case filepath.Base(dir) == eventsDirName && regular(filepath.Join(dir, eventsManifest)):
			return KindEvents
		case regular(filepath.Join(dir, compactManifest)):
			return KindCompact
		}
		return ""
	}
	var out []string
	keep := func(rel string, k SourceKind) {
		if filter.Keep(rel) {
			out = append(out, rel+":"+string(k))
		}
	}
	if k := kind(root); k != "" {
		keep(".", k)
		return strings.Join(out, " ")
	}
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			typ, childRel, p := e.Type(), path.Join(rel, e.Name()), filepath.Join(dir, e.Name())
			switch {
			case typ&fs.ModeSymlink != 0:
			case typ.IsDir():
				if k := kind(p); k != "" {
					keep(childRel, k)
				} else if !filter.SkipDir(childRel) {
					walk(p, childRel)
				}
			case typ.IsRegular() && format.CandidateName(e.Name()):
				keep(childRel, KindFile)
			}
		}
	}
	walk(root, "")
	return strings.Join(out, " ")
}
