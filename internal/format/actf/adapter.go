// Package actf reads ACTF, the line-delimited agent trace event stream
// (scope start/end events plus marks), in the public ATOF dialects: NeMo
// Relay ATOF 0.1, the NeMo Agent Toolkit package spec v0.2, and the earlier
// NAT draft. See docs/formats.md (actf section) for the mapping.
package actf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Layouts, one per dialect; runs.source_format is "actf/<layout>".
const (
	LayoutATOF01   = "atof-0.1"
	LayoutNAT02    = "nat-0.2"
	LayoutNATDraft = "nat-draft"
)

type adapter struct{}

// New returns the ACTF adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.ACTF }

// Detect recognizes the dialect from the first line's discriminators.
func (adapter) Detect(p *format.Probe) (string, bool) {
	if p.Shape != format.ShapeLines && p.Shape != format.ShapeObject {
		return "", false
	}
	o := p.First
	switch kind := o.Str("kind"); {
	case o.Has("atof_version"):
		return LayoutATOF01, true
	case kind == "scope" && (o.Has("scope_category") || o.Has("category")):
		return LayoutATOF01, true
	case kind == "mark" && (o.Has("category") || o.Has("category_profile")):
		return LayoutATOF01, true
	case kind == "StreamHeader":
		return LayoutNATDraft, true
	case kind == "StreamHeaderEvent":
		return LayoutNAT02, true
	case (kind == "ScopeStart" || kind == "ScopeEnd" || kind == "Mark") && o.Has("uuid"):
		if o.Str("schema_version") == "0.1" && !o.Has("flags") && !o.Has("profile") && kind != "Mark" {
			return LayoutNATDraft, true
		}
		return LayoutNAT02, true
	}
	return "", false
}

// Normalize streams the events, routes each to its session and emits a
// session's Storyline when its root agent scope ends; sessions without one
// are emitted at EOF in order of first appearance. Memory is bounded by
// the events of the sessions open at once, plus a uuid → session map.
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	switch layout {
	case LayoutATOF01, LayoutNAT02, LayoutNATDraft:
	default:
		return fmt.Errorf("actf: unknown layout %q", layout)
	}
	base := path.Base(src.File)
	var s *stream
	if reuseBlocks {
		s = streams.Get().(*stream)
		defer s.release()
	} else {
		s = streams.New().(*stream) // FuzzNormalize's stream, which reuses nothing
	}
	s.src, s.layout, s.emit, s.sourceFormat = src, layout, emit, format.ACTF+"/"+layout
	s.fileSession = sessionKey{'f', strings.TrimSuffix(base, path.Ext(base))}
	err := format.EachLine(ctx, r, func(line int64, text []byte) error {
		var e event
		if err := s.decodeLine(&e, line, text); err != nil {
			return format.Errorf(src, line, "", "not a JSON object: %v", err)
		}
		return s.route(&e, text)
	})
	if err != nil {
		return err
	}
	for _, key := range s.order {
		if sess, ok := s.sessions[key]; ok {
			if err := s.flush(sess); err != nil {
				return err
			}
		}
	}
	return nil
}

type stream struct {
	src          format.Source
	layout       string
	sourceFormat string
	emit         format.Emit
	header       json.RawMessage
	fileSession  sessionKey // the file's default session
	sessions     map[sessionKey]*session
	order        []sessionKey     // session keys in order of first appearance
	scopes       map[string]scope // scopes started, by uuid
	// open and openAnonymous hold the starts not yet ended, by pairing key
	// (see openOf): the latest one, which links to the one it hides (a
	// stack without a slice per start). Two maps of strings hash faster
	// than one of a struct.
	open, openAnonymous map[string]*event
	parents             map[string]string // child session id → parent session id
	emitted             map[string]int    // session ids already emitted
	seen                map[string]bool   // session ids seen in the stream
	b                   *builder          // maps every session in turn
	free                [][]*event        // event buffers of flushed sessions, for new ones
	cur                 *session          // the session of the latest event, while open
	built               int               // the size of the session b last built
	times               []time.Time       // the block time takes timestamps from
	// lastEvents and lastText are the number of events and the bytes of
	// their text (see session.add) of the session flushed last.
	lastEvents, lastText int
	// freeBlocks and freeTexts are the blocks of flushed sessions that no
	// other event can reach (see reusable), cleared, for new ones.
	freeBlocks [][]event
	freeTexts  [][]byte
}

