package storyline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// ManifestFile is the name of the generation manifest inside a generation
// directory.
const ManifestFile = "manifest.json"

// Tables lists the relations every generation holds, in manifest order.
var Tables = []string{model.RelRuns, model.RelSteps, model.RelToolCalls}

// Manifest describes one immutable generation. It is written last, inside
// the generation directory, before the directory is renamed into place; a
// generation without a valid manifest is never visible.
type Manifest struct {
	// SchemaVersion is model.SchemaVersion of the writer; readers reject
	// versions they do not know.
	SchemaVersion int `json:"schema_version"`
	// FormatVersion is the generation format (FormatVersion); absent in
	// version 1, whose session ids may repeat across inputs.
	FormatVersion int `json:"format_version,omitempty"`
	// Generation is the number in the directory name (gen-000042 → 42).
	Generation int64 `json:"generation"`
	// CreatedAt is when the generation was committed (UTC).
	CreatedAt time.Time `json:"created_at"`
	// Tables maps each relation (runs, steps, tool_calls) to its file.
	Tables map[string]TableInfo `json:"tables"`
	// Lineage names the canonical events store a projection was built from;
	// nil for stores written by import.
	Lineage *Lineage `json:"lineage,omitempty"`
	// Sources records the inputs an import normalized, one entry per _file_.
	Sources []SourceInfo `json:"sources,omitempty"`
	// RenamedSessions lists the Storylines stored under a qualified
	// session id because their input's id repeated in another input
	// (identity.go), sorted by _file_ and session id.
	RenamedSessions []RenamedSession `json:"renamed_sessions,omitempty"`
}

// TableInfo describes one Parquet file of a generation.
type TableInfo struct {
	// File is the file name, relative to the generation directory.
	File string `json:"file"`
	// Rows is the number of rows in the file.
	Rows int64 `json:"rows"`
	// Bytes is the file size; Pin checks it to catch truncated files.
	Bytes int64 `json:"bytes"`
	// RowGroups is the number of Parquet row groups.
	RowGroups int64 `json:"row_groups"`
}

// Lineage ties a projection generation to the canonical events store and
// manifest revision it was built from.
type Lineage struct {
	EventsURI      string `json:"events_uri"`
	EventsRevision int64  `json:"events_revision"`
}

// SourceInfo is the provenance of one imported input file.
type SourceInfo struct {
	// File is the _file_ value of every row normalized from the input.
	File string `json:"_file_"`
	// Format and Layout are what detection chose.
	Format string `json:"format"`
	Layout string `json:"layout,omitempty"`
	// Bytes is the input file size at import time.
	Bytes int64 `json:"bytes"`
	// Storylines is the number of Storylines (runs rows) it produced.
	Storylines int64 `json:"storylines"`
}

// readManifest strictly decodes and validates the manifest of the
// generation directory dir, which must hold generation num.
func readManifest(dir string, num int64) (Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Manifest{}, fmt.Errorf("storyline: read manifest: %w", err)
	}
	m, err := decodeManifest(data)
	if err != nil {
		return Manifest{}, fmt.Errorf("storyline: %s: %w", path, err)
	}
	if m.Generation != num {
		return Manifest{}, fmt.Errorf("storyline: %s: generation %d does not match directory %s", path, m.Generation, genName(num))
	}
	return m, nil
}

// decodeManifest parses a manifest, rejecting unknown fields, trailing data
// and values no writer produces.
func decodeManifest(data []byte) (Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("corrupt manifest: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Manifest{}, fmt.Errorf("corrupt manifest: trailing data after the JSON object")
	}
	return m, m.validate()
}

func (m *Manifest) validate() error {
	if m.SchemaVersion < model.MinSchemaVersion || m.SchemaVersion > model.SchemaVersion {
		return fmt.Errorf("unsupported schema_version %d (this build reads %d to %d)", m.SchemaVersion, model.MinSchemaVersion, model.SchemaVersion)
	}
	if m.Generation < 0 {
		return fmt.Errorf("corrupt manifest: negative generation %d", m.Generation)
	}
	if m.CreatedAt.IsZero() {
		return fmt.Errorf("corrupt manifest: created_at is missing")
	}
	if len(m.Tables) != len(Tables) {
		return fmt.Errorf("corrupt manifest: tables must be exactly %s", strings.Join(Tables, ", "))
	}
	for _, rel := range Tables {
		t, ok := m.Tables[rel]
		if !ok {
			return fmt.Errorf("corrupt manifest: table %q is missing", rel)
		}
		if t.File == "" || t.File != filepath.Base(t.File) || t.File == "." || t.File == ".." || strings.ContainsAny(t.File, `/\`) {
			return fmt.Errorf("corrupt manifest: table %q has invalid file name %q", rel, t.File)
		}
		if t.Rows < 0 || t.Bytes < 0 || t.RowGroups < 0 {
			return fmt.Errorf("corrupt manifest: table %q has negative counts", rel)
		}
	}
	if m.FormatVersion < 0 || m.FormatVersion == 1 || m.FormatVersion > FormatVersion {
		return fmt.Errorf("unsupported format_version %d (this build reads 2 to %d, or none)", m.FormatVersion, FormatVersion)
	}
	if len(m.RenamedSessions) > 0 && m.FormatVersion < 2 {
		return fmt.Errorf("corrupt manifest: renamed_sessions needs format_version 2")
	}
	stored := map[string]bool{}
	for _, r := range m.RenamedSessions {
		if r.SessionID == "" || r.StoredAs == "" || r.StoredAs == r.SessionID || stored[r.StoredAs] {
			return fmt.Errorf("corrupt manifest: renamed_sessions: invalid entry for _file_ %q session_id %q", r.File, r.SessionID)
		}
		stored[r.StoredAs] = true
	}
	if m.Lineage != nil && m.Lineage.EventsURI == "" {
		return fmt.Errorf("corrupt manifest: lineage.events_uri is empty")
	}
	return nil
}

// encode renders the manifest deterministically (sources sorted by _file_).
func (m *Manifest) encode() ([]byte, error) {
	sort.Slice(m.Sources, func(i, j int) bool { return m.Sources[i].File < m.Sources[j].File })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
