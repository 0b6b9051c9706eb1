package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/store/compact"
	"github.com/pchronicle/pchronicle/internal/store/events"
)

// Compact sources (docs/storage.md): a chronicle.manifest leaf holds canonical
// event JSONL parts. A branch is not a source; the compact sources among
// its immediate child directories are.

// addCompact adds the compact source at path: the leaf itself, or a
// branch's leaves (and its child branches', recursively).
func (d *discoverer) addCompact(path, rel string) error {
	m, err := compact.ReadManifest(path)
	if err != nil || m.Kind != compact.KindBranch {
		src := storeSource(path, rel, KindCompact)
		src.Err = err
		return d.add(src)
	}
	children, err := compact.Children(path)
	if err != nil {
		src := storeSource(path, rel, KindCompact)
		src.Err = err
		return d.add(src)
	}
	for _, c := range children {
		childRel := filepath.Base(c)
		if rel != "." {
			childRel = rel + "/" + childRel
		}
		if err := d.addCompact(c, childRel); err != nil {
			return err
		}
	}
	return nil
}

// CompactRevision pins a compact leaf to the parts its manifest lists, each
// by fingerprint (re-checked when it is read).
type CompactRevision struct {
	RecordCount int64
	Parts       []CompactPart
}

// CompactPart is one pinned part file of a compact leaf.
type CompactPart struct {
	Name    string
	Records int64
	File    FileRevision
}

func (r *CompactRevision) RevisionKind() string { return "compact_manifest" }

func (r *CompactRevision) Ref() string {
	parts := make([]string, len(r.Parts))
	for i, p := range r.Parts {
		parts[i] = p.Name + "@" + p.File.Ref()
	}
	return fmt.Sprintf("record_count=%d;files=%d;%s", r.RecordCount, len(r.Parts), strings.Join(parts, ";"))
}

// pinCompact pins a compact leaf: its manifest, and every listed part's
// fingerprint, whose size must be the one the manifest records. Nothing is
// read but the manifest.
func pinCompact(d *DiscoveredSource) error {
	m, err := compact.ReadManifest(d.Path)
	if err != nil {
		return err
	}
	if m.Kind != compact.KindLeaf {
		return fmt.Errorf("compact source %s is a %s, not a leaf", d.File, m.Kind)
	}
	rev := &CompactRevision{RecordCount: m.RecordCount}
	for _, p := range m.Files {
		fi, err := os.Lstat(filepath.Join(d.Path, p.Name))
		if err != nil {
			return fmt.Errorf("compact part %s: %w", p.Name, err)
		}
		if fi.Size() != p.Bytes {
			return fmt.Errorf("compact part %s has %d bytes; its manifest records %d", p.Name, fi.Size(), p.Bytes)
		}
		pin := fileRevision(fi)
		rev.Parts = append(rev.Parts, CompactPart{Name: p.Name, Records: p.Records, File: pin})
		d.Size += pin.Size
		if pin.ModTime.After(d.ModTime) {
			d.ModTime = pin.ModTime
		}
	}
	d.Revision = rev
	return nil
}

// compactLoad holds a compact source's events once loaded (see
// Source.compactEvents).
type compactLoad struct {
	mu   sync.Mutex
	done bool
	rev  *events.Revision
	err  error
}

// compactEvents loads the pinned parts, once per Snapshot, into an events
// store in the temp directory, so that the source reads like any canonical
// events source: strict decoding and stream checks included. Each part is
// checked against its pin before and after it is read.
func (s *Source) compactEvents(ctx context.Context, rev *CompactRevision) (*events.Revision, error) {
	l := &s.more().compact
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return l.rev, l.err
	}
	r, err := s.loadCompact(ctx, rev)
	if !keep(ctx, err) {
		return nil, err // a cancelled query or a transient failure is not cached
	}
	l.done, l.rev, l.err = true, r, err
	return r, err
}

func (s *Source) loadCompact(ctx context.Context, rev *CompactRevision) (*events.Revision, error) {
	dir, err := os.MkdirTemp(s.snap.TempDir, "compact-")
	if err != nil {
		return nil, err
	}
	st, err := events.Create(filepath.Join(dir, events.DirName))
	if err != nil {
		return nil, err
	}
	tx, err := st.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Abort()
	for _, p := range rev.Parts {
		if err := s.readPart(ctx, tx, p); err != nil {
			return nil, err
		}
	}
	return tx.Commit(ctx)
}

func (s *Source) readPart(ctx context.Context, tx *events.Tx, p CompactPart) error {
	path := filepath.Join(s.Path, p.Name)
	name := s.File + "/" + p.Name
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("source %s: %w", s.File, err)
	}
	defer f.Close()
	check := func() error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		return p.File.Check(name, fi)
	}
	if err := check(); err != nil {
		return err
	}
	if err := tx.ReadFrom(ctx, f, format.Source{Path: path, File: s.File}); err != nil {
		return err
	}
	return check()
}