// streams keeps the maps and buffers of streams whose file has ended for
// the next file. A file of many sessions grows its maps to thousands of
// entries, and growing them again for every file of a corpus showed in
// profiles.
var streams = sync.Pool{New: func() any {
	return &stream{
		sessions: map[sessionKey]*session{}, scopes: map[string]scope{},
		open: map[string]*event{}, openAnonymous: map[string]*event{}, parents: map[string]string{},
		emitted: map[string]int{}, seen: map[string]bool{},
	}
}}

// poolLimit is the number of entries above which a map is dropped rather
// than cleared for the next file: clearing costs its capacity, which a
// large file leaves behind.
const poolLimit = 1 << 16

// release returns the stream to streams with nothing of its file: the maps
// emptied, the buffers of flushed sessions kept (no event can reach them,
// see reusable) and everything else dropped.
func (s *stream) release() {
	s.sessions, s.scopes = reuse(s.sessions), reuse(s.scopes)
	s.open, s.openAnonymous, s.parents = reuse(s.open), reuse(s.openAnonymous), reuse(s.parents)
	s.emitted, s.seen = reuse(s.emitted), reuse(s.seen)
	clear(s.order)
	*s = stream{
		sessions: s.sessions, order: s.order[:0], scopes: s.scopes, open: s.open, openAnonymous: s.openAnonymous,
		parents: s.parents, emitted: s.emitted, seen: s.seen, b: s.b, free: s.free, built: s.built,
		times: s.times, freeBlocks: s.freeBlocks, freeTexts: s.freeTexts,
	}
	streams.Put(s)
}

// reuse empties m for the next file, or replaces it when it is large.
func reuse[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > poolLimit {
		return map[K]V{}
	}
	clear(m)
	return m
}

// sessionKey names a session: by metadata.session_id ('s'), by its root
// agent scope's uuid ('u'), or the file's default session ('f'); id is the
// session id.
type sessionKey struct {
	kind byte
	id   string
}

// scope is a started scope: its uuid (the string events reuse) and its
// session.
type scope struct {
	uuid    string
	session sessionKey
}

type session struct {
	key    sessionKey
	events []*event
	root   *event // the agent scope whose end closes the session
	// block and text hold the session's latest events and the parts of
	// their lines they keep: they are allocated in blocks that belong to the
	// session alone (so that an open session keeps no other's lines), where
	// each was an allocation of its own. textSize is the parts' total.
	block    []event
	text     []byte
	textSize int
}

// maxBlock and maxText bound what is allocated at once for events and for
// their text (a longer part has a block of its own).
const (
	maxBlock = 256
	maxText  = 64 << 10
)

// add moves a decoded event, and the parts of the line its members alias,
// into the session's blocks. Only what the mapping reads again is kept:
// the payload and error, and the whole line for an event whose line is
// read again (see needsLine); most of a line is its envelope, which
// decodeLine has already turned into strings.
func (sess *session) add(decoded *event, line []byte) *event {
	if len(sess.block) == cap(sess.block) {
		sess.block = make([]event, 0, min(max(2*cap(sess.block), 4), maxBlock))
	}
	sess.block = append(sess.block, *decoded)
	e := &sess.block[len(sess.block)-1]
	if !needsLine(e) {
		e.raw = nil
	} else if aliases(e.raw, line) {
		moved := sess.keep(line)
		e.raw = moved
		e.payload = movedPart(e.payload, line, moved)
		e.errRaw = movedPart(e.errRaw, line, moved)
		return e
	}
	if aliases(e.payload, line) {
		e.payload = sess.keep(e.payload)
	}
	if aliases(e.errRaw, line) {
		e.errRaw = sess.keep(e.errRaw)
	}
	return e
}

// needsLine reports whether the mapping reads the event's line again: for
// members left over for extra, a mark's metadata, or an unknown kind.
func needsLine(e *event) bool {
	return e.hasLeftover || e.phase == phaseMark || e.phase == phaseOther
}

