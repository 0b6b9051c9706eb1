package catalog

// Object-store Datasets (s3://, az://, gs://, docs/object-stores.md): a
// streamed prefix listing bounded by max_entries, remote Storyline and
// events stores pinned through their CURRENT/manifest at build time, and
// late materialization that downloads only the pinned objects a query needs
// into the Snapshot temp directory, then reads them like local ones.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/hugeheap"
	"github.com/pchronicle/pchronicle/internal/icebergcmd"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// maxManifestBytes bounds a remote CURRENT or manifest read at build time:
// they are small JSON documents, never streams of data.
const maxManifestBytes = 64 << 20

// checkMountURI validates a mount URI without touching storage.
func checkMountURI(uri string) error {
	if ref, ok := icebergcmd.ParseDest(uri); ok { // a SQLite catalog: a local path, #namespace
		cat, _, _ := strings.Cut(ref, "#")
		_, err := LocalPath(cat)
		return err
	}
	if objstore.IsRemote(uri) {
		_, err := objstore.ParseURI(uri)
		return err
	}
	_, err := LocalPath(uri)
	return err
}

// discoverMount lists a mount's sources: a local walk, or an object listing
// whose Bucket the Snapshot keeps (and closes) for late reads. root is the
// Dataset root as shown: an absolute path or the redacted URI.
func discoverMount(ctx context.Context, snap *Snapshot, m DatasetMount, opts Options) (root string, found []*DiscoveredSource, err error) {
	if ref, ok := icebergcmd.ParseDest(m.URI); ok { // iceberg.go
		return discoverIceberg(ctx, ref)
	}
	if !objstore.IsRemote(m.URI) {
		root, _ = LocalPath(m.URI) // validated by ValidateMounts
		found, err = discover(ctx, root, opts, snap.progress, m.Filter)
		return root, found, err
	}
	b, prefix, err := objstore.Open(ctx, m.URI, m.Config)
	if err != nil {
		return "", nil, err
	}
	found, err = discoverRemote(ctx, b, prefix, opts, m.Filter)
	if err != nil {
		b.Close()
		return "", nil, err
	}
	snap.buckets = append(snap.buckets, b)
	return RedactURI(m.URI), found, nil
}

// DiscoverRemote lists the sources under prefix in b (docs/object-stores.md). A prefix
// naming an object is one source "."; otherwise it is a "directory" whose
// listing is consumed as a stream: it fails at max_entries+1 objects or
// max_files+1 sources without collecting the listing, recognizes Storyline
// roots (CURRENT), events roots (events.lance/_manifest.json) and compact
// sources (chronicle.manifest), skips every object inside them, and keeps
// the remaining candidate files (isPeripheral). Sources come in the same
// path order as a local walk. Store sources are pinned here, through the
// bucket; a store that cannot be pinned carries the error (Err). A failed
// listing is an error.
func DiscoverRemote(ctx context.Context, b objstore.Bucket, prefix string, opts Options) ([]*DiscoveredSource, error) {
	return discoverRemote(ctx, b, prefix, opts, PathFilter{})
}

// discoverRemote is DiscoverRemote keeping only what filter selects.
func discoverRemote(ctx context.Context, b objstore.Bucket, prefix string, opts Options, filter PathFilter) ([]*DiscoveredSource, error) {
	rootURI := objectURI(b, prefix)
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		info, err := b.Stat(ctx, prefix)
		if err == nil {
			return []*DiscoveredSource{remoteFileSource(b, info, ".")}, nil
		}
		if !errors.Is(err, objstore.ErrNotFound) {
			return nil, fmt.Errorf("Dataset root %s: %w", rootURI, err)
		}
		prefix += "/"
	}
	l := &remoteLister{bucket: b, prefix: prefix, opts: opts, filter: filter, root: rootURI, markers: map[*DiscoveredSource]objstore.ObjectInfo{}}
	err := b.List(ctx, prefix, l.visit)
	var limit *LimitError
	switch {
	case errors.As(err, &limit):
		return nil, limit
	case err != nil && !errors.Is(err, errRootIsStore):
		return nil, fmt.Errorf("list %s: %w", rootURI, err)
	}
	sort.SliceStable(l.out, func(i, j int) bool { return pathLess(l.out[i].File, l.out[j].File) })
	var escaped []*DiscoveredSource // keys that are not valid UTF-8 (fileRel)
	for _, d := range l.out {
		if !utf8.ValidString(d.File) {
			d.File = fileRel(d.File)
			escaped = append(escaped, d)
		}
	}
	markNameCollisions(l.out, escaped)
	for _, d := range l.out {
		switch marker, ok := l.markers[d]; {
		case d.Kind == KindCompact:
			d.Err = errors.New("compact sources in object stores are not readable yet; local ones are")
		case ok:
			d.Err = pinRemoteStore(ctx, b, d, marker)
		}
	}
	return l.out, nil
}

