package events

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// smallSegmentBytes is the size below which a segment is merged by Compact.
const smallSegmentBytes = 64 << 20

// Compact merges the small segments of the current revision into as few
// segments as the segment size allows, publishing a new revision with the
// same events: the fact watermark is unchanged and the layout watermark
// advances to the new revision. The merged segments stay on disk for readers
// that pinned older revisions until GC removes them. With fewer than two
// small segments there is nothing to do and the current revision is
// returned.
func (s *Store) Compact(ctx context.Context) (*Revision, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	base, err := s.Pin()
	if err != nil {
		return nil, err
	}
	var merge, keep []Segment
	for _, seg := range base.Segments {
		if seg.Bytes < smallSegmentBytes {
			merge = append(merge, seg)
		} else {
			keep = append(keep, seg)
		}
	}
	if len(merge) < 2 {
		return base, nil
	}
	rev := base.Revision + 1
	written, err := s.merge(ctx, base, merge, rev)
	if err != nil {
		s.removeFiles(written)
		return nil, err
	}
	m := base.Manifest
	m.Revision, m.LayoutWatermark = rev, rev
	m.Segments = append(keep, written...)
	m.CreatedAt = time.Now().UTC()
	retire(base, merge)
	if err := s.commit(ctx, &m); err != nil {
		s.cleanupUnpublished(rev, func() { s.removeFiles(written) })
		return nil, err
	}
	return &Revision{Dir: s.dir, Manifest: m}, nil
}

// merge rewrites segs (all of base) as new segments of revision rev, in
// (session_id, seq) order, each spanning the fact revisions of all inputs.
func (s *Store) merge(ctx context.Context, base *Revision, segs []Segment, rev int64) ([]Segment, error) {
	lo, hi := segs[0].MinFactRevision, segs[0].MaxFactRevision
	inputs := map[string]bool{}
	for _, seg := range segs {
		lo, hi = min(lo, seg.MinFactRevision), max(hi, seg.MaxFactRevision)
		inputs[seg.Path] = true
	}
	var written []Segment
	buf := make([]model.Event, 0, segmentRows)
	flush := func() error {
		seg, err := writeSegment(s.dir, segmentName(rev, len(written)), rev, lo, hi, buf)
		if err != nil {
			return err
		}
		written = append(written, seg)
		buf = buf[:0]
		return nil
	}
	err := base.Scan(ctx, func(seg *Segment) bool { return inputs[seg.Path] }, func(e *model.Event) error {
		buf = append(buf, *e)
		if len(buf) < segmentRows {
			return nil
		}
		return flush()
	})
	if err == nil && len(buf) > 0 {
		err = flush()
	}
	return written, err
}

// retire stamps the modification time of segments leaving the visible set
// with the time they are retired, which is what GC's retention counts from.
func retire(base *Revision, segs []Segment) {
	now := time.Now()
	for i := range segs {
		os.Chtimes(base.Path(&segs[i]), now, now) // best effort: a failure only shortens retention
	}
}

func (s *Store) removeFiles(segs []Segment) {
	for i := range segs {
		os.Remove(filepath.Join(s.dir, filepath.FromSlash(segs[i].Path)))
	}
}

// GC removes segment files the current revision does not name and that were
// retired (or, for orphans of failed writers, written) more than retention
// ago, plus leftover temporary manifests as old. Readers must not keep a
// revision pinned for longer than retention. It returns the removed paths,
// relative to the store.
func (s *Store) GC(ctx context.Context, retention time.Duration) ([]string, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cur, err := s.Pin()
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, seg := range cur.Segments {
		live[seg.Path] = true
	}
	cutoff := time.Now().Add(-retention)
	var removed []string
	for _, dir := range []string{segmentsDir, "."} {
		entries, err := os.ReadDir(filepath.Join(s.dir, dir))
		if err != nil {
			return removed, err
		}
		for _, de := range entries {
			if err := ctx.Err(); err != nil {
				return removed, err
			}
			rel := filepath.ToSlash(filepath.Join(dir, de.Name()))
			if de.IsDir() || live[rel] || !collectable(dir, de.Name()) {
				continue
			}
			info, err := de.Info()
			if err != nil || !info.ModTime().Before(cutoff) {
				continue
			}
			if err := os.Remove(filepath.Join(s.dir, rel)); err != nil {
				return removed, err
			}
			removed = append(removed, rel)
		}
	}
	return removed, nil
}

// collectable says which files GC may consider: segments, and temporary
// manifests left by a crash. Anything else in the store is not ours to
// delete.
func collectable(dir, name string) bool {
	if dir == segmentsDir {
		return strings.HasSuffix(name, ".parquet")
	}
	return strings.HasPrefix(name, "."+ManifestName+".tmp-")
}