// keep copies part to the session's text.
func (sess *session) keep(part []byte) []byte {
	if cap(sess.text)-len(sess.text) < len(part) {
		sess.text = make([]byte, 0, max(min(2*cap(sess.text), maxText), len(part)))
	}
	start := len(sess.text)
	sess.text = append(sess.text, part...)
	sess.textSize += len(part)
	return sess.text[start:len(sess.text):len(sess.text)]
}

// aliases reports whether part is a non-empty part of line.
func aliases(part, line []byte) bool {
	at := cap(line) - cap(part) // where part starts, if it was sliced from line
	return len(part) > 0 && at >= 0 && at+len(part) <= len(line) && &line[at] == &part[0]
}

// movedPart is part, if it is a part of line, in moved (a copy of line);
// anything else as it is.
func movedPart(part, line, moved []byte) []byte {
	if !aliases(part, line) {
		return part
	}
	at := cap(line) - cap(part)
	return moved[at : at+len(part) : at+len(part)]
}

// route moves the decoded event (whose members may alias line) to its
// session and maps the session when the event ends it.
func (s *stream) route(decoded *event, line []byte) error {
	if decoded.phase == phaseHeader {
		if s.header == nil {
			s.header = headerJSON(format.SplitObject(decoded.raw))
		}
		return nil
	}
	if decoded.phase == phaseEnd {
		s.pair(decoded)
	}
	if r := decoded.more(); r.sessionID != "" && r.parentSessionID != "" && r.sessionID != r.parentSessionID {
		s.parents[r.sessionID] = r.parentSessionID
	}
	key := s.sessionOf(decoded)
	sess, ok := s.cur, s.cur != nil && s.cur.key == key // most events follow one of their session
	if !ok {
		sess, ok = s.sessions[key]
	}
	if !ok {
		// Sessions of a stream tend to be alike: the first blocks fit the
		// previous one's events and text.
		block := spare(&s.freeBlocks, min(max(s.lastEvents, 4), maxBlock))
		text := spare(&s.freeTexts, min(s.lastText, maxText))
		sess = &session{key: key, events: spare(&s.free, 0), block: block, text: text}
		s.sessions[key] = sess
		s.order = append(s.order, key)
		s.seen[key.id] = true // the key's events all have its id
	}
	e := sess.add(decoded, line)
	if e.phase == phaseStart {
		if e.uuid != "" {
			s.scopes[e.uuid] = scope{e.uuid, key}
		}
		open, k := s.openOf(e)
		e.hidden = open[k]
		open[k] = e
		if sess.root == nil && e.scopeType == scopeAgent && !s.inSession(e.parentUUID, key) {
			sess.root = e
		}
	}
	sess.events = append(sess.events, e)
	s.cur = sess
	if e.phase == phaseEnd && e.start != nil && e.start == sess.root {
		return s.flush(sess)
	}
	return nil
}

// spare returns a buffer for a new session, with room for at least size
// elements: the latest of free, else a new one. Each new session takes one
// from free (one too small is dropped), so free holds no more than the
// sessions open at once.
func spare[T any](free *[][]T, size int) []T {
	if n := len(*free); n > 0 {
		buf := (*free)[n-1]
		(*free)[n-1] = nil
		*free = (*free)[:n-1]
		if cap(buf) >= size {
			return buf
		}
	}
	if size == 0 {
		return nil
	}
	return make([]T, 0, size)
}

// inSession reports whether scope uuid belongs to the session key.
func (s *stream) inSession(uuid string, key sessionKey) bool {
	sc, ok := s.scopes[uuid]
	return ok && sc.session == key
}

// sessionOfScope returns the session of scope uuid, if it is known.
func (s *stream) sessionOfScope(uuid string) (sessionKey, bool) {
	if uuid == "" {
		return sessionKey{}, false
	}
	sc, ok := s.scopes[uuid]
	return sc.session, ok
}

// pair links an end to the latest open start with the same uuid (or, for
// producers that omit uuids, the same type, name and tool call id).
func (s *stream) pair(e *event) {
	open, k := s.openOf(e)
	start := open[k]
	if start == nil {
		return
	}
	e.start, start.ended = start, true
	if start.hidden == nil {
		delete(open, k)
	} else {
		open[k] = start.hidden
		start.hidden = nil // so that it does not keep an ended scope's events
	}
}

