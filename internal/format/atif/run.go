package atif

import (
	"encoding/json"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// object is a decoded JSON object whose members are still raw: adapters pick
// the members they map and keep the rest, untouched, for the extra columns.
type object = map[string]json.RawMessage

// identity is where a Storyline sits in its source and run.
type identity struct {
	runID, sessionID, originalSessionID, trajectoryID, parentSessionID string
}

// rootKeys are the document members that map to run columns (or, for steps
// and subagent_trajectories, to other Storylines); the rest goes to extra.
var rootKeys = []string{
	"__header__", "schema_version", "session_id", "trajectory_id", "agent", "steps",
	"final_metrics", "continued_trajectory_ref", "subagent_trajectories",
}

// setRoot maps the document (or JSONL header) members onto the run row.
// inherited is the parent's normalized version, for embedded children that
// carry no label of their own. m is consumed.
func (b *builder) setRoot(m object, at loc, inherited string) {
	r := &b.sl.Run
	b.setVersion(m["schema_version"], at.at("schema_version"), inherited)
	if ref := format.String(m["continued_trajectory_ref"]); ref != "" {
		r.ContinuedTrajectoryRef = &ref
	}
	agentRest := b.setAgent(m["agent"], at.at("agent"))
	finalRest := b.setFinalMetrics(m["final_metrics"], at.at("final_metrics"))
	b.readRunTimes(m)
	for _, k := range rootKeys {
		delete(m, k)
	}
	putRaw(m, "agent", agentRest)
	putRaw(m, "final_metrics", finalRest)
	r.Extra = extra(m)
}

func (b *builder) setVersion(raw json.RawMessage, at loc, inherited string) {
	v := "unknown"
	switch {
	case format.IsNull(raw) && inherited != "":
		v = inherited
	case format.IsNull(raw):
		b.warn.add("version-missing", at, "schema_version is missing; read as ATIF of unknown version")
	default:
		s := format.String(raw)
		nv, ok := parseVersion(s)
		switch {
		case !ok:
			b.warn.add("version-bad", at, "schema_version "+quote(s)+" is not an ATIF version; read leniently")
		case !knownVersion(nv):
			v = nv
			b.warn.add("version-unknown", at, "schema_version "+quote(s)+" is newer than ATIF-v1.8; read as 1.8")
		default:
			v = nv
		}
	}
	b.sl.Run.SourceFormat = b.layout + "/" + v
}

// setAgent maps agent name/version/model and returns the unmapped rest.
func (b *builder) setAgent(raw json.RawMessage, at loc) json.RawMessage {
	if format.IsNull(raw) {
		b.warn.add("agent-missing", at, "agent is missing")
		return nil
	}
	a, ok := objectOf(raw)
	if !ok {
		b.warn.add("agent-bad", at, "agent is not an object; kept in extra")
		return raw
	}
	r := &b.sl.Run
	r.AgentName = model.Str(format.String(a["name"]))
	r.AgentVersion = model.Str(format.String(a["version"]))
	name := format.String(a["model_name"])
	delete(a, "model_name")
	if name == "" {
		if name = format.String(a["model"]); name != "" {
			b.warn.add("agent-model", at.at("model"), "agent.model read as agent.model_name")
			delete(a, "model")
		}
	}
	r.AgentModelName = model.Str(name)
	// Harbor writes a file-referenced subagent's parent into agent.extra; it
	// stays in extra too, but the column makes the link joinable.
	if r.ParentSessionID == nil {
		r.ParentSessionID = model.Str(format.String(member(a["extra"], "parent_session_id")))
	}
	delete(a, "name")
	delete(a, "version")
	return rest(a)
}

// setFinalMetrics maps the reported totals and returns the unmapped rest.
func (b *builder) setFinalMetrics(raw json.RawMessage, at loc) json.RawMessage {
	if format.IsNull(raw) {
		return nil
	}
	f, ok := objectOf(raw)
	if !ok {
		b.warn.add("final-metrics-bad", at, "final_metrics is not an object; kept in extra")
		return raw
	}
	r := &b.sl.Run
	r.ReportedPromptTokens = optInt(f, "total_prompt_tokens")
	r.ReportedCompletionTokens = optInt(f, "total_completion_tokens")
	r.ReportedCachedTokens = optInt(f, "total_cached_tokens")
	r.ReportedCostUSD = optFloat(f, "total_cost_usd")
	r.ReportedStepCount = optInt(f, "total_steps")
	return rest(f)
}

// readRunTimes keeps the run-level fallbacks used when no step has a
// timestamp: extra.start_time/end_time (loose producers) and the JSONL
// header's created_at, plus extra.success for the status.
func (b *builder) readRunTimes(m object) {
	if ex, ok := objectOf(m["extra"]); ok && ex != nil {
		b.startFallback, _ = format.Time(ex["start_time"])
		b.endFallback, _ = format.Time(ex["end_time"])
		if ok, valid := format.Bool(ex["success"]); valid {
			b.success = &ok
		}
	}
	if b.startFallback.IsZero() {
		b.startFallback, _ = format.Time(m["created_at"])
	}
}

// finishRun derives times and status once all steps are in.
func (b *builder) finishRun() {
	r := &b.sl.Run
	var first, last time.Time
	lastAgent := -1
	for i := range b.sl.Steps {
		st := &b.sl.Steps[i]
		if st.IsCopiedContext {
			continue // copied steps happened in an earlier segment
		}
		if st.Source == model.SourceAgent {
			lastAgent = i
		}
		if st.Timestamp == nil {
			continue
		}
		if first.IsZero() || st.Timestamp.Before(first) {
			first = *st.Timestamp
		}
		if last.IsZero() || st.Timestamp.After(last) {
			last = *st.Timestamp
		}
	}
	if first.IsZero() {
		first, last = b.startFallback, b.endFallback
	}
	r.StartedAt, r.EndedAt = model.Time(first), model.Time(last)
	if r.AgentModelName == nil {
		r.AgentModelName = model.Str(b.firstModel)
	}
	switch {
	case b.success != nil && *b.success:
		r.Status = model.StatusCompleted
	case b.success != nil:
		r.Status = model.StatusError
	case lastAgent >= 0 && b.callsCompletion(b.sl.Steps[lastAgent].StepID):
		r.Status = model.StatusCompleted
	default:
		r.Status = model.StatusUnknown
	}
}

// callsCompletion reports whether the step called a tool that ends the task
// (terminus-2 mark_task_complete, OpenHands finish).
func (b *builder) callsCompletion(stepID string) bool {
	for i := len(b.sl.ToolCalls) - 1; i >= 0; i-- {
		tc := &b.sl.ToolCalls[i]
		if tc.StepID == stepID && (tc.FunctionName == "mark_task_complete" || tc.FunctionName == "finish") {
			return true
		}
	}
	return false
}

// member returns key of the JSON object raw, or nil.
func member(raw json.RawMessage, key string) json.RawMessage {
	if format.IsNull(raw) {
		return nil
	}
	o, _ := objectOf(raw)
	return o[key]
}

// rest returns o as compact JSON, or nil when empty.
func rest(o object) json.RawMessage {
	if p := extra(o); p != nil {
		return json.RawMessage(*p)
	}
	return nil
}

// putRaw sets o[k] = v, or removes k when v is nil.
func putRaw(o object, k string, v json.RawMessage) {
	if v == nil {
		delete(o, k)
		return
	}
	o[k] = v
}

// optInt reads o[k] as an integer column and removes it when it mapped (or
// was null); a value that does not parse stays for extra.
func optInt(o object, k string) *int64 { return optNumber(o, k, format.Int) }

// optFloat is optInt for number columns.
func optFloat(o object, k string) *float64 { return optNumber(o, k, format.Float) }

func optNumber[T int64 | float64](o object, k string, parse func(json.RawMessage) (T, bool)) *T {
	if format.IsNull(o[k]) {
		delete(o, k)
		return nil
	}
	if v, ok := parse(o[k]); ok {
		delete(o, k)
		return &v
	}
	return nil
}

// quote quotes s for messages, bounded so a huge value cannot bloat them.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	b, _ := jsonx.Marshal(s)
	return string(b)
}
