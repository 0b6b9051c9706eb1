package atif

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// addObservation reads the step's observation and links its results to the
// tool calls sl.ToolCalls[first:]. Unmapped members stay in m["observation"].
// It reports whether the step had an observation. step locates the step.
func (b *builder) addObservation(idx int, m object, first int, step loc) bool {
	raw := m["observation"]
	if format.IsNull(raw) {
		delete(m, "observation")
		return false
	}
	at := step.at("observation")
	obs, ok := objectOf(raw)
	if !ok {
		b.warn.add("observation-bad", at, "observation is not an object; kept in extra")
		return true
	}
	stepID := b.sl.Steps[idx].StepID
	var results []result
	if rr, ok := obs["results"]; ok {
		list, ok := objectsOf(rr)
		if !ok {
			b.warn.add("results-bad", at.at("results"), "observation.results is not an array of objects; kept in extra")
			return true
		}
		delete(obs, "results")
		results = make([]result, 0, len(list))
		for j, r := range list {
			if r != nil {
				results = append(results, b.readResult(r, stepID, at.at("results", j)))
			}
		}
	} else if _, hasContent := obs["content"]; hasContent || obs["result"] != nil {
		results = []result{b.looseResult(obs, b.sl.Steps[idx].MessageValue, at)}
		obs = nil
	}
	putRaw(m, "observation", rest(obs))
	b.link(idx, first, results)
	return true
}

func (b *builder) readResult(r object, stepID string, at loc) result {
	res := result{callID: format.String(r["source_call_id"]), rest: r, at: at}
	if res.callID == "" {
		delete(r, "source_call_id")
	}
	if text, _, ok := format.Content(r["content"]); ok {
		res.text = &text
	}
	delete(r, "content")
	if refs := r["subagent_trajectory_ref"]; format.IsNull(refs) || b.addRefs(refs, stepID, at.at("subagent_trajectory_ref")) {
		delete(r, "subagent_trajectory_ref")
	}
	res.isErr, _ = format.Bool(member(r["extra"], "is_error"))
	return res
}

// looseResult reads the openagents tbench shape {type, content, result:
// {success, output|error}}, where the call id only appears in the step
// message "Tool result for <id>".
func (b *builder) looseResult(obs object, message *string, at loc) result {
	b.warn.add("loose-observation", at, "observation is {type,content,result} instead of {results:[...]}; read as one result")
	res := result{rest: obs, at: at}
	out, _ := objectOf(obs["result"])
	content := obs["content"]
	if format.IsNull(content) {
		content = out["output"]
		if format.IsNull(content) {
			content = out["error"]
		}
	}
	if text, _, ok := format.Content(content); ok {
		res.text = &text
	}
	if ok, valid := format.Bool(out["success"]); (valid && !ok) || !format.IsNull(out["error"]) {
		res.isErr = true
	}
	for _, k := range []string{"output", "error"} {
		if v, ok := out[k]; ok && res.text != nil && format.String(v) == *res.text {
			delete(out, k) // it only repeats content
		}
	}
	if out != nil {
		putRaw(obs, "result", rest(out))
	}
	res.callID = format.String(obs["source_call_id"])
	if res.callID == "" && message != nil {
		if id, ok := strings.CutPrefix(*message, "Tool result for "); ok {
			res.callID = strings.TrimSpace(id)
		}
	}
	delete(obs, "content")
	delete(obs, "source_call_id")
	return res
}

// addRefs records subagent refs as written; embedded refs are resolved to
// the child Storyline's session_id, file and session refs are not followed.
// It reports whether every ref mapped fully (nothing left for extra).
func (b *builder) addRefs(raw json.RawMessage, stepID string, at loc) bool {
	refs, ok := objectsOf(raw)
	if !ok {
		b.warn.add("refs-bad", at, "subagent_trajectory_ref is not an array of objects; kept in extra")
		return false
	}
	clean := true
	for i, ref := range refs {
		if ref == nil {
			continue
		}
		sr := model.SubagentRef{
			StepID:         stepID,
			TrajectoryID:   format.String(ref["trajectory_id"]),
			TrajectoryPath: format.String(ref["trajectory_path"]),
			SessionID:      format.String(ref["session_id"]),
		}
		switch child, ok := b.embedded[sr.TrajectoryID]; {
		case sr.TrajectoryID != "" && ok:
			sr.Embedded, sr.ChildSessionID = true, child
		case sr.TrajectoryID != "" && sr.TrajectoryPath == "":
			b.warn.add("ref-unresolved", at.at(i), "subagent ref trajectory_id "+quote(sr.TrajectoryID)+" matches no embedded trajectory")
		case sr.TrajectoryID == "" && sr.TrajectoryPath == "":
			b.warn.add("ref-session-only", at.at(i), "subagent ref has only a session_id (valid before ATIF 1.7); kept, not resolved")
		}
		for k := range ref {
			if k != "trajectory_id" && k != "trajectory_path" && k != "session_id" {
				clean = false
			}
		}
		b.refs = append(b.refs, sr)
	}
	return clean
}

