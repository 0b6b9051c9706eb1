// Package tau reads the results of τ-bench and τ²-bench, Sierra's
// benchmarks of tool-calling agents talking with a simulated user: the
// τ-bench results file (a JSON array of {task_id, reward, info, traj,
// trial}, written by tau_bench/run.py), the τ²-bench results document
// ({timestamp, info, tasks, simulations}) and the single simulation file
// of τ²'s directory layout (results.json beside simulations/<id>.json).
// Each element or simulation is one Storyline. docs/formats.md (τ-bench
// section) documents the mapping field by field.
package tau

import (
	"context"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Layouts; runs.source_format is "tau-bench/<layout>".
const (
	LayoutResults     = "results"         // τ-bench: [{task_id, reward, info, traj, trial}]
	LayoutTau2        = "tau2-results"    // τ²-bench: {timestamp, info, tasks, simulations}
	LayoutTau2Sim     = "tau2-simulation" // τ²-bench: one simulation {id, task_id, …, messages | ticks}
	agentTauBench     = "tau-bench"
	agentTau2Fallback = "tau2-bench"
)

type adapter struct{}

// New returns the τ-bench / τ²-bench adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.TauBench }

// Detect claims only what τ's own data models write:
//   - an array whose first element has task_id, reward, info and traj
//     (tau_bench.types.EnvRunResult);
//   - an object with timestamp, info and tasks whose info names the run's
//     git_commit, user_info and agent_info (tau2.data_model.simulation.Results);
//     task definitions alone (tasks.json, an array) never match;
//   - an object with id, task_id, start_time, end_time and
//     termination_reason (a SimulationRun).
func (adapter) Detect(p *format.Probe) (string, bool) {
	f := p.First
	switch p.Shape {
	case format.ShapeArray:
		if f.Has("task_id") && f.Has("reward") && f.Has("info") && f.Has("traj") {
			return LayoutResults, true
		}
	case format.ShapeObject:
		if f.Has("timestamp") && f.Has("info") && f.Has("tasks") {
			info := f.Sub("info")
			if info.Has("git_commit") && info.Has("user_info") && info.Has("agent_info") {
				return LayoutTau2, true
			}
		}
		if f.Has("id") && f.Has("task_id") && f.Has("start_time") && f.Has("end_time") && f.Has("termination_reason") {
			return LayoutTau2Sim, true
		}
	}
	return "", false
}

func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	switch layout {
	case LayoutResults, LayoutTau2, LayoutTau2Sim:
	default:
		return fmt.Errorf("tau-bench: unknown layout %q", layout)
	}
	data, release, err := format.ReadWhole(ctx, r, src, "tau-bench")
	if err != nil {
		return err
	}
	defer release()
	if !src.Valid && !jsonx.Valid(data) {
		var v jsonx.RawMessage
		return format.DocumentError(src, data, "tau-bench", jsonx.Unmarshal(data, &v))
	}
	ids := format.SessionIDs{}
	switch layout {
	case LayoutResults:
		elems, ok := format.SplitArray(data)
		if !ok {
			return format.Errorf(src, 0, "", "tau-bench: the results file is not a JSON array")
		}
		for i, e := range elems {
			if err := ctx.Err(); err != nil {
				return err
			}
			obj := format.SplitObject(e)
			if obj == nil {
				return format.Errorf(src, 0, format.Pointer(i), "tau-bench: result is not an object")
			}
			if err := emit(result(src, obj, format.Pointer(i), ids)); err != nil {
				return err
			}
		}
		return nil
	case LayoutTau2:
		top := format.SplitObject(data)
		if top == nil {
			return format.Errorf(src, 0, "", "tau-bench: the results document is not a JSON object")
		}
		run := newRunInfo(top["info"])
		sims, ok := format.SplitArray(top["simulations"])
		if !ok && !format.IsNull(top["simulations"]) {
			return format.Errorf(src, 0, "/simulations", "tau-bench: simulations is not an array")
		}
		// A results.json of the directory layout has no simulations: they
		// are the simulations/<id>.json files beside it, each read alone.
		for i, e := range sims {
			if err := ctx.Err(); err != nil {
				return err
			}
			obj := format.SplitObject(e)
			if obj == nil {
				return format.Errorf(src, 0, format.Pointer("simulations", i), "tau-bench: simulation is not an object")
			}
			if err := emit(simulation(src, obj, format.Pointer("simulations", i), run, LayoutTau2, ids)); err != nil {
				return err
			}
		}
		return nil
	default:
		obj := format.SplitObject(data)
		if obj == nil {
			return format.Errorf(src, 0, "", "tau-bench: the simulation is not a JSON object")
		}
		return emit(simulation(src, obj, "", runInfo{}, LayoutTau2Sim, ids))
	}
}
