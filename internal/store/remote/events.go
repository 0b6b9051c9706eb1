package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/events"
)

// AppendResult is what AppendEvents published.
type AppendResult struct {
	Appended  int64           // events added by this append (0: nothing was published)
	Manifest  events.Manifest // the manifest now current at the prefix
	Published bool            // a new manifest was written
}

// AppendEvents appends canonical event JSONL from r to the events store at
// prefix (a key prefix whose last segment is events.lance), creating the
// store when it has no _manifest.json.
//
// The store is mirrored into a local temp directory (manifest and every
// segment, which the duplicate event_id and seq checks need) and the
// ordinary local append runs there, so validation is exactly the local
// one: any bad line fails the append before anything is uploaded. Then
// the new segments are uploaded (each only if absent) and _manifest.json
// is replaced last, with PutIfMatch on the manifest version that was
// mirrored (PutIfAbsent for a new store): a concurrent append makes this
// one fail with ErrLostRace, its segments unreferenced.
//
// Uploaded segment names carry a digest of their content
// (segments/<revision>-<index>-<sha256 prefix>.parquet): two writers of the
// same revision never collide, and a segment orphaned by an interrupted
// append never blocks the next one.
//
// Segments are immutable, so the mirror keeps them between appends in a
// segment cache (AppendOptions.SegmentCache): an append then downloads only
// the manifest and the segments it has not seen (those other writers
// added), and uploads its own — bytes in proportion to the batch, not to
// the store. A cached segment is used only for the exact object version
// the manifest's listing pins, with its recorded size.
func AppendEvents(ctx context.Context, b objstore.Bucket, prefix string, r io.Reader, src format.Source, opts ...AppendOptions) (*AppendResult, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if path.Base(prefix) != events.DirName {
		return nil, fmt.Errorf("%s/%s: an events store prefix must end in /%s", b, prefix, events.DirName)
	}
	var o AppendOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	tmp, err := os.MkdirTemp("", "pchronicle-events-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, events.DirName)
	cache := o.cache(b, prefix)
	prev, err := mirrorEvents(ctx, b, prefix, dir, cache)
	if err != nil {
		return nil, err
	}
	st, err := events.Open(dir)
	if err != nil {
		return nil, err
	}
	base, err := st.Pin()
	if err != nil {
		return nil, err
	}
	tx, err := st.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := tx.ReadFrom(ctx, r, src); err != nil {
		tx.Abort()
		return nil, err
	}
	n := tx.Len()
	rev, err := tx.Commit(ctx)
	if err != nil {
		return nil, err
	}
	res := &AppendResult{Appended: n, Manifest: rev.Manifest}
	if n == 0 && prev != nil {
		return res, nil // nothing new; an empty new store is still created below
	}
	m := rev.Manifest
	m.Segments = append([]events.Segment{}, m.Segments...)
	for i := len(base.Segments); i < len(m.Segments); i++ {
		local := rev.Path(&m.Segments[i])
		if m.Segments[i].Path, err = uploadSegment(ctx, b, prefix, local, m.Segments[i].Path); err != nil {
			return nil, err
		}
		if cache != nil { // the next append finds its own segments cached
			key := Join(prefix, m.Segments[i].Path)
			if info, err := b.Stat(ctx, key); err == nil {
				cache.put(key, info, local)
			}
		}
	}
	data, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := putPointer(ctx, b, Join(prefix, events.ManifestName), append(data, '\n'), prev); err != nil {
		return nil, err
	}
	res.Manifest, res.Published = m, true
	cache.prune()
	return res, nil
}

// AppendOptions tune AppendEvents.
type AppendOptions struct {
	// SegmentCache is a directory that keeps the store's segments between
	// appends ("" keeps none: every append mirrors the whole store). Each
	// store gets a subdirectory holding the segments of the last manifest
	// it saw; it is derived data, safe to delete at any time.
	SegmentCache string
}

// DefaultSegmentCache is the segment cache under the user's cache
// directory, or "" when there is none.
func DefaultSegmentCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pchronicle", "event-segments")
}

// segmentCache holds one store's segments, each named by a digest of its
// key and pinned version, so a replaced object is never taken for the one
// cached. keep collects the files of the segments in use.
type segmentCache struct {
	dir  string
	keep map[string]bool
}

func (o AppendOptions) cache(b objstore.Bucket, prefix string) *segmentCache {
	if o.SegmentCache == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(b.String() + "\x00" + prefix))
	return &segmentCache{dir: filepath.Join(o.SegmentCache, hex.EncodeToString(sum[:16])), keep: map[string]bool{}}
}