// link attaches a step's results to the step's calls sl.ToolCalls[first:]:
// by source_call_id, or, for results without one, to every call that got no
// result by id ("ambiguous"). Results naming no call of this step are linked
// across steps in finish; the rest is the step's observation.
func (b *builder) link(idx, first int, results []result) {
	end := len(b.sl.ToolCalls)
	var ambiguous []result
	for _, r := range results {
		switch {
		case r.callID != "":
			if ci := b.callIn(r.callID, first, end); ci >= 0 {
				b.attach(ci, r, model.LinkByID, nil)
			} else {
				b.pending = append(b.pending, pendingResult{result: r, stepIdx: idx})
			}
		case end > first:
			ambiguous = append(ambiguous, r)
		default:
			b.toStep(idx, r)
		}
	}
	var targets []int
	for ci := first; ci < end && len(ambiguous) > 0; ci++ {
		if !b.calls[ci].hasIDResult {
			targets = append(targets, ci)
		}
	}
	for _, r := range ambiguous {
		if len(targets) == 0 {
			b.toStep(idx, r)
		}
		for _, ci := range targets {
			b.attach(ci, r, model.LinkAmbiguous, nil)
		}
	}
}

// callIn returns the call with tool_call_id id among sl.ToolCalls[lo:hi],
// preferring the first one that has no result yet, or -1. Indexes are
// ascending, so the scan stops below lo: a producer that reuses one id for
// every call stays linear.
func (b *builder) callIn(id string, lo, hi int) int {
	found, free := -1, -1
	ids := b.callsByID[id]
	for i := len(ids) - 1; i >= 0 && ids[i] >= lo; i-- {
		ci := ids[i]
		if ci >= hi {
			continue
		}
		found = ci
		if !b.calls[ci].hasIDResult {
			free = ci
		}
	}
	if free >= 0 {
		return free
	}
	return found
}

// resolvePending links results recorded in another step than their call
// (loose producers write them as system steps before the calling step).
func (b *builder) resolvePending() {
	for _, p := range b.pending {
		ci := b.callIn(p.callID, 0, len(b.sl.ToolCalls))
		if ci < 0 {
			b.warn.add("result-unlinked", p.at, "source_call_id "+quote(p.callID)+" names no tool call; kept as the step's observation")
			b.toStep(p.stepIdx, p.result)
			continue
		}
		b.warn.add("result-cross-step", p.at, "result for "+quote(p.callID)+" is recorded in another step than its call; linked by id")
		b.attach(ci, p.result, model.LinkByID, &b.sl.Steps[p.stepIdx].StepID)
	}
	b.pending = nil
}

func (b *builder) attach(ci int, r result, link string, resultStep *string) {
	tc, cm := &b.sl.ToolCalls[ci], &b.calls[ci]
	tc.Result = joinText(tc.Result, r.text)
	if r.isErr || tc.ResultStatus == model.ResultError {
		tc.ResultStatus = model.ResultError
	} else {
		tc.ResultStatus = model.ResultOK
	}
	if link == model.LinkByID {
		cm.hasIDResult = true
		tc.ResultLink = link
	} else if tc.ResultLink == "" {
		tc.ResultLink = link
	}
	if resultStep != nil {
		tc.ResultStepID = model.Str(*resultStep)
	}
	delete(r.rest, "source_call_id")
	if lo := rest(r.rest); lo != nil {
		cm.resultRest = append(cm.resultRest, lo)
	}
}

// toStep keeps a result that belongs to no call as the step's observation.
func (b *builder) toStep(idx int, r result) {
	st := &b.sl.Steps[idx]
	st.Observation = joinText(st.Observation, r.text)
	if lo := rest(r.rest); lo != nil {
		if b.stepRest == nil {
			b.stepRest = map[int][]json.RawMessage{}
		}
		b.stepRest[idx] = append(b.stepRest[idx], lo)
	}
}

// joinText appends add to a text column, one result per line.
func joinText(cur, add *string) *string {
	switch {
	case add == nil:
		return cur
	case cur == nil:
		s := *add
		return &s
	}
	s := *cur + "\n" + *add
	return &s
}

// finish links what is left, derives run columns and returns the
// finalized Storyline.
func (b *builder) finish(file string) *model.Storyline {
	b.resolvePending()
	for idx, list := range b.stepRest {
		st := &b.sl.Steps[idx]
		st.Extra = format.MergeExtra(st.Extra, "observation_results", rawArray(list))
	}
	for i := range b.sl.ToolCalls {
		cm := &b.calls[i]
		switch len(cm.resultRest) {
		case 0:
		case 1:
			cm.rest["result_extra"] = cm.resultRest[0]
		default:
			cm.rest["result_extra"] = rawArray(cm.resultRest)
		}
		b.sl.ToolCalls[i].Extra = extra(cm.rest)
	}
	if len(b.refs) > 0 {
		if data, err := jsonx.Marshal(b.refs); err == nil {
			s := string(data)
			b.sl.Run.SubagentRefs = &s
		}
	}
	b.finishRun()
	b.sl.Warnings = b.warn.done()
	b.sl.Finalize(file)
	return b.sl
}

func rawArray(list []json.RawMessage) json.RawMessage {
	out := []byte{'['}
	for i, v := range list {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
	}
	return append(out, ']')
}

// arrayLen counts the elements of a JSON array without decoding them; ok is
// false when raw is not an array.
func arrayLen(raw json.RawMessage) (n int, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' {
		return 0, false
	}
	// Token ids and logprobs are flat number arrays: count commas with the
	// vectorized byte functions instead of walking every byte.
	inner := raw[1 : len(raw)-1]
	if raw[len(raw)-1] == ']' && bytes.IndexByte(inner, '"') < 0 && bytes.IndexByte(inner, '[') < 0 && bytes.IndexByte(inner, '{') < 0 {
		if len(bytes.TrimSpace(inner)) == 0 {
			return 0, true
		}
		return bytes.Count(inner, []byte{','}) + 1, true
	}
	depth, inStr, esc, empty := 0, false, false, true
	for _, c := range raw[1:] {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			n++
		}
		if depth >= 0 && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			empty = false
		}
	}
	if empty {
		return 0, true
	}
	return n + 1, true
}
