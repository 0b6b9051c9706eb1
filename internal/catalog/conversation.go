package catalog

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/openhands"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
)

// OpenHands V1 persisted conversations. The software-agent-sdk persists a
// conversation as a directory (conversations/<id>/, persistence/<id>/,
// a workspace's .openhands/, …):
//
//	D/base_state.json                 the ConversationState: id, agent and LLM, status, stats
//	D/events/event-<NNNNN>-<uuid>.json one event per file, numbered in order
//
// A directory is recognized from names alone, like a composite root —
// discovery reads no file: it holds base_state.json, and its events/ holds
// the event files (none, for a conversation that has not started). The
// directory is one file source whose _file_ is the directory; its member
// files are not sources. Its pin is every member's, so an event appended
// or a state rewritten is a new version. Only local Datasets are grouped:
// in an object store the files stay sources of their own.

const (
	conversationState  = "base_state.json"
	conversationEvents = "events"
)

// conversationFile is one pinned member of a conversation.
type conversationFile struct {
	File, Path string
	Rev        *FileRevision
	n          int64 // the event's number
}

// ConversationRevision pins a conversation directory: its base_state.json
// and its event files, in event order.
type ConversationRevision struct {
	State  conversationFile
	Events []conversationFile
}

func (r *ConversationRevision) RevisionKind() string { return "local_conversation" }

// Ref names the state file's pin and a digest of every event file's name
// and pin (a conversation may hold thousands).
func (r *ConversationRevision) Ref() string {
	h := blake3.New()
	for _, e := range r.Events {
		h.WriteString(path.Base(e.File))
		h.WriteString("=")
		h.WriteString(e.Rev.Ref())
		h.WriteString("\n")
	}
	return "base_state=" + r.State.Rev.Ref() + ";events=" + strconv.Itoa(len(r.Events)) + ";events_digest=" + hex.EncodeToString(h.Sum(nil)[:16])
}

func (r *ConversationRevision) storylines(ctx context.Context, s *Source, rels []string) (*Resolved, error) {
	res, err := s.scratch(rels, func(add func(*model.Storyline) error) error { return r.read(ctx, s, add) })
	var nt *notTrajectory
	if errors.As(err, &nt) {
		return nt.resolved(), nil
	}
	if err != nil {
		return nil, err
	}
	res.Format = format.OpenHands
	return res, nil
}

// read normalizes the pinned conversation through add, under the
// Snapshot's limits and its policy for what is not a trajectory.
func (r *ConversationRevision) read(ctx context.Context, s *Source, add func(*model.Storyline) error) error {
	err := r.Normalize(ctx, format.Source{Path: s.Path, File: s.File}, s.snap.Options.MaxFileBytes, add)
	var uerr *format.UnrecognizedError
	if errors.As(err, &uerr) && s.unrecognizedPolicy() != UnrecognizedFail {
		return &notTrajectory{err: uerr}
	}
	return err
}

// Normalize reads the pinned conversation (src.Path is its directory) and
// emits its Storyline; pchronicle import calls it for a conversation
// directory among its inputs. Each member is checked against its pin on the
// open file before and after it is read, and may hold at most maxFileBytes
// (0: no limit). A base_state.json that is no OpenHands conversation state
// is a *format.UnrecognizedError.
func (r *ConversationRevision) Normalize(ctx context.Context, src format.Source, maxFileBytes int64, emit format.Emit) error {
	state, err := readPinned(r.State, maxFileBytes)
	if err != nil {
		return err
	}
	if !openhands.IsConversationState(state) {
		return &format.UnrecognizedError{Path: src.File, Reason: "a directory with base_state.json and events/ whose base_state.json is not an OpenHands conversation state (id, agent.llm.model)"}
	}
	i := 0
	next := func() (openhands.EventFile, bool, error) {
		if i == len(r.Events) {
			return openhands.EventFile{}, false, nil
		}
		e := r.Events[i]
		i++
		data, err := readPinned(e, maxFileBytes)
		return openhands.EventFile{Name: path.Base(e.File), Data: data}, err == nil, err
	}
	return openhands.NormalizeConversation(ctx, src, state, next, emit)
}