// errRootIsStore stops a listing whose root is itself a store: nothing else
// under it can be a source.
var errRootIsStore = errors.New("the Dataset root is a store")

type remoteLister struct {
	bucket  objstore.Bucket
	prefix  string // "directory" prefix: "" or ending in '/'
	root    string // redacted URI, for errors
	opts    Options
	filter  PathFilter
	entries int
	out     []*DiscoveredSource
	inside  string // Dataset-relative "dir/" of the last store root; its objects are skipped
	markers map[*DiscoveredSource]objstore.ObjectInfo
}

func (l *remoteLister) visit(o objstore.ObjectInfo) error {
	l.entries++
	if l.entries > l.opts.MaxEntries {
		return &LimitError{Setting: "max_entries", Limit: l.opts.MaxEntries, Root: l.root}
	}
	rel := strings.TrimPrefix(o.Key, l.prefix)
	if rel == "" || strings.HasSuffix(rel, "/") || (l.inside != "" && strings.HasPrefix(rel, l.inside)) {
		return nil // directory markers, objects inside a store
	}
	dir, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	if kind, ok := l.storeMarker(dir, name); ok {
		return l.addStore(dir, kind, o)
	}
	if isPeripheral(name) {
		return l.add(remoteFileSource(l.bucket, o, rel))
	}
	return nil
}

// storeMarker recognizes the object that makes dir a store, with the same
// precedence as a local walk (CURRENT sorts before the other markers).
func (l *remoteLister) storeMarker(dir, name string) (SourceKind, bool) {
	switch name {
	case currentFile:
		return KindStoryline, true
	case eventsManifest:
		base := path.Base(dir)
		if dir == "" {
			base = path.Base(strings.TrimSuffix(l.prefix, "/"))
		}
		return KindEvents, base == eventsDirName
	case compactManifest:
		return KindCompact, true
	}
	return "", false
}

// addStore makes dir a store source. Sources already collected inside it
// (objects sorting before the marker) form the tail of the list and are
// dropped: nothing inside a composite root is a source.
func (l *remoteLister) addStore(dir string, kind SourceKind, marker objstore.ObjectInfo) error {
	for n := len(l.out); n > 0; n-- {
		f := l.out[n-1].File
		if dir != "" && f != dir && !strings.HasPrefix(f, dir+"/") {
			break
		}
		delete(l.markers, l.out[n-1])
		l.out = l.out[:n-1]
	}
	file := dir
	if dir == "" {
		file = "."
	}
	src := &DiscoveredSource{File: file, Path: objectURI(l.bucket, l.prefix+dir), Kind: kind}
	l.markers[src] = marker
	if err := l.add(src); err != nil {
		return err
	}
	if dir == "" {
		return errRootIsStore
	}
	l.inside = dir + "/"
	return nil
}

func (l *remoteLister) add(s *DiscoveredSource) error {
	if !l.filter.Keep(s.File) {
		return nil
	}
	if len(l.out) >= l.opts.MaxFiles {
		return &LimitError{Setting: "max_files", Limit: l.opts.MaxFiles, Root: l.root}
	}
	l.out = append(l.out, s)
	hugeheap.Expect(sourceHeapBytes)
	return nil
}

// pathLess orders Dataset-relative paths component by component, which is
// the order of a local walk ("a/x" before "a-b/y", unlike plain key order).
func pathLess(a, b string) bool {
	for {
		ah, at, aMore := strings.Cut(a, "/")
		bh, bt, bMore := strings.Cut(b, "/")
		if ah != bh {
			return ah < bh
		}
		if !aMore || !bMore {
			return !aMore && bMore
		}
		a, b = at, bt
	}
}

// objectURI names key in b for sources rows and errors (no credentials:
// Bucket.String is scheme://bucket).
func objectURI(b objstore.Bucket, key string) string {
	return RedactURI(strings.TrimSuffix(b.String()+"/"+key, "/"))
}