// openOf is the pairing key of a scope and the map of open starts it is
// in: its uuid, else (anonymous) its type, name and tool call id.
func (s *stream) openOf(e *event) (map[string]*event, string) {
	if e.uuid != "" {
		return s.open, e.uuid
	}
	return s.openAnonymous, e.scopeType + "|" + e.name + "|" + e.toolCallID
}

// sessionOf decides which Storyline an event belongs to: its
// metadata.session_id (a subagent announcement belongs to the parent), else
// the session of its start or parent scope, else a root agent scope starts
// a session named by its uuid, else the file's default session.
func (s *stream) sessionOf(e *event) sessionKey {
	r := e.more()
	if e.phase == phaseMark && r.parentSessionID != "" && strings.Contains(strings.ToLower(e.name), "subagent") {
		return sessionKey{'s', r.parentSessionID}
	}
	if r.sessionID != "" {
		return sessionKey{'s', r.sessionID}
	}
	if e.start != nil {
		if k, ok := s.sessionOfScope(e.start.uuid); ok {
			return k
		}
	}
	if k, ok := s.sessionOfScope(e.parentUUID); ok {
		return k
	}
	if e.phase == phaseStart && e.scopeType == scopeAgent && e.uuid != "" {
		return sessionKey{'u', e.uuid}
	}
	return s.fileSession
}

// flush builds and emits a session's Storyline. A session id seen again
// after its Storyline was emitted gets a numbered suffix, keeping
// session_id unique within the file.
func (s *stream) flush(sess *session) error {
	delete(s.sessions, sess.key)
	if s.cur == sess {
		s.cur = nil
	}
	if s.b == nil {
		s.b = newBuilder(func(id string) bool { return s.seen[id] })
	}
	s.b.reset(sess.key.id, s.built)
	sl := s.b.build(sess.events, s.header)
	s.built = s.b.size(len(sess.events))
	s.lastEvents, s.lastText = len(sess.events), sess.textSize
	if reuseBlocks && reusable(sess) {
		clear(sess.block)
		s.freeBlocks = append(s.freeBlocks, sess.block[:0])
		if cap(sess.text) <= maxText { // not a long line's own block
			s.freeTexts = append(s.freeTexts, sess.text[:0])
		}
	}
	if cap(sess.events) <= reuseLimit {
		clear(sess.events)
		s.free = append(s.free, sess.events[:0])
	}
	r := &sl.Run
	if n := s.emitted[sess.key.id]; n > 0 {
		r.SessionID = sess.key.id + "#" + strconv.Itoa(n+1)
		r.OriginalSessionID = model.Str(sess.key.id)
	}
	s.emitted[sess.key.id]++
	if parent := s.parents[sess.key.id]; parent != "" {
		r.ParentSessionID = model.Str(parent)
	}
	r.RunID = s.rootSession(sess.key.id)
	r.SourceFormat = s.sourceFormat
	sl.Finalize(s.src.File)
	return s.emit(sl)
}

// reuseBlocks is false only in FuzzNormalize, which checks the Storylines
// against those of a stream that reuses no block, nor a stream of another
// file.
var reuseBlocks = true

// reusable reports whether no event of another session can reach the
// flushed session's events (and so its text): only an open start is
// reachable, from the open starts, from the start it hides, or as the start of a
// later end. The Storyline holds none of them.
func reusable(sess *session) bool {
	for _, e := range sess.events {
		if e.phase == phaseStart && !e.ended {
			return false
		}
	}
	return true
}

// rootSession follows subagent parents up to the main session, which names
// the run.
func (s *stream) rootSession(id string) string {
	for range len(s.parents) + 1 {
		parent, ok := s.parents[id]
		if !ok {
			break
		}
		id = parent
	}
	return id
}

// headerJSON keeps the stream header (codecs, schemas) for the run extra.
func headerJSON(obj map[string]json.RawMessage) json.RawMessage {
	if text := format.Extra(obj); text != nil {
		return json.RawMessage(*text)
	}
	return json.RawMessage("{}")
}