// readPinned reads a member file, failing when it no longer matches its
// pin or is larger than limit (0: no limit).
func readPinned(m conversationFile, limit int64) ([]byte, error) {
	f, err := os.Open(m.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	check := func() error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		return m.Rev.Check(m.File, fi)
	}
	if err := check(); err != nil {
		return nil, err
	}
	if limit > 0 && m.Rev.Size > limit {
		return nil, fmt.Errorf("%s: %d bytes is more than max_file_bytes=%d", m.File, m.Rev.Size, limit)
	}
	buf := make([]byte, m.Rev.Size+1) // one byte more: a file grown since its pin shows it
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	data := buf[:n]
	if err := check(); err != nil {
		return nil, err
	}
	if int64(len(data)) != m.Rev.Size {
		return nil, &ErrSourceChanged{File: m.File, Pinned: *m.Rev, Seen: FileRevision{Size: int64(len(data))}}
	}
	return data, nil
}

// detect is Source.Detect for a conversation: its state file decides.
func (r *ConversationRevision) detect(s *Source) (ingest.Detection, error) {
	state, err := readPinned(r.State, s.snap.Options.MaxFileBytes)
	if err != nil {
		return ingest.Detection{}, err
	}
	if !openhands.IsConversationState(state) {
		return ingest.Detection{}, &format.UnrecognizedError{Path: s.File, Reason: "base_state.json is not an OpenHands conversation state (id, agent.llm.model)"}
	}
	return ingest.Detection{Format: format.OpenHands, Layout: openhands.LayoutConversation}, nil
}

// eventNumber parses the number of an event file name,
// event-<digits>-<id>.json.
func eventNumber(name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, "event-")
	if !ok || !strings.HasSuffix(rest, ".json") {
		return 0, false
	}
	digits, id, ok := strings.Cut(rest, "-")
	if !ok || digits == "" || id == ".json" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n >= 0
}

// GroupConversations replaces each conversation directory's member files
// with one source for the directory, at the place of its base_state.json,
// keeping the order of the others. It runs after the walk pinned every
// file, and groups only files pinned locally: a Snapshot's discovery calls
// it, and pchronicle import on the files PeripheralFiles lists (the
// directory's Revision is a *ConversationRevision).
func GroupConversations(found []*DiscoveredSource) []*DiscoveredSource {
	states := map[string]*DiscoveredSource{} // conversation directory → its base_state.json
	for _, s := range found {
		if _, local := s.Revision.(*FileRevision); s.Kind == KindFile && local && path.Base(s.File) == conversationState {
			states[path.Dir(s.File)] = s
		}
	}
	if len(states) == 0 {
		return found
	}
	events := map[string][]*DiscoveredSource{}
	for _, s := range found {
		dir, name := path.Split(s.File)
		if s.Kind != KindFile || path.Base(dir) != conversationEvents {
			continue
		}
		conv := path.Dir(strings.TrimSuffix(dir, "/"))
		if _, ok := states[conv]; !ok {
			continue
		}
		if _, ok := eventNumber(name); ok {
			events[conv] = append(events[conv], s)
		}
	}
	drop := map[*DiscoveredSource]bool{}
	replace := map[*DiscoveredSource]*DiscoveredSource{}
	for dir, state := range states {
		conv := &DiscoveredSource{File: dir, Path: filepath.Dir(state.Path), Kind: KindFile, Err: state.Err}
		rev := &ConversationRevision{State: member(state)}
		conv.Size, conv.ModTime = state.Size, state.ModTime
		for _, e := range events[dir] {
			drop[e] = true
			if conv.Err == nil && e.Err != nil {
				conv.Err = fmt.Errorf("%s: %w", e.File, e.Err)
			}
			if conv.Err != nil {
				continue
			}
			if _, local := e.Revision.(*FileRevision); !local {
				conv.Err = fmt.Errorf("%s is not pinned as a local file", e.File)
				continue
			}
			rev.Events = append(rev.Events, member(e))
			conv.Size += e.Size
			if e.ModTime.After(conv.ModTime) {
				conv.ModTime = e.ModTime
			}
		}
		// The SDK numbers events with at least five digits: past 99999 the
		// names no longer sort as the numbers do.
		slices.SortStableFunc(rev.Events, func(a, b conversationFile) int { return int(min(max(a.n-b.n, -1), 1)) })
		if conv.Err == nil {
			conv.Revision = rev
		}
		replace[state] = conv
	}
	kept := found[:0]
	for _, s := range found {
		switch {
		case replace[s] != nil:
			kept = append(kept, replace[s])
		case !drop[s]:
			kept = append(kept, s)
		}
	}
	return kept
}

func member(s *DiscoveredSource) conversationFile {
	rev, _ := s.Revision.(*FileRevision)
	n, _ := eventNumber(path.Base(s.File))
	return conversationFile{File: s.File, Path: s.Path, Rev: rev, n: n}
}
