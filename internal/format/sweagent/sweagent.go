// Package sweagent reads the trajectories of SWE-agent (.traj files in the
// text-action and the function-calling form, history-only files, retry
// attempts) and of mini-swe-agent (.traj.json in the trajectory formats
// mini-swe-agent-1 and mini-swe-agent-1.1). Every executed action becomes a
// tool call linked to its observation; mini-swe-agent's bash blocks are
// parsed the way the agent parses them, and a turn it rejected is reported,
// never guessed. docs/formats.md (SWE-agent section) documents the mapping
// field by field.
package sweagent

import (
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
)

// Layouts; runs.source_format is "swe-agent/<layout>".
const (
	LayoutTraj    = "traj"    // SWE-agent: trajectory + history + info (or attempts of them)
	LayoutHistory = "history" // SWE-agent: only a history (demonstrations)
	LayoutMini1   = "mini-swe-agent-1"
	LayoutMini11  = "mini-swe-agent-1.1" // mini-swe-agent 2.x: actions recorded in the messages
)

type adapter struct{}

// New returns the SWE-agent / mini-swe-agent adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.SWEAgent }

// IsMiniSWEAgent recognizes a mini-swe-agent trajectory document from its
// trajectory_format or info.mini_version (info comes first in the files, so
// it is seen even when the messages run past the detection limit).
func IsMiniSWEAgent(o *format.Obj) bool {
	return strings.HasPrefix(o.Str("trajectory_format"), "mini-swe-agent") || o.Sub("info").Has("mini_version")
}

// Detect claims JSON documents only: a mini-swe-agent trajectory;
// a SWE-agent .traj (a trajectory of {action, …} steps, or a history of
// {role, agent|message_type} entries next to info/trajectory; a retry run's
// attempts of those); or a bare SWE-agent history.
func (adapter) Detect(p *format.Probe) (string, bool) {
	o := p.First
	if p.Shape != format.ShapeObject || o == nil {
		return "", false
	}
	switch {
	case IsMiniSWEAgent(o): // messages may lie past the limit, behind info
		return miniLayout(o), true
	case o.Has("attempts") && isTraj(o.FirstElem("attempts")), isTraj(o):
		return LayoutTraj, true
	case isHistoryEntry(o.FirstElem("history")):
		return LayoutHistory, true
	}
	return "", false
}

func isTraj(o *format.Obj) bool {
	return o.FirstElem("trajectory").Has("action") ||
		(isHistoryEntry(o.FirstElem("history")) && (o.Has("trajectory") || o.Has("info")))
}

// isHistoryEntry recognizes a SWE-agent history item: a chat message that
// names its agent or message type.
func isHistoryEntry(o *format.Obj) bool {
	return o.Has("role") && (o.Has("agent") || o.Has("message_type"))
}

// miniLayout tells the two trajectory formats apart: trajectory_format when
// the probe saw it, else the major version of mini_version (2.x writes 1.1).
func miniLayout(o *format.Obj) string {
	switch tf := o.Str("trajectory_format"); {
	case tf == LayoutMini1:
		return LayoutMini1
	case tf != "":
		return LayoutMini11
	}
	v := o.Sub("info").Str("mini_version")
	if major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); err == nil && major >= 2 {
		return LayoutMini11
	}
	return LayoutMini1
}

// Normalize reads the whole document (these files are single JSON objects)
// and emits one Storyline, or one per retry attempt.
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	data, release, err := format.ReadDocument(ctx, r, src, "swe-agent trajectory")
	if err != nil {
		return err
	}
	defer release()
	top := format.SplitObject(data)
	if top == nil {
		return format.Errorf(src, 1, "", "swe-agent trajectory is not a JSON object")
	}
	switch layout {
	case LayoutMini1, LayoutMini11:
		return emit(normalizeMini(top, src, layout))
	case LayoutTraj, LayoutHistory:
		return normalizeTraj(ctx, top, src, layout, emit)
	}
	return fmt.Errorf("swe-agent: unknown layout %q", layout)
}

// fileID names a Storyline without an id of its own after its file:
// SWE-agent and mini-swe-agent name trajectories <instance_id>.traj and
// <instance_id>.traj.json.
func fileID(src format.Source) string {
	name := path.Base(strings.ReplaceAll(src.File, "\\", "/"))
	for _, ext := range []string{".json", ".traj"} {
		if len(name) > len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			name = name[:len(name)-len(ext)]
		}
	}
	if name == "" || name == "." || name == "/" {
		return format.SWEAgent
	}
	return name
}
