package testutil

import (
	"fmt"

	"github.com/pchronicle/pchronicle/internal/model"
)

// AssembleParts joins the parts of each run (model.Storyline.More) into the
// whole Storyline, in the order of the runs' last parts, which is the order
// an adapter emits whole Storylines in. It fails when a run's parts are not
// numbered on from each other or a part follows its run's last.
func AssembleParts(parts []*model.Storyline) ([]*model.Storyline, error) {
	open := map[string]*model.Storyline{}
	var out []*model.Storyline
	for i, p := range parts {
		id := p.Run.SessionID
		acc := open[id]
		if acc == nil {
			acc = &model.Storyline{}
		}
		if err := continues(acc, p); err != nil {
			return nil, fmt.Errorf("part %d of %q: %w", i, id, err)
		}
		acc.Steps = append(acc.Steps, p.Steps...)
		acc.ToolCalls = append(acc.ToolCalls, p.ToolCalls...)
		acc.Warnings = append(acc.Warnings, p.Warnings...)
		if p.More {
			open[id] = acc
			continue
		}
		delete(open, id)
		acc.Run = p.Run
		out = append(out, acc)
	}
	for id := range open {
		return nil, fmt.Errorf("run %q has no last part", id)
	}
	return out, nil
}

// continues checks that p's rows are numbered on from acc's.
func continues(acc, p *model.Storyline) error {
	for j := range p.Steps {
		if want := int64(len(acc.Steps) + j); p.Steps[j].StepIndex != want {
			return fmt.Errorf("step %q has step_index %d, want %d", p.Steps[j].StepID, p.Steps[j].StepIndex, want)
		}
	}
	for j := range p.ToolCalls {
		if want := int64(len(acc.ToolCalls) + j); p.ToolCalls[j].CallIndex != want {
			return fmt.Errorf("tool call %q has call_index %d, want %d", p.ToolCalls[j].ToolCallID, p.ToolCalls[j].CallIndex, want)
		}
	}
	return nil
}