func remoteFileSource(b objstore.Bucket, o objstore.ObjectInfo, rel string) *DiscoveredSource {
	return &DiscoveredSource{File: rel, Path: objectURI(b, o.Key), Kind: KindFile, Size: o.Size, ModTime: o.ModTime,
		Revision: RemoteFileRevision{Object: o, remote: newRemote(b)}}
}

// remote is what a remote source's revision needs for late reads: the
// Bucket and the download cache shared by every copy of the revision.
type remote struct {
	bucket objstore.Bucket
	cache  *downloads
}

func newRemote(b objstore.Bucket) remote {
	return remote{bucket: b, cache: &downloads{done: map[string]string{}}}
}

// downloads single-flights the local copies of one source's pinned objects
// in one directory under the Snapshot temp directory: each is made at most
// once per Snapshot.
type downloads struct {
	mu   sync.Mutex
	dir  string
	done map[string]string // rel → local path
}

// ensure makes the local file rel (under the source's download directory)
// once, with create, and returns its path.
func (r remote) ensure(snap *Snapshot, rel string, create func(dst string) error) (string, error) {
	d := r.cache
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.done[rel]; ok {
		return p, nil
	}
	if d.dir == "" {
		dir, err := os.MkdirTemp(snap.TempDir, "remote-")
		if err != nil {
			return "", err
		}
		d.dir = dir
	}
	dst := filepath.Join(d.dir, filepath.FromSlash(rel))
	if err := create(dst); err != nil {
		return "", err
	}
	d.done[rel] = dst
	return dst, nil
}

// fetch downloads the pinned object (verified, in 1 MiB chunks) to rel.
// Transient faults are retried and resumed by the bucket within its bounds
// (docs/object-stores.md, "Retries and timeouts"); a failed download leaves
// nothing at rel, and its error names the object.
func (r remote) fetch(ctx context.Context, snap *Snapshot, pin objstore.ObjectInfo, rel string) (string, error) {
	return r.ensure(snap, rel, func(dst string) error {
		err := objstore.Download(ctx, r.bucket, pin, dst)
		if errors.Is(err, objstore.ErrChanged) {
			return fmt.Errorf("changed since the Snapshot was built: %w", err)
		}
		return err
	})
}

// writeLocal stores bytes captured at build time (a pointer or manifest) at
// rel, so the store's own reader can open and validate the mirror.
func (r remote) writeLocal(snap *Snapshot, rel string, data []byte) (string, error) {
	return r.ensure(snap, rel, func(dst string) error {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return fsx.WriteFileAtomic(dst, data, 0o644)
	})
}

// RemoteFileRevision pins a remote peripheral object to the version its
// listing observed (S3 version id, GCS generation, ETag, or only key, size
// and mtime — revision_kind says which).
type RemoteFileRevision struct {
	Object objstore.ObjectInfo
	remote remote
}

func (r RemoteFileRevision) RevisionKind() string { return r.Object.RevisionKind() }
func (r RemoteFileRevision) Ref() string          { return r.Object.Ref() }

// RemoteStorylineRevision pins a remote Storyline store to the generation
// its CURRENT named at build time and the exact table objects of it.
type RemoteStorylineRevision struct {
	GenerationDir  string // the generation directory CURRENT named
	Manifest       storyline.Manifest
	ManifestObject objstore.ObjectInfo
	Tables         map[string]objstore.ObjectInfo // by relation
	manifestData   []byte
	remote         remote
}

func (r RemoteStorylineRevision) RevisionKind() string { return "storyline_generation" }

func (r RemoteStorylineRevision) Ref() string {
	refs := []string{StorylineRevision{Generation: &storyline.Generation{Number: r.Manifest.Generation, Manifest: r.Manifest}}.Ref()}
	for _, rel := range storyline.Tables {
		t := r.Tables[rel]
		refs = append(refs, fmt.Sprintf("%s_object=%s(%s)", rel, t.RevisionKind(), t.Ref()))
	}
	return strings.Join(refs, ";")
}

// RemoteEventsRevision pins a remote canonical events store to the manifest
// revision read at build time and the exact segment objects it names.
type RemoteEventsRevision struct {
	Manifest       events.Manifest
	ManifestObject objstore.ObjectInfo
	Segments       []objstore.ObjectInfo // parallel to Manifest.Segments
	manifestData   []byte
	remote         remote
}

