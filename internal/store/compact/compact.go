// Package compact implements compact sources: directories described by a
// chronicle.manifest sidecar (TOML). A leaf (format = "compact-jsonl/v1")
// holds canonical event JSONL part files and a record_count; a branch
// groups the immediate child directories that have their own sidecar.
//
// Writers append a new immutable part file and then replace only the leaf's
// manifest atomically; ancestors are never rewritten, so branch totals are
// rolled up on read. A part file the manifest does not list (a crash
// between the two steps) is invisible. Writers of one leaf serialize on a
// lock file beside the manifest, so none loses another's part.
package compact

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// ManifestFile is the sidecar that makes a directory a compact source.
const ManifestFile = "chronicle.manifest"

// lockFile serializes the writers of one directory's sidecar (fsx.Lock).
// Readers never take it and discovery never looks at it: only files the
// manifest lists are read.
const lockFile = ".chronicle.lock"

// Kinds and the one leaf format.
const (
	KindLeaf   = "leaf"
	KindBranch = "branch"
	FormatV1   = "compact-jsonl/v1"
)

// Manifest is the decoded sidecar.
type Manifest struct {
	Kind string `toml:"kind"`
	// Format is the leaf's record format; empty for branches.
	Format string `toml:"format,omitempty"`
	// RecordCount is the number of records in the listed files (leaves only).
	RecordCount int64 `toml:"record_count,omitempty"`
	// Files are the leaf's part files in append order.
	Files []Part `toml:"files,omitempty"`
}

// Part is one immutable JSONL file of a leaf.
type Part struct {
	Name    string `toml:"name"`
	Records int64  `toml:"records"`
	Bytes   int64  `toml:"bytes"`
}

// IsCompact reports whether dir has a chronicle.manifest.
func IsCompact(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, ManifestFile))
	return err == nil && st.Mode().IsRegular()
}

// ReadManifest strictly decodes dir's sidecar: unknown keys, a wrong kind
// or format, and counts that do not add up are errors naming the file.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	var m Manifest
	md, err := toml.Decode(string(data), &m)
	if err != nil {
		return nil, fmt.Errorf("compact: %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("compact: %s: unknown key %q", path, und[0].String())
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("compact: %s: %w", path, err)
	}
	return &m, nil
}

