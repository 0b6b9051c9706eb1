package sweagent

import (
	"fmt"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Result link kinds besides model.LinkByID (the same words as the openai
// adapter's): the observation that follows a text action answers it by
// position; a trajectory step holds its action and observation together.
const (
	linkByOrder = "order"
	linkInline  = "inline"
)

// Message kinds this adapter adds.
const (
	// kindFormatError marks a model turn the agent rejected (no action, or
	// more than one): nothing ran.
	kindFormatError = "format_error"
	// kindExit marks the agent's own closing message (exit status, limits).
	kindExit = "exit"
)

// builder accumulates one Storyline and the calls still waiting for their
// observation.
type builder struct {
	src format.Source
	sl  *model.Storyline
	ptr []any // pointer prefix of the Storyline's data ({"attempts", n} for a retry attempt)
	// pending are the calls of the latest model turn without a result, in
	// call order; byID finds a call by its id (function calling).
	pending []int
	byID    map[string]int
}

func newBuilder(src format.Source, layout string, ptr ...any) *builder {
	return &builder{src: src, ptr: ptr, byID: map[string]int{},
		sl: &model.Storyline{Run: model.Run{SourceFormat: format.SWEAgent + "/" + layout, AgentName: model.Str(agentName(layout))}}}
}

func agentName(layout string) string {
	if layout == LayoutMini1 || layout == LayoutMini11 {
		return "mini-swe-agent"
	}
	return "swe-agent"
}

func (b *builder) warn(msg string, parts ...any) {
	b.sl.Warnings = append(b.sl.Warnings, model.Warning{Pointer: format.Pointer(append(append([]any(nil), b.ptr...), parts...)...), Message: msg})
}

// addStep appends st and returns its index.
func (b *builder) addStep(st model.Step) int {
	b.sl.Steps = append(b.sl.Steps, st)
	return len(b.sl.Steps) - 1
}

// newTurn starts a model turn: calls of the previous turn that got no
// observation stay unanswered.
func (b *builder) newTurn() { b.pending = b.pending[:0] }

// addCall records a call of step stepID that waits for its observation.
func (b *builder) addCall(tc model.ToolCall) int {
	b.sl.ToolCalls = append(b.sl.ToolCalls, tc)
	i := len(b.sl.ToolCalls) - 1
	b.pending = append(b.pending, i)
	if tc.ToolCallID != "" {
		if _, dup := b.byID[tc.ToolCallID]; !dup {
			b.byID[tc.ToolCallID] = i
		}
	}
	return i
}

// commandCall is the call of a text action: the command's first word names
// it and the arguments are {"command": <the action as written>}.
func commandCall(stepID, callID, command string) model.ToolCall {
	args, _ := jsonx.Marshal(map[string]string{"command": command})
	name := "bash" // an empty command still runs in the shell
	if f := strings.Fields(command); len(f) > 0 {
		name = f[0]
	}
	return model.ToolCall{StepID: stepID, ToolCallID: callID, FunctionName: name, Arguments: model.StrAlways(string(args)), ArgumentsValid: true}
}

// answer sets call i's result, carried by step stepID.
func (b *builder) answer(i int, result *string, status, link, stepID string) {
	tc := &b.sl.ToolCalls[i]
	if result == nil {
		result = model.StrAlways("")
	}
	tc.Result, tc.ResultStatus, tc.ResultLink = result, status, link
	if stepID != tc.StepID {
		tc.ResultStepID = model.Str(stepID)
	}
	for k, p := range b.pending {
		if p == i {
			b.pending = append(b.pending[:k], b.pending[k+1:]...)
			break
		}
	}
}

// answerID answers the waiting call named id; false when there is none.
func (b *builder) answerID(id string, result *string, status, stepID string) bool {
	i, ok := b.byID[id]
	if !ok || b.sl.ToolCalls[i].ResultStatus != "" {
		return false
	}
	b.answer(i, result, status, model.LinkByID, stepID)
	return true
}

// answerNext answers the oldest waiting call of the latest turn; false
// when there is none.
func (b *builder) answerNext(result *string, status, stepID string) bool {
	if len(b.pending) == 0 {
		return false
	}
	b.answer(b.pending[0], result, status, linkByOrder, stepID)
	return true
}

// outcome applies the agent's exit status and submission: status and
// scores (docs/formats.md, SWE-agent "Outcome"). extraScores are other
// outcome fields the producer recorded (a reviewer's verdict).
func (b *builder) outcome(exitStatus, submission jsonx.RawMessage, extraScores map[string]jsonx.RawMessage) {
	r := &b.sl.Run
	exit := format.String(exitStatus)
	r.Status = exitRunStatus(exit)
	scores := map[string]jsonx.RawMessage{}
	for k, v := range extraScores {
		scores[k] = v
	}
	if _, ok := scores["exit_status"]; !ok && !format.IsNull(exitStatus) {
		scores["exit_status"] = exitStatus
	}
	if !format.IsNull(submission) {
		scores["submission"] = submission
	}
	// No reward: neither agent grades its submission (that is the
	// benchmark's evaluation, run later), and a submission is a status,
	// not a score (docs/query-model.md, reward).
	r.Scores = format.Extra(scores)
}

// exitRunStatus maps an exit status to runs.status: a plain submission
// completed the run; an automatic submission "submitted (exit_cost)" ends
// as its reason says; cost, step, time and context limits truncated it;
// cancel or interrupt cancelled it; anything else is an error.
func exitRunStatus(s string) string {
	l := strings.ToLower(strings.TrimSpace(s))
	if inner, ok := strings.CutPrefix(l, "submitted"); ok {
		inner = strings.Trim(strings.TrimSpace(inner), "()")
		if inner == "" {
			return model.StatusCompleted
		}
		l = inner
	}
	switch {
	case l == "":
		return model.StatusUnknown
	case strings.Contains(l, "limit"), strings.Contains(l, "cost"), strings.Contains(l, "time"),
		strings.Contains(l, "context"), strings.Contains(l, "exceeded"):
		return model.StatusTruncated
	case strings.Contains(l, "cancel"), strings.Contains(l, "interrupt"):
		return model.StatusCancelled
	}
	return model.StatusError
}

// finish warns about unanswered calls and finalizes the Storyline.
func (b *builder) finish() *model.Storyline {
	sl := b.sl
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		b.warn(fmt.Sprintf("%d tool call(s) have no result", missing))
	}
	sl.Run.StartedAt, sl.Run.EndedAt = format.StepTimeRange(sl.Steps)
	sl.Finalize(b.src.File)
	return sl
}

// eachObject calls fn for every object element of the array raw (named
// key in warnings): an element that is not an object is skipped, and a
// value that is not an array is reported; it returns false then. An absent
// value is no array and no warning.
func (b *builder) eachObject(raw jsonx.RawMessage, key, what string, fn func(i int, m map[string]jsonx.RawMessage)) bool {
	if format.IsNull(raw) {
		return false
	}
	elems, ok := format.SplitArray(raw)
	if !ok {
		b.warn(key+" is not an array; kept in runs.extra", key)
		return false
	}
	for i, e := range elems {
		if m := format.SplitObject(e); m != nil {
			fn(i, m)
		} else {
			b.warn(what+" is not a JSON object; skipped", key, i)
		}
	}
	return true
}

func mustJSON(v any) jsonx.RawMessage {
	raw, _ := jsonx.Marshal(v)
	return raw
}