func (r RemoteEventsRevision) RevisionKind() string { return "events_manifest" }

func (r RemoteEventsRevision) Ref() string {
	m := r.ManifestObject
	return EventsRevision{Revision: &events.Revision{Manifest: r.Manifest}}.Ref() +
		fmt.Sprintf(";manifest_object=%s(%s)", m.RevisionKind(), m.Ref())
}

// pinRemoteStore reads a store's CURRENT or manifest through the bucket and
// records the generation or revision and the object pins of its tables or
// segments. Nothing is downloaded.
func pinRemoteStore(ctx context.Context, b objstore.Bucket, d *DiscoveredSource, marker objstore.ObjectInfo) error {
	base := strings.TrimSuffix(marker.Key, path.Base(marker.Key))
	switch d.Kind {
	case KindStoryline:
		rev, err := pinRemoteStoryline(ctx, b, base, marker)
		if err != nil {
			return err
		}
		d.Revision, d.ModTime = rev, rev.Manifest.CreatedAt
		d.Size = storylineSize(&storyline.Generation{Manifest: rev.Manifest})
	case KindEvents:
		rev, err := pinRemoteEvents(ctx, b, base, marker)
		if err != nil {
			return err
		}
		d.Revision, d.ModTime = rev, rev.Manifest.CreatedAt
		for _, s := range rev.Manifest.Segments {
			d.Size += s.Bytes
		}
	}
	return nil
}

func pinRemoteStoryline(ctx context.Context, b objstore.Bucket, base string, current objstore.ObjectInfo) (RemoteStorylineRevision, error) {
	data, err := readSmall(ctx, b, current)
	if err != nil {
		return RemoteStorylineRevision{}, err
	}
	gen := strings.TrimSuffix(string(data), "\n")
	if !safeName(gen) {
		return RemoteStorylineRevision{}, fmt.Errorf("storyline: %s: corrupt CURRENT %q", objectURI(b, current.Key), truncateText(gen, 40))
	}
	rev := RemoteStorylineRevision{GenerationDir: gen, Tables: map[string]objstore.ObjectInfo{}, remote: newRemote(b)}
	if rev.ManifestObject, rev.manifestData, err = statRead(ctx, b, base+gen+"/"+storyline.ManifestFile); err != nil {
		return rev, err
	}
	if err := jsonx.DecodeStrict(rev.manifestData, &rev.Manifest); err != nil {
		return rev, fmt.Errorf("storyline: %s: corrupt manifest: %w", objectURI(b, rev.ManifestObject.Key), err)
	}
	for _, rel := range storyline.Tables {
		t, ok := rev.Manifest.Tables[rel]
		if !ok || !safeName(t.File) {
			return rev, fmt.Errorf("storyline: %s: corrupt manifest: table %q missing or badly named", objectURI(b, rev.ManifestObject.Key), rel)
		}
		info, err := statSized(ctx, b, base+gen+"/"+t.File, t.Bytes)
		if err != nil {
			return rev, err
		}
		rev.Tables[rel] = info
	}
	return rev, nil
}

func pinRemoteEvents(ctx context.Context, b objstore.Bucket, base string, manifest objstore.ObjectInfo) (RemoteEventsRevision, error) {
	rev := RemoteEventsRevision{ManifestObject: manifest, remote: newRemote(b)}
	var err error
	if rev.manifestData, err = readSmall(ctx, b, manifest); err != nil {
		return rev, err
	}
	if err := jsonx.DecodeStrict(rev.manifestData, &rev.Manifest); err != nil {
		return rev, fmt.Errorf("%s: corrupt manifest: %w", objectURI(b, manifest.Key), err)
	}
	for _, seg := range rev.Manifest.Segments {
		if seg.Path != path.Clean(seg.Path) || path.IsAbs(seg.Path) || seg.Path == ".." || strings.HasPrefix(seg.Path, "../") {
			return rev, fmt.Errorf("%s: corrupt manifest: segment path %q", objectURI(b, manifest.Key), seg.Path)
		}
		info, err := statSized(ctx, b, base+seg.Path, seg.Bytes)
		if err != nil {
			return rev, err
		}
		rev.Segments = append(rev.Segments, info)
	}
	return rev, nil
}

