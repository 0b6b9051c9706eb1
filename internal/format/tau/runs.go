package tau

import (
	"strconv"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// result maps one τ-bench EnvRunResult (at ptr) to a Storyline.
func result(src format.Source, obj map[string]jsonx.RawMessage, ptr string, ids format.SessionIDs) *model.Storyline {
	sl := &model.Storyline{Run: model.Run{SourceFormat: format.TauBench + "/" + LayoutResults}}
	run := &sl.Run
	task := string(format.CompactJSON(obj["task_id"]))
	if s, ok := format.AsString(obj["task_id"]); ok {
		task = s
	}
	trial := string(format.CompactJSON(obj["trial"]))
	if format.IsNull(obj["trial"]) {
		trial = "0"
	}
	id, orig := ids.Unique("task-" + task + "-trial-" + trial)
	run.RunID, run.SessionID, run.OriginalSessionID = id, id, orig
	run.AgentName = model.Str(agentTauBench)
	if r, ok := format.Float(obj["reward"]); ok {
		run.Reward = model.Float(r)
	} else if !format.IsNull(obj["reward"]) {
		sl.Warnings = append(sl.Warnings, model.Warning{Pointer: ptr + "/reward", Message: "reward is not a number; ignored"})
	}
	info := format.SplitObject(format.AsObject(obj["info"]))
	_, failed := info["error"]
	rewardInfo, graded := info["reward_info"]
	graded = graded && !format.IsNull(rewardInfo)
	traj, _ := format.SplitArray(obj["traj"])
	switch {
	case failed:
		run.Status = model.StatusError // run.py caught an exception and wrote reward 0
	case graded:
		run.Status = model.StatusCompleted // the environment said done and graded the run
	case len(traj) > 0:
		run.Status = model.StatusTruncated // the agent ran out of steps before the task was done
	}
	scores := map[string]jsonx.RawMessage{}
	if graded {
		format.EachMember(rewardInfo, func(k string, v []byte) { scores[k] = v })
	}
	if failed {
		scores["error"] = info["error"]
	}
	if len(scores) > 0 {
		run.Scores = format.Extra(scores)
	}
	add := map[string]jsonx.RawMessage{"task_id": obj["task_id"], "trial": obj["trial"]}
	if rest := extra(info, "reward_info"); rest != nil {
		add["info"] = jsonx.RawMessage(*rest)
	}
	run.Extra = format.MergeExtras(extra(obj, "task_id", "reward", "info", "traj", "trial"), withoutNull(add))
	b := newBuilder(sl, nil)
	b.textErrors = true
	for i, e := range traj {
		m := format.SplitObject(e)
		if m == nil {
			b.warn(ptr+format.Pointer("traj", i), "message is not an object; skipped")
			continue
		}
		b.message(m, ptr+format.Pointer("traj", i), strconv.Itoa(i))
	}
	b.finish()
	sl.Finalize(src.File)
	return sl
}

// runInfo is what a τ² results document says of all its simulations.
type runInfo struct {
	agent, agentModel *string
	extra             map[string]jsonx.RawMessage
}

func newRunInfo(raw jsonx.RawMessage) runInfo {
	info := format.SplitObject(format.AsObject(raw))
	agent := format.SplitObject(format.AsObject(info["agent_info"]))
	user := format.SplitObject(format.AsObject(info["user_info"]))
	env := format.SplitObject(format.AsObject(info["environment_info"]))
	var ri runInfo
	if s, ok := format.AsString(agent["implementation"]); ok && s != "" {
		ri.agent = model.Str(s)
	}
	if s, ok := format.AsString(agent["llm"]); ok && s != "" {
		ri.agentModel = model.Str(s)
	}
	ri.extra = withoutNull(map[string]jsonx.RawMessage{
		"git_commit": info["git_commit"], "user_implementation": user["implementation"], "user_model": user["llm"],
		"domain": env["domain_name"], "agent_llm_args": agent["llm_args"],
	})
	return ri
}

// simulationKnown are the SimulationRun members mapped to columns.
var simulationKnown = []string{"id", "start_time", "end_time", "termination_reason", "agent_cost", "reward_info", "messages", "ticks"}

// simulation maps one τ² SimulationRun (at ptr) to a Storyline.
func simulation(src format.Source, obj map[string]jsonx.RawMessage, ptr string, ri runInfo, layout string, ids format.SessionIDs) *model.Storyline {
	sl := &model.Storyline{Run: model.Run{SourceFormat: format.TauBench + "/" + layout}}
	run := &sl.Run
	id, _ := format.AsString(obj["id"])
	if id == "" {
		id = format.FileID(src, "simulation")
		if ptr != "" {
			id = "simulation-" + ptr[len("/simulations/"):]
		}
		sl.Warnings = append(sl.Warnings, model.Warning{Pointer: ptr + "/id", Message: "the simulation has no id; named after its place"})
	}
	id, run.OriginalSessionID = ids.Unique(id)
	run.RunID, run.SessionID = id, id
	run.AgentName, run.AgentModelName = ri.agent, ri.agentModel
	if run.AgentName == nil {
		run.AgentName = model.Str(agentTau2Fallback)
	}
	if t, ok := format.Time(obj["start_time"]); ok {
		run.StartedAt = model.Time(t)
	}
	if t, ok := format.Time(obj["end_time"]); ok {
		run.EndedAt = model.Time(t)
	}
	reason, _ := format.AsString(obj["termination_reason"])
	run.Status = terminationStatus(reason)
	if c, ok := format.Float(obj["agent_cost"]); ok {
		run.ReportedCostUSD = model.Float(c)
	}
	if rw := format.SplitObject(format.AsObject(obj["reward_info"])); rw != nil {
		if r, ok := format.Float(rw["reward"]); ok {
			run.Reward = model.Float(r)
		}
		run.Scores = format.Extra(rw)
	}
	add := map[string]jsonx.RawMessage{"termination_reason": obj["termination_reason"]}
	for k, v := range ri.extra {
		add[k] = v
	}
	run.Extra = format.MergeExtras(extra(obj, simulationKnown...), withoutNull(add))
	b := newBuilder(sl, ri.agentModel)
	if msgs, ok := format.SplitArray(obj["messages"]); ok {
		for i, e := range msgs {
			m := format.SplitObject(e)
			if m == nil {
				b.warn(ptr+format.Pointer("messages", i), "message is not an object; skipped")
				continue
			}
			b.message(m, ptr+format.Pointer("messages", i), strconv.Itoa(i))
		}
	} else if ticks, ok := format.SplitArray(obj["ticks"]); ok {
		b.ticks(ticks, ptr+"/ticks")
	}
	b.finish()
	if run.StartedAt == nil || run.EndedAt == nil {
		first, last := format.StepTimeRange(sl.Steps)
		if run.StartedAt == nil {
			run.StartedAt = first
		}
		if run.EndedAt == nil {
			run.EndedAt = last
		}
	}
	sl.Finalize(src.File)
	return sl
}

// terminationStatus maps τ²'s TerminationReason to runs.status: the user
// or the agent ending the conversation completes it; a step, time or
// context limit truncates it; an error of either side or of the harness is
// an error.
func terminationStatus(reason string) string {
	switch reason {
	case "user_stop", "agent_stop":
		return model.StatusCompleted
	case "max_steps", "timeout", "context_window_exceeded":
		return model.StatusTruncated
	case "too_many_errors", "agent_error", "user_error", "infrastructure_error", "unexpected_error":
		return model.StatusError
	}
	return model.StatusUnknown
}

// withoutNull drops the absent and null members of m.
func withoutNull(m map[string]jsonx.RawMessage) map[string]jsonx.RawMessage {
	for k, v := range m {
		if len(v) == 0 || format.IsNull(v) {
			delete(m, k)
		}
	}
	return m
}
