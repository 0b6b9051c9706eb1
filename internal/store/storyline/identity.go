package storyline

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// A store is one source of a Dataset, so every row's _file_ is the store's
// path and a Storyline is addressed by its session_id alone: session ids
// must be unique in a generation. Inputs of one import often repeat each
// other's ids (a placeholder id, `1/epoch-1` in every eval log), so a
// generation stores a repeated id qualified by its input, deterministically,
// and keeps the input's own id in original_session_id and the input path in
// import_file (docs/storage.md, "Session identity").

// FormatVersion is the generation format this build writes. Version 2 made
// session_id unique within a generation (renamed_sessions in the manifest);
// a version-1 generation (no format_version field) may repeat an id across
// its inputs, and CheckSessions says so.
const FormatVersion = 2

// RepeatedSessionsError is CheckSessions' error: two inputs of a
// version-1 generation gave the same session id.
type RepeatedSessionsError struct {
	SessionID string
	Files     [2]string // the two inputs' _file_
}

func (e *RepeatedSessionsError) Error() string {
	return fmt.Sprintf("written by an older pchronicle, this store holds two inputs (%s and %s) with session_id %q, so (_file_, session_id) does not identify one Storyline; rewrite it with `pchronicle store upgrade` or import its inputs again",
		e.Files[0], e.Files[1], truncate(e.SessionID, 80))
}

// RenamedSession records one Storyline whose session id repeated across
// inputs and is stored qualified.
type RenamedSession struct {
	// File is the input's _file_ as the import recorded it.
	File string `json:"_file_"`
	// SessionID is the id the input gave the Storyline.
	SessionID string `json:"session_id"`
	// StoredAs is the session_id stored and queried.
	StoredAs string `json:"stored_as"`
}

// sessionKey is a Storyline as its input gave it.
type sessionKey struct{ file, session string }

// qualify is the stored id of session from file when the id repeats in
// another input: readable, and the same whatever the order of the inputs.
func qualify(session, file string) string { return session + "@" + file }

// identity tracks the Storylines a Writer received, to rename repeated
// session ids when the generation is written.
type identity struct {
	mu    sync.Mutex
	files map[string][]string // session_id → the inputs (stored _file_) that gave it
}

func newIdentity() *identity { return &identity{files: map[string][]string{}} }

// add records a run row.
func (id *identity) add(r *model.Run) {
	id.mu.Lock()
	defer id.mu.Unlock()
	fs := id.files[r.SessionID]
	if !slices.Contains(fs, r.File) {
		id.files[r.SessionID] = append(fs, r.File)
	}
}

// plan returns the renames of every session id that more than one kept
// input gave, in a deterministic order: a repeated id gets qualify(id,
// file), or qualify(id, file)#n when that is taken by another Storyline.
func (id *identity) plan(dropped map[string]bool) (map[sessionKey]string, []RenamedSession) {
	taken := make(map[string]bool, len(id.files))
	var repeated []string
	for s, fs := range id.files {
		kept := 0
		for _, f := range fs {
			if !dropped[f] {
				kept++
			}
		}
		if kept > 0 {
			taken[s] = true
		}
		if kept > 1 {
			repeated = append(repeated, s)
		}
	}
	if len(repeated) == 0 {
		return nil, nil
	}
	slices.Sort(repeated)
	renames := map[sessionKey]string{}
	var list []RenamedSession
	for _, s := range repeated {
		fs := slices.Clone(id.files[s])
		slices.Sort(fs)
		for _, f := range fs {
			if dropped[f] {
				continue
			}
			q := qualify(s, f)
			for n := 2; taken[q]; n++ {
				q = qualify(s, f) + "#" + strconv.Itoa(n)
			}
			taken[q] = true
			renames[sessionKey{f, s}] = q
			list = append(list, RenamedSession{File: f, SessionID: s, StoredAs: q})
		}
	}
	slices.SortFunc(list, func(a, b RenamedSession) int {
		return cmp.Or(strings.Compare(a.File, b.File), strings.Compare(a.SessionID, b.SessionID))
	})
	return renames, list
}

// renamer rewrites rows between the ids their inputs gave and the ids a
// generation stores (or back, for rows copied from a generation).
type renamer struct {
	ids     map[sessionKey]string
	reverse bool // stored → input: clear the original_session_id renaming set
}

func (rn *renamer) id(file, session string) (string, bool) {
	q, ok := rn.ids[sessionKey{file, session}]
	return q, ok
}