// statRead pins key by a stat and reads that exact version.
func statRead(ctx context.Context, b objstore.Bucket, key string) (objstore.ObjectInfo, []byte, error) {
	info, err := b.Stat(ctx, key)
	if err != nil {
		return info, nil, err
	}
	data, err := readSmall(ctx, b, info)
	return info, data, err
}

// statSized pins key and checks the size a manifest records for it.
func statSized(ctx context.Context, b objstore.Bucket, key string, size int64) (objstore.ObjectInfo, error) {
	info, err := b.Stat(ctx, key)
	if err != nil {
		return info, err
	}
	if info.Size != size {
		return info, fmt.Errorf("%s: %d bytes, the manifest records %d (truncated or replaced object)", objectURI(b, key), info.Size, size)
	}
	return info, nil
}

func readSmall(ctx context.Context, b objstore.Bucket, info objstore.ObjectInfo) ([]byte, error) {
	if info.Size > maxManifestBytes {
		return nil, fmt.Errorf("%s: %d bytes is too large for a store pointer or manifest", objectURI(b, info.Key), info.Size)
	}
	rc, err := b.ReadPinned(ctx, info)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// safeName accepts one key segment (a file or directory name) that can
// become a local path the query engine reads (valid UTF-8).
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`) && utf8.ValidString(s)
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// materialize downloads the pinned generation's three tables, mirrors
// CURRENT and the manifest read at build time beside them, and opens the
// mirror with the Storyline reader, which validates it like any local store.
func (r RemoteStorylineRevision) materialize(ctx context.Context, snap *Snapshot) (*Resolved, error) {
	for _, rel := range storyline.Tables {
		if _, err := r.remote.fetch(ctx, snap, r.Tables[rel], "store/"+r.GenerationDir+"/"+r.Manifest.Tables[rel].File); err != nil {
			return nil, err
		}
	}
	if _, err := r.remote.writeLocal(snap, "store/"+r.GenerationDir+"/"+storyline.ManifestFile, r.manifestData); err != nil {
		return nil, err
	}
	cur, err := r.remote.writeLocal(snap, "store/"+storyline.CurrentFile, []byte(r.GenerationDir+"\n"))
	if err != nil {
		return nil, err
	}
	st, err := storyline.Open(filepath.Dir(cur))
	if err != nil {
		return nil, err
	}
	g, err := st.Pin()
	if err != nil {
		return nil, err
	}
	return importedGeneration(ctx, g)
}

// localRevision mirrors the pinned manifest under the download directory,
// downloads the segments that may hold sessions (all when nil) and opens
// the mirror with the events reader, which validates the manifest. The
// returned revision lists only the downloaded segments.
func (r RemoteEventsRevision) localRevision(ctx context.Context, snap *Snapshot, sessions map[string]bool) (*events.Revision, error) {
	var keep []events.Segment
	for i := range r.Manifest.Segments {
		seg := &r.Manifest.Segments[i]
		if sessions != nil && !mayHoldAny(seg, sessions) {
			continue
		}
		if _, err := r.remote.fetch(ctx, snap, r.Segments[i], events.DirName+"/"+seg.Path); err != nil {
			return nil, err
		}
		keep = append(keep, *seg)
	}
	mf, err := r.remote.writeLocal(snap, events.DirName+"/"+events.ManifestName, r.manifestData)
	if err != nil {
		return nil, err
	}
	st, err := events.Open(filepath.Dir(mf))
	if err != nil {
		return nil, err
	}
	rev, err := st.Pin()
	if err != nil {
		return nil, err
	}
	if rev.Revision != r.Manifest.Revision {
		return nil, fmt.Errorf("events mirror holds revision %d, pinned %d", rev.Revision, r.Manifest.Revision)
	}
	rev.Segments = keep
	return rev, nil
}

// normalizeRemoteFile downloads the pinned object and normalizes the copy
// like a local file; the download verified version and size.
func (s *Source) normalizeRemoteFile(ctx context.Context, rev RemoteFileRevision, rels []string) (*Resolved, error) {
	if max := s.snap.Options.MaxFileBytes; max > 0 && rev.Object.Size > max {
		return nil, fmt.Errorf("%s: %d bytes exceeds max_file_bytes (%d)", s.Path, rev.Object.Size, max)
	}
	local, err := rev.remote.fetch(ctx, s.snap, rev.Object, "file/"+path.Base(rev.Object.Key))
	if err != nil {
		return nil, err
	}
	res, err := s.normalizePath(ctx, local, nil, rels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	return res, nil
}
