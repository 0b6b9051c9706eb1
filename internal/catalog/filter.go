package catalog

import (
	"fmt"
	"path"
	"strings"
)

// PathFilter narrows a Dataset to the sources whose _file_ its globs
// select, decided during discovery from names alone (nothing is read):
// with Include, a source must match one of them; with Exclude, none. A
// glob is matched against the whole Dataset-relative path, segment by
// segment (path.Match within a segment, so `*` does not cross a `/`),
// where a `**` segment matches any number of segments: `**/config.json`,
// `runs/2026-*/**`, `**/*.traj`. A directory an Exclude glob matches is not
// walked at all (`archive` or `archive/**` skips everything below it).
type PathFilter struct {
	Include []string
	Exclude []string
}

// Empty reports whether the filter keeps everything.
func (f PathFilter) Empty() bool { return len(f.Include) == 0 && len(f.Exclude) == 0 }

// Validate checks every glob.
func (f PathFilter) Validate() error {
	for _, list := range [][]string{f.Include, f.Exclude} {
		for _, g := range list {
			if g == "" || strings.HasPrefix(g, "/") {
				return fmt.Errorf("invalid glob %q: it must be relative to the Dataset root", g)
			}
			for _, seg := range strings.Split(g, "/") {
				if _, err := path.Match(seg, ""); err != nil {
					return fmt.Errorf("invalid glob %q: %w", g, err)
				}
			}
		}
	}
	return nil
}

// Keep reports whether the source with this _file_ is selected.
func (f PathFilter) Keep(file string) bool {
	if len(f.Include) > 0 && !matchAny(f.Include, file) {
		return false
	}
	return !matchAny(f.Exclude, file)
}

// SkipDir reports whether the directory with this Dataset-relative path is
// excluded as a whole.
func (f PathFilter) SkipDir(rel string) bool { return matchAny(f.Exclude, rel) }

// key is the filter as it enters the snapshot id.
func (f PathFilter) key() string {
	return "include=" + strings.Join(f.Include, "\x00") + "\x01exclude=" + strings.Join(f.Exclude, "\x00")
}

func matchAny(globs []string, p string) bool {
	for _, g := range globs {
		if globMatch(strings.Split(g, "/"), strings.Split(p, "/")) {
			return true
		}
	}
	return false
}

// globMatch matches path segments against glob segments, `**` matching
// any number of segments.
func globMatch(glob, segs []string) bool {
	for len(glob) > 0 {
		if glob[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if globMatch(glob[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(glob[0], segs[0]); !ok {
			return false
		}
		glob, segs = glob[1:], segs[1:]
	}
	return len(segs) == 0
}
