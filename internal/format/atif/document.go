package atif

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Source format prefixes (runs.source_format is "<prefix>/<version>").
const (
	prefixJSON  = "atif"
	prefixJSONL = "atif-jsonl"
)

// normalizeDocument reads one ATIF JSON document: the root Storyline, then
// its embedded subagents depth-first in document order.
func normalizeDocument(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	data, release, err := format.ReadWhole(ctx, r, src, "atif")
	if err != nil {
		return err
	}
	defer release()
	m, ok := object(nil), src.Valid || jsonx.Valid(data) // src.Valid: detection validated these bytes
	if ok {
		m, ok = objectOf(data)
	}
	if !ok {
		return format.DocumentError(src, data, "atif", decodeError(data))
	}
	if m == nil {
		return format.Errorf(src, 0, "", "atif: document is not a JSON object")
	}
	root := newSessions(src).root(m, loc{}, prefixJSON)
	root.addInlineSteps()
	return root.emit(ctx, src, emit)
}

// node is one trajectory of a document: the root or an embedded subagent
// (ATIF 1.7 subagent_trajectories, recursively).
type node struct {
	b        *builder
	at       loc
	steps    json.RawMessage
	children []*node
}

// addInlineSteps maps the document's steps array.
func (n *node) addInlineSteps() {
	raw := n.steps
	n.steps = nil
	if format.IsNull(raw) {
		if n.at.line == 0 { // a JSONL header carries its steps on later lines
			n.b.warn.add("steps-missing", n.at.at("steps"), "document has no steps")
		}
		return
	}
	steps, ok := objectsOf(raw)
	if !ok {
		n.b.warn.add("steps-bad", n.at.at("steps"), "steps is not an array of objects; ignored")
		return
	}
	// Steps are large: growing the slice one step at a time copied them
	// again and again.
	n.b.sl.Steps = slices.Grow(n.b.sl.Steps, len(steps))
	for i, st := range steps {
		if st == nil {
			n.b.warn.add("step-null", n.at.at("steps", i), "null step skipped")
			continue
		}
		n.b.addStep(st, n.at.at("steps", i))
	}
}

// emit finishes this Storyline, emits it, then maps and emits its children.
func (n *node) emit(ctx context.Context, src format.Source, emit format.Emit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := emit(n.b.finish(src.File)); err != nil {
		return err
	}
	n.b = nil // let the rows go before the children are built
	for _, c := range n.children {
		c.addInlineSteps()
		if err := c.emit(ctx, src, emit); err != nil {
			return err
		}
	}
	return nil
}

// sessions hands out session ids that are unique within one source.
type sessions struct {
	used map[string]bool
	file string
}

func newSessions(src format.Source) *sessions {
	file := src.File
	if file == "" {
		file = src.Path
	}
	if file == "" {
		file = "atif"
	}
	return &sessions{used: map[string]bool{}, file: file}
}

// unique returns base, or base#2, base#3… when base is taken, and takes it.
func (s *sessions) unique(base string) string {
	id := base
	for i := 2; s.used[id]; i++ {
		id = base + "#" + strconv.Itoa(i)
	}
	s.used[id] = true
	return id
}

// root builds the root trajectory of a document (or a JSONL header): its
// session_id is the document's, else its trajectory_id, else the file name.
func (s *sessions) root(m object, at loc, prefix string) *node {
	sid, tid := format.String(m["session_id"]), format.String(m["trajectory_id"])
	var msg string
	switch {
	case sid != "":
	case tid != "":
		sid, msg = tid, "session_id is missing; trajectory_id is used"
	default:
		sid, msg = s.file, "session_id and trajectory_id are missing; the file name is used"
	}
	id := identity{trajectoryID: tid}
	id.sessionID = s.unique(sid)
	if id.sessionID != sid {
		id.originalSessionID = sid // several documents of one JSONL share it
	}
	id.runID = id.sessionID
	n := s.newNode(m, at, id, prefix, "")
	if msg != "" {
		n.b.warn.add("session-missing", at.at("session_id"), msg)
	}
	return n
}

// newNode maps a trajectory's root members and assigns identities to its
// embedded children (recursively), so that subagent refs in its steps can
// be resolved before any step is read.
func (s *sessions) newNode(m object, at loc, id identity, prefix, inherited string) *node {
	b := newBuilder(id, prefix)
	n := &node{b: b, at: at, steps: m["steps"]}
	subs := m["subagent_trajectories"]
	b.setRoot(m, at, inherited)
	if format.IsNull(subs) {
		return n
	}
	list, ok := objectsOf(subs)
	if !ok {
		b.warn.add("subagents-bad", at.at("subagent_trajectories"), "subagent_trajectories is not an array of objects; kept in extra")
		b.sl.Run.Extra = format.MergeExtra(b.sl.Run.Extra, "subagent_trajectories", subs)
		return n
	}
	version := b.sl.Run.SourceFormat[strings.IndexByte(b.sl.Run.SourceFormat, '/')+1:]
	b.embedded = make(map[string]string, len(list))
	for i, c := range list {
		cat := at.at("subagent_trajectories", i)
		if c == nil {
			b.warn.add("subagent-null", cat, "null embedded subagent skipped")
			continue
		}
		n.children = append(n.children, s.child(n, c, i, cat, prefix, version))
	}
	return n
}

// child builds an embedded subagent. It keeps its own session_id when that
// is unique in the source; ATIF 1.7 lets children share the parent's, and
// then "<parent session>/<trajectory_id>" is used, keeping the original.
func (s *sessions) child(parent *node, c object, i int, at loc, prefix, version string) *node {
	pr := &parent.b.sl.Run
	tid, own := format.String(c["trajectory_id"]), format.String(c["session_id"])
	key := tid
	if key == "" {
		key = "subagent-" + strconv.Itoa(i+1)
	}
	id := identity{runID: pr.RunID, trajectoryID: tid, parentSessionID: pr.SessionID, sessionID: own}
	if own == "" || s.used[own] {
		id.sessionID, id.originalSessionID = s.unique(pr.SessionID+"/"+key), own
	} else {
		s.used[own] = true
	}
	switch _, dup := parent.b.embedded[tid]; {
	case tid == "":
		parent.b.warn.add("subagent-no-id", at.at("trajectory_id"), "embedded subagent has no trajectory_id; refs cannot resolve to it")
	case dup:
		parent.b.warn.add("subagent-dup-id", at.at("trajectory_id"), "duplicate embedded trajectory_id "+quote(tid)+"; refs resolve to the first")
	default:
		parent.b.embedded[tid] = id.sessionID
	}
	return s.newNode(c, at, id, prefix, version)
}
