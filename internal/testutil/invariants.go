package testutil

import (
	"errors"

	"github.com/pchronicle/pchronicle/internal/model"
)

// CheckStoryline asserts the invariants every emitted Storyline keeps, for
// the adapters' fuzz targets: unique step ids, every step with a source and
// a kind, calls and results on existing steps, a run with its identity and
// status.
func CheckStoryline(sl *model.Storyline) error {
	steps := map[string]bool{}
	for _, st := range sl.Steps {
		if steps[st.StepID] {
			return errors.New("duplicate step_id " + st.StepID)
		}
		steps[st.StepID] = true
		if st.Source == "" || st.MessageKind == "" {
			return errors.New("step without source or kind")
		}
	}
	for _, tc := range sl.ToolCalls {
		if !steps[tc.StepID] || (tc.ResultStepID != nil && !steps[*tc.ResultStepID]) {
			return errors.New("tool call refers to a missing step")
		}
	}
	if sl.Run.SessionID == "" || sl.Run.RunID == "" || sl.Run.Status == "" {
		return errors.New("run without identity or status")
	}
	return nil
}