func (c *segmentCache) path(key string, info objstore.ObjectInfo) string {
	sum := sha256.Sum256([]byte(key + "\x00" + info.Ref()))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".parquet")
}

// get links the cached copy of the object into dst; false when there is
// none of its size (then the caller downloads it).
func (c *segmentCache) get(key string, info objstore.ObjectInfo, dst string) bool {
	if c == nil {
		return false
	}
	p := c.path(key, info)
	if st, err := os.Stat(p); err != nil || st.Size() != info.Size || fsx.LinkOrCopy(p, dst) != nil {
		return false
	}
	c.keep[p] = true
	return true
}

// put keeps a verified local copy of the object. It is best effort: the
// cache only saves downloads.
func (c *segmentCache) put(key string, info objstore.ObjectInfo, local string) {
	if c == nil || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	p := c.path(key, info)
	tmp := p + ".tmp"
	os.Remove(tmp)
	if fsx.LinkOrCopy(local, tmp) == nil && os.Rename(tmp, p) == nil {
		c.keep[p] = true
		return
	}
	os.Remove(tmp)
}

// prune drops the cached files no segment in use refers to (replaced by a
// compaction, or of an older version), so the cache holds at most one
// copy of the store.
func (c *segmentCache) prune() {
	if c == nil {
		return
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if p := filepath.Join(c.dir, e.Name()); !c.keep[p] {
			os.Remove(p)
		}
	}
}

// mirrorEvents copies the remote store at prefix into dir: its manifest
// (pinned: the returned info is what the final conditional write checks)
// and every segment it names, each verified against the manifest's size
// (taken from the segment cache when it holds that version).
// Without a remote manifest it creates an empty local store and returns nil.
func mirrorEvents(ctx context.Context, b objstore.Bucket, prefix, dir string, cache *segmentCache) (*objstore.ObjectInfo, error) {
	info, err := b.Stat(ctx, Join(prefix, events.ManifestName))
	if errors.Is(err, objstore.ErrNotFound) {
		_, err = events.Create(dir)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if info.Size > maxPointerBytes {
		return nil, fmt.Errorf("%s/%s: %d bytes is too large for a manifest", b, info.Key, info.Size)
	}
	if err := os.MkdirAll(filepath.Join(dir, "segments"), 0o755); err != nil {
		return nil, err
	}
	if err := objstore.Download(ctx, b, info, filepath.Join(dir, events.ManifestName)); err != nil {
		return nil, err
	}
	st, err := events.Open(dir)
	if err != nil {
		return nil, err
	}
	rev, err := st.Pin() // validates the manifest strictly
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", b, info.Key, err)
	}
	for i := range rev.Segments {
		seg := &rev.Segments[i]
		sInfo, err := b.Stat(ctx, Join(prefix, seg.Path))
		if err != nil {
			return nil, err
		}
		if sInfo.Size != seg.Bytes {
			return nil, fmt.Errorf("%s/%s: %d bytes, the manifest records %d (truncated or replaced object)", b, sInfo.Key, sInfo.Size, seg.Bytes)
		}
		key := Join(prefix, seg.Path)
		if cache.get(key, sInfo, rev.Path(seg)) {
			continue
		}
		if err := objstore.Download(ctx, b, sInfo, rev.Path(seg)); err != nil {
			return nil, err
		}
		cache.put(key, sInfo, rev.Path(seg))
	}
	return &info, nil
}

// uploadSegment uploads a new local segment under a content-derived name
// and returns that name (relative to the store). An object already there
// with that name and size holds the same bytes (an earlier attempt's
// orphan) and is reused, never overwritten: a visible object must keep its
// version for pinned readers.
func uploadSegment(ctx context.Context, b objstore.Bucket, prefix, local, rel string) (string, error) {
	sum, err := fileDigest(local)
	if err != nil {
		return "", err
	}
	name := strings.TrimSuffix(rel, ".parquet") + "-" + sum[:16] + ".parquet"
	key := Join(prefix, name)
	err = uploadNew(ctx, b, key, local)
	if errors.Is(err, objstore.ErrPrecondition) {
		info, serr := b.Stat(ctx, key)
		st, lerr := os.Stat(local)
		if serr == nil && lerr == nil && info.Size == st.Size() {
			return name, nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("upload %s/%s: %w", b, key, err)
	}
	return name, nil
}

func fileDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
