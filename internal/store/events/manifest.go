package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// FormatVersion is the version of the events.lance directory layout and of
// _manifest.json written by this build. Readers reject other versions.
const FormatVersion = 1

// Manifest is the content of _manifest.json: everything a reader needs to see
// one revision of the store. It is replaced atomically and never edited in
// place, so a reader that decoded it once has a complete, immutable view.
type Manifest struct {
	// FormatVersion is the layout version (FormatVersion).
	FormatVersion int `json:"format_version"`
	// SchemaVersion is the events row schema version (model.SchemaVersion).
	SchemaVersion int `json:"schema_version"`
	// Revision increases by one with every published manifest (append or
	// compaction). A new, empty store is revision 0.
	Revision int64 `json:"revision"`
	// FactWatermark is the revision that last changed the set of events
	// (the last append). Two revisions with the same fact watermark hold
	// exactly the same events; projections use it to decide freshness.
	FactWatermark int64 `json:"fact_watermark"`
	// LayoutWatermark is the revision that last rewrote segments without
	// changing facts (the last compaction); 0 if never compacted.
	LayoutWatermark int64 `json:"layout_watermark"`
	// Events is the total number of rows in Segments.
	Events int64 `json:"events"`
	// Segments are the visible immutable segment files.
	Segments []Segment `json:"segments"`
	// CreatedAt is when this revision was published (informational only).
	CreatedAt time.Time `json:"created_at"`
}

// Segment describes one immutable Parquet file of events, sorted by
// (session_id, seq). The ranges let readers skip segments for point lookups
// without opening them.
type Segment struct {
	// Path is relative to the store directory, always under segments/.
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	// Revision is the revision that wrote the file.
	Revision int64 `json:"revision"`
	// MinFactRevision and MaxFactRevision bound the append revisions of the
	// events the file holds: equal for an appended segment, a range for a
	// compacted one. Incremental projections use them to find changed
	// sessions.
	MinFactRevision int64 `json:"min_fact_revision"`
	MaxFactRevision int64 `json:"max_fact_revision"`
	// Sessions is the number of distinct session_id values; MinSession and
	// MaxSession bound them in byte order.
	Sessions   int64     `json:"sessions"`
	MinSession string    `json:"min_session_id"`
	MaxSession string    `json:"max_session_id"`
	MinSeq     int64     `json:"min_seq"`
	MaxSeq     int64     `json:"max_seq"`
	MinTS      time.Time `json:"min_ts"`
	MaxTS      time.Time `json:"max_ts"`
}

// MayHoldSession reports whether the segment can contain session s.
func (s *Segment) MayHoldSession(session string) bool {
	return s.MinSession <= session && session <= s.MaxSession
}

// decodeManifest parses _manifest.json strictly: unknown fields, trailing
// data and inconsistent values are errors, because a manifest this build does
// not fully understand must not be half-read.
func decodeManifest(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the manifest object")
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *Manifest) validate() error {
	if m.FormatVersion != FormatVersion {
		return fmt.Errorf("format_version %d is not supported (this build reads %d)", m.FormatVersion, FormatVersion)
	}
	if m.SchemaVersion < model.MinSchemaVersion || m.SchemaVersion > model.SchemaVersion {
		return fmt.Errorf("schema_version %d is not supported (this build reads %d to %d)", m.SchemaVersion, model.MinSchemaVersion, model.SchemaVersion)
	}
	if m.Revision < 0 || m.FactWatermark < 0 || m.LayoutWatermark < 0 ||
		m.FactWatermark > m.Revision || m.LayoutWatermark > m.Revision {
		return fmt.Errorf("watermarks fact=%d layout=%d do not fit revision %d", m.FactWatermark, m.LayoutWatermark, m.Revision)
	}
	if m.Segments == nil {
		return errors.New("segments: missing")
	}
	seen := make(map[string]bool, len(m.Segments))
	var rows int64
	for i := range m.Segments {
		s := &m.Segments[i]
		if err := s.validate(m.Revision); err != nil {
			return fmt.Errorf("segments[%d]: %w", i, err)
		}
		if seen[s.Path] {
			return fmt.Errorf("segments[%d]: path %q listed twice", i, s.Path)
		}
		seen[s.Path] = true
		rows += s.Rows
	}
	if rows != m.Events {
		return fmt.Errorf("events: %d, but segments hold %d rows", m.Events, rows)
	}
	return nil
}

func (s *Segment) validate(revision int64) error {
	if s.Path != path.Clean(s.Path) || !strings.HasPrefix(s.Path, segmentsDir+"/") || strings.Contains(s.Path, "..") {
		return fmt.Errorf("path %q must be a clean path under %s/", s.Path, segmentsDir)
	}
	switch {
	case s.Rows <= 0:
		return fmt.Errorf("rows: %d, want > 0", s.Rows)
	case s.Bytes <= 0:
		return fmt.Errorf("bytes: %d, want > 0", s.Bytes)
	case s.Revision <= 0 || s.Revision > revision:
		return fmt.Errorf("revision %d outside 1..%d", s.Revision, revision)
	case s.MinFactRevision <= 0 || s.MinFactRevision > s.MaxFactRevision || s.MaxFactRevision > s.Revision:
		return fmt.Errorf("fact revisions %d..%d do not fit revision %d", s.MinFactRevision, s.MaxFactRevision, s.Revision)
	case s.Sessions <= 0 || s.Sessions > s.Rows || s.MinSession > s.MaxSession:
		return errors.New("session range is inconsistent")
	case s.MinSeq > s.MaxSeq || s.MinTS.After(s.MaxTS):
		return errors.New("seq or ts range is inconsistent")
	}
	return nil
}

func encodeManifest(m *Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
