package catalog

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"time"
)

// SourceKind says what physical thing a source is.
type SourceKind string

const (
	KindStoryline SourceKind = "storyline" // a Storyline store (CURRENT root)
	KindEvents    SourceKind = "events"    // a canonical events store (events.lance)
	KindCompact   SourceKind = "compact"   // a compact source (chronicle.manifest)
	KindFile      SourceKind = "file"      // a peripheral JSON / JSONL / NDJSON file
)

// IsStore reports whether the source is a composite store rather than a file
// (the sources.kind column says store or file).
func (k SourceKind) IsStore() bool { return k != KindFile }

// FileRevision pins a local file by identity and metadata. It is change
// detection, not a content hash (docs/object-stores.md, docs/query-model.md). A source's Revision holds a
// *FileRevision, so that pinning 100,000 files allocates per directory
// chunk rather than per file.
type FileRevision struct {
	Size    int64
	ModTime time.Time
	Dev     uint64
	Inode   uint64
	// ChangeTime is the inode change time (ctime, Unix only; zero
	// elsewhere). A rewrite in place that restores the old mtime still
	// moves it, and no user call can set it back.
	ChangeTime time.Time
}

func (r FileRevision) RevisionKind() string { return "local_fingerprint" }

// Ref is size=…;mtime=…;dev=…;ino=…[;ctime=…], times in RFC 3339 with
// nanoseconds, UTC. It is appended piece by piece: a query over thousands of
// cached files computes one per file before it can run (its cache keys).
func (r FileRevision) Ref() string {
	b := make([]byte, 0, 112)
	b = strconv.AppendInt(append(b, "size="...), r.Size, 10)
	b = r.ModTime.UTC().AppendFormat(append(b, ";mtime="...), time.RFC3339Nano)
	b = strconv.AppendUint(append(b, ";dev="...), r.Dev, 10)
	b = strconv.AppendUint(append(b, ";ino="...), r.Inode, 10)
	if !r.ChangeTime.IsZero() {
		b = r.ChangeTime.UTC().AppendFormat(append(b, ";ctime="...), time.RFC3339Nano)
	}
	return string(b)
}

// ErrSourceChanged is returned when a pinned local file no longer matches
// its fingerprint: the query fails rather than mixing versions.
type ErrSourceChanged struct {
	File         string
	Pinned, Seen FileRevision
}

func (e *ErrSourceChanged) Error() string {
	if e.Seen == (FileRevision{}) {
		return fmt.Sprintf("source %s was removed since the Snapshot was built (pinned %s)", e.File, e.Pinned.Ref())
	}
	return fmt.Sprintf("source %s changed since the Snapshot was built (pinned %s, now %s)", e.File, e.Pinned.Ref(), e.Seen.Ref())
}

// Check compares what fi says of a local file with its pin.
func (r FileRevision) Check(file string, fi os.FileInfo) error {
	return r.check(file, fileRevision(fi))
}

func (r FileRevision) check(file string, seen FileRevision) error {
	if seen.Size != r.Size || !seen.ModTime.Equal(r.ModTime) || seen.Dev != r.Dev || seen.Inode != r.Inode ||
		!seen.ChangeTime.Equal(r.ChangeTime) {
		return &ErrSourceChanged{File: file, Pinned: r, Seen: seen}
	}
	return nil
}

// DiscoveredSource is one source of a Dataset as the Snapshot pinned it.
type DiscoveredSource struct {
	File       string // _file_: relative to the Dataset root, '/'-separated; "." for the root
	Path       string // absolute local path
	Kind       SourceKind
	FormatHint string
	Size       int64
	ModTime    time.Time
	Revision   Revision
	// Err is set when the candidate could not be pinned or validated; under
	// the report policy the source is kept with status error.
	Err error
	// Companion is a file beside the source that records its outcome (a
	// Harbor trial's result.json, trial.go), pinned with it.
	Companion *DiscoveredSource
}

// PinRef is the source's snapshot_ref: its revision's, with its
// companion's when it has one.
func (s *DiscoveredSource) PinRef() string {
	if s.Revision == nil {
		return ""
	}
	ref := s.Revision.Ref()
	if c := s.Companion; c != nil && c.Revision != nil {
		ref += ";" + path.Base(c.File) + "=" + c.Revision.Ref()
	}
	return ref
}

// Status is the sources.status column.
func (s *DiscoveredSource) Status() string {
	if s.Err != nil {
		return "error"
	}
	return "ready"
}
