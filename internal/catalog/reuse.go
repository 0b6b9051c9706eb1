package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

// Reusing has Build carry the resolved data of every source whose pin is
// identical in prev into the new Snapshot, so that a refresh after one file
// of 10,000 changed normalizes that one file again and not the others. The
// carried files are hard-linked (copied where linking fails) into the new
// Snapshot's temp directory: each Snapshot still owns everything it reads,
// and closing prev does not disturb the new one. prev must stay open until
// Build returns.
func Reusing(prev *Snapshot) BuildOption {
	return func(s *Snapshot) { s.reuse = prev }
}

// Reused counts the sources whose resolution Build carried over from the
// previous Snapshot (see Reusing).
func (s *Snapshot) Reused() int { return s.reused }

// carryOver adopts prev's successful Storyline resolutions of sources whose
// pin did not change. A source whose resolution failed, or that no query
// resolved, is left to resolve lazily as usual.
func (s *Snapshot) carryOver(prev *Snapshot) error {
	linked := map[string]string{} // prev directory → its copy under s.TempDir
	for _, d := range s.Datasets {
		pd := prev.sameDataset(d)
		if pd == nil {
			continue
		}
		for _, src := range d.Sources {
			old, ok := pd.Source(src.File)
			if !ok || !samePin(old, src) {
				continue
			}
			results, format := old.relationResults()
			if results == nil {
				continue
			}
			for i, res := range results {
				if res == nil {
					continue
				}
				carried, err := s.relink(res, prev.TempDir, linked)
				if err != nil {
					return fmt.Errorf("carrying %s over from the previous Snapshot: %w", src.File, err)
				}
				src.relations[i].done, src.relations[i].res = true, carried
			}
			src.format = format
			s.reused++
		}
	}
	return nil
}

// sameDataset finds the Dataset of prev mounted exactly as d is.
func (prev *Snapshot) sameDataset(d *Dataset) *Dataset {
	for _, pd := range prev.Datasets {
		m, pm := d.Mount, pd.Mount
		if m.NamespacePath() == pm.NamespacePath() && m.Alias == pm.Alias && m.URI == pm.URI &&
			m.FormatHint == pm.FormatHint && m.Config.Endpoint == pm.Config.Endpoint && m.Filter.key() == pm.Filter.key() {
			return pd
		}
	}
	return nil
}

// samePin reports whether two sources are the same pinned version: what a
// resolution reads depends on nothing else (projections included).
func samePin(a, b *Source) bool {
	if a.Err != nil || b.Err != nil || a.Revision == nil || b.Revision == nil {
		return false
	}
	if a.Kind != b.Kind || a.Path != b.Path || a.FormatHint != b.FormatHint || a.PinRef() != b.PinRef() {
		return false
	}
	if len(a.Projections) != len(b.Projections) {
		return false
	}
	for i := range a.Projections {
		pa, pb := a.Projections[i], b.Projections[i]
		ra, rb := StorylineRevision{pa.Generation}, StorylineRevision{pb.Generation}
		if pa.File != pb.File || pa.Selected != pb.Selected || ra.Ref() != rb.Ref() {
			return false
		}
	}
	return true
}

// relationResults returns the finished, successful resolutions of the
// Storyline relations (nil for the others; nil when there is none) and the
// detected format.
func (s *Source) relationResults() ([]*Resolved, string) {
	var out []*Resolved
	for i := range s.relations {
		c := &s.relations[i]
		c.mu.Lock()
		if c.done && c.err == nil && c.res != nil {
			if out == nil {
				out = make([]*Resolved, len(s.relations))
			}
			out[i] = c.res
		}
		c.mu.Unlock()
	}
	return out, s.Format()
}

// relink returns res with every file under oldTemp replaced by a link under
// s.TempDir (files elsewhere — a store's own generation — stay as they are).
// A directory shared by several sources is linked once.
func (s *Snapshot) relink(res *Resolved, oldTemp string, linked map[string]string) (*Resolved, error) {
	out := *res
	out.Files = make(map[string][]string, len(res.Files))
	for rel, files := range res.Files {
		for _, f := range files {
			nf, err := s.linkUnder(f, oldTemp, linked)
			if err != nil {
				return nil, err
			}
			out.Files[rel] = append(out.Files[rel], nf)
		}
	}
	out.Dirs = nil
	for _, d := range res.Dirs {
		nd, err := s.linkDir(d, oldTemp, linked)
		if err != nil {
			return nil, err
		}
		out.Dirs = append(out.Dirs, nd)
	}
	return &out, nil
}

func (s *Snapshot) linkUnder(file, oldTemp string, linked map[string]string) (string, error) {
	rel, err := filepath.Rel(oldTemp, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return file, nil // not the old Snapshot's own
	}
	if _, err := s.linkDir(filepath.Dir(file), oldTemp, linked); err != nil {
		return "", err
	}
	dst := filepath.Join(s.TempDir, rel)
	if _, done := linked[file]; done {
		return dst, nil
	}
	if err := fsx.LinkOrCopy(file, dst); err != nil {
		return "", err
	}
	linked[file] = dst
	return dst, nil
}

// linkDir creates the copy of a directory of the old temp dir.
func (s *Snapshot) linkDir(dir, oldTemp string, linked map[string]string) (string, error) {
	rel, err := filepath.Rel(oldTemp, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return dir, nil
	}
	dst := filepath.Join(s.TempDir, rel)
	if _, done := linked[dir]; !done {
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return "", err
		}
		linked[dir] = dst
	}
	return dst, nil
}