func (m *Manifest) validate() error {
	switch m.Kind {
	case KindBranch:
		if m.Format != "" || m.RecordCount != 0 || len(m.Files) > 0 {
			return errors.New("a branch has only kind (totals are rolled up from its children on read)")
		}
		return nil
	case KindLeaf:
	default:
		return fmt.Errorf("kind is %q, want %q or %q", m.Kind, KindLeaf, KindBranch)
	}
	if m.Format != FormatV1 {
		return fmt.Errorf("format is %q, want %q", m.Format, FormatV1)
	}
	var sum int64
	seen := map[string]bool{}
	for _, p := range m.Files {
		if p.Name == "" || p.Name != filepath.Base(p.Name) || strings.ContainsAny(p.Name, `/\`) || p.Name == ".." || seen[p.Name] {
			return fmt.Errorf("invalid or repeated part file name %q", p.Name)
		}
		if p.Records < 0 || p.Bytes < 0 {
			return fmt.Errorf("part %s has negative counts", p.Name)
		}
		seen[p.Name] = true
		sum += p.Records
	}
	if sum != m.RecordCount {
		return fmt.Errorf("record_count is %d but the files hold %d", m.RecordCount, sum)
	}
	return nil
}

func writeManifest(dir string, m *Manifest) error {
	var b bytes.Buffer
	b.WriteString("# pchronicle compact source; see docs/storage.md\n")
	if err := toml.NewEncoder(&b).Encode(m); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(filepath.Join(dir, ManifestFile), b.Bytes(), 0o644)
}

// CreateLeaf makes dir an empty leaf; CreateBranch makes it a branch. Both
// fail if dir already has a sidecar.
func CreateLeaf(dir string) error { return create(dir, &Manifest{Kind: KindLeaf, Format: FormatV1}) }

// CreateBranch makes dir a branch (see CreateLeaf).
func CreateBranch(dir string) error { return create(dir, &Manifest{Kind: KindBranch}) }

func create(dir string, m *Manifest) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	unlock, err := lock(context.Background(), dir) // held only by short critical sections
	if err != nil {
		return err
	}
	defer unlock()
	if IsCompact(dir) {
		return fmt.Errorf("compact: %s: %w", filepath.Join(dir, ManifestFile), os.ErrExist)
	}
	return writeManifest(dir, m)
}

// lock takes the writer lock of dir's sidecar, waiting until ctx is done.
func lock(ctx context.Context, dir string) (unlock func(), err error) {
	unlock, err = fsx.Lock(ctx, filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	return unlock, nil
}

// Append writes events as a new part file of the leaf at dir, then
// replaces the leaf's manifest. Each event is checked against the canonical
// wire schema first; an invalid event fails the append with nothing
// written. Concurrent appends to one leaf run one after the other (the
// leaf's manifest is read under its lock), and once ctx is done nothing is
// published.
func Append(ctx context.Context, dir string, events []model.Event) error {
	if !IsCompact(dir) {
		_, err := ReadManifest(dir) // the error names the missing sidecar
		return err
	}
	unlock, err := lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	if m.Kind != KindLeaf {
		return fmt.Errorf("compact: %s is a %s, not a leaf", dir, m.Kind)
	}
	if len(events) == 0 {
		return nil
	}
	var body bytes.Buffer
	for i := range events {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err := canonical.EncodeEvent(&events[i])
		if err != nil {
			return fmt.Errorf("compact: event %d (%s): %w", i, events[i].EventID, err)
		}
		body.Write(line)
		body.WriteByte('\n')
	}
	part := Part{Name: fmt.Sprintf("part-%06d.jsonl", len(m.Files)), Records: int64(len(events)), Bytes: int64(body.Len())}
	// An unlisted file of the same name can only be left by a crash before
	// its manifest update; it was never visible, so replacing it is safe.
	if err := fsx.WriteFileAtomic(filepath.Join(dir, part.Name), body.Bytes(), 0o644); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	m.Files = append(m.Files, part)
	m.RecordCount += part.Records
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("compact: not published: %w", err)
	}
	if err := writeManifest(dir, m); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// Files returns the absolute paths of the leaf's listed part files after
// checking that each exists with its recorded size and line count, so a
// record_count a reader rolls up is one it could actually read.
func Files(dir string) ([]string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Kind != KindLeaf {
		return nil, fmt.Errorf("compact: %s is a %s, not a leaf", dir, m.Kind)
	}
	var out []string
	for _, p := range m.Files {
		path := filepath.Join(dir, p.Name)
		n, size, err := countLines(path)
		if err != nil {
			return nil, fmt.Errorf("compact: %w", err)
		}
		if n != p.Records || size != p.Bytes {
			return nil, fmt.Errorf("compact: %s: %d records in %d bytes, manifest records %d in %d", path, n, size, p.Records, p.Bytes)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}

func countLines(path string) (lines, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	buf := make([]byte, 1<<16)
	for {
		n, err := r.Read(buf)
		size += int64(n)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if err == io.EOF {
			return lines, size, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}

// Children lists a branch's immediate child directories that have a
// sidecar, in name order.
func Children(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && IsCompact(filepath.Join(dir, e.Name())) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// RecordCount is a leaf's record_count, or for a branch the roll-up over
// its descendants (read-side, since writers never update ancestors).
func RecordCount(dir string) (int64, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return 0, err
	}
	if m.Kind == KindLeaf {
		return m.RecordCount, nil
	}
	children, err := Children(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, c := range children {
		n, err := RecordCount(c)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