// run renames a run row's own id, its parent's and its embedded children's,
// and records its input in import_file (on the way in).
func (rn *renamer) run(r *model.Run) {
	if !rn.reverse && r.File != "" {
		r.ImportFile = model.Str(r.File)
	}
	if len(rn.ids) == 0 {
		return
	}
	if q, ok := rn.id(r.File, r.SessionID); ok {
		switch {
		case !rn.reverse && r.OriginalSessionID == nil:
			r.OriginalSessionID = model.StrAlways(r.SessionID)
		case rn.reverse && r.OriginalSessionID != nil && *r.OriginalSessionID == q:
			// An adapter never sets original_session_id to the id it
			// derived, so this one was set by the renaming undone here.
			r.OriginalSessionID = nil
		}
		r.SessionID = q
	}
	if r.ParentSessionID != nil {
		if q, ok := rn.id(r.File, *r.ParentSessionID); ok {
			r.ParentSessionID = model.StrAlways(q)
		}
	}
	if r.SubagentRefs != nil {
		r.SubagentRefs = rn.refs(r.File, r.SubagentRefs)
	}
}

// refs renames the child_session_id of embedded subagent links; text it
// cannot decode as links is kept as it is.
func (rn *renamer) refs(file string, text *string) *string {
	dec := json.NewDecoder(bytes.NewReader([]byte(*text)))
	dec.DisallowUnknownFields()
	var refs []model.SubagentRef
	if dec.Decode(&refs) != nil {
		return text
	}
	changed := false
	for i := range refs {
		if refs[i].Embedded && refs[i].ChildSessionID != "" {
			if q, ok := rn.id(file, refs[i].ChildSessionID); ok {
				refs[i].ChildSessionID, changed = q, true
			}
		}
	}
	if !changed {
		return text
	}
	data, err := jsonx.Marshal(refs)
	if err != nil {
		return text
	}
	return model.Str(string(data))
}

func (rn *renamer) step(r *model.Step) {
	if q, ok := rn.id(r.File, r.SessionID); ok {
		r.SessionID = q
	}
}

func (rn *renamer) call(r *model.ToolCall) {
	if q, ok := rn.id(r.File, r.SessionID); ok {
		r.SessionID = q
	}
}

// restorer undoes a generation's renames on rows copied from it, so that
// the new generation renames exactly the ids that repeat in it.
func restorer(m *Manifest) *renamer {
	rn := &renamer{ids: make(map[sessionKey]string, len(m.RenamedSessions)), reverse: true}
	for _, r := range m.RenamedSessions {
		rn.ids[sessionKey{r.File, r.StoredAs}] = r.SessionID
	}
	return rn
}

// InputIDs undoes a generation's renames: its methods give a row read from
// the generation the session ids its input gave. A table that keeps each
// row's input as its _file_ (Iceberg tables) needs no qualified ids, and
// must not depend on which inputs one import happened to hold (a shard's).
type InputIDs struct{ rn *renamer }

// InputIDs returns the renames of g to undo.
func (g *Generation) InputIDs() InputIDs { return InputIDs{restorer(&g.Manifest)} }

// Run restores a run row's ids.
func (in InputIDs) Run(r *model.Run) { in.rn.run(r) }

// Step restores a step row's id.
func (in InputIDs) Step(r *model.Step) { in.rn.step(r) }

// ToolCall restores a tool call row's id.
func (in InputIDs) ToolCall(r *model.ToolCall) { in.rn.call(r) }

// CheckSessions reports, for a generation written before session ids were
// made unique (format version 1), whether two of its inputs gave the same
// session id: such a store would answer joins on (_file_, session_id) with
// rows of both Storylines. It reads the runs table only in that case.
func (g *Generation) CheckSessions(ctx context.Context) error {
	if g.Manifest.FormatVersion >= 2 || len(g.Manifest.Sources) < 2 {
		return nil
	}
	path := g.Path(model.RelRuns)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	// Only the two key columns are decoded, not the runs' texts.
	type key struct {
		File      string `parquet:"_file_"`
		SessionID string `parquet:"session_id"`
	}
	r := parquet.NewGenericReader[key](pf)
	defer r.Close()
	first := map[string]string{}
	buf := make([]key, batchRows)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(buf)
		for _, k := range buf[:n] {
			f, ok := first[k.SessionID]
			if !ok {
				first[k.SessionID] = k.File
			} else if f != k.File {
				return &RepeatedSessionsError{SessionID: k.SessionID, Files: [2]string{f, k.File}}
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

// Upgrade rewrites the current generation in the format and row schema of
// this build, as a new generation with the same rows, sources and lineage
// (session ids that repeat across inputs are qualified, import_file is
// filled). It returns nil when the current generation needs no rewrite.
func (s *Store) Upgrade(ctx context.Context) (*Generation, error) {
	w, base, err := s.NewGenerationOnCurrent(ctx)
	if err != nil {
		return nil, err
	}
	if base == nil {
		w.Abort()
		return nil, fmt.Errorf("storyline: %s: %w", s.dir, ErrNotStore)
	}
	m := base.Manifest
	if m.FormatVersion == FormatVersion && m.SchemaVersion == model.SchemaVersion {
		w.Abort()
		return nil, nil
	}
	for _, src := range m.Sources {
		w.AddSource(src)
	}
	if err := w.CopyFrom(ctx, base, func(string, string) bool { return true }); err != nil {
		w.Abort()
		return nil, err
	}
	return w.Commit(ctx, m.Lineage)
}
