package format

import "github.com/pchronicle/pchronicle/internal/model"

// Outcome is what a file beside a trajectory records about the run it
// belongs to (a Harbor trial's result.json for the trial's trajectory):
// its evaluation outcome and the totals the harness reported. Nil fields
// are unknown.
type Outcome struct {
	// Source names the file the outcome was read from, for warnings.
	Source string
	Reward *float64
	// Scores is a JSON object: every score recorded, plus the exception
	// the run raised, if any.
	Scores *string
	// Reported totals, as the harness counted them.
	PromptTokens, CompletionTokens, CachedTokens *int64
	CostUSD                                      *float64
	Warnings                                     []model.Warning
}

// Apply fills the columns of run that the Storyline's own file left NULL:
// what a trajectory records about itself is never overwritten.
func (o *Outcome) Apply(run *model.Run) {
	fill := func(dst **int64, v *int64) {
		if *dst == nil {
			*dst = v
		}
	}
	if run.Reward == nil && run.Scores == nil {
		run.Reward, run.Scores = o.Reward, o.Scores
	}
	fill(&run.ReportedPromptTokens, o.PromptTokens)
	fill(&run.ReportedCompletionTokens, o.CompletionTokens)
	fill(&run.ReportedCachedTokens, o.CachedTokens)
	if run.ReportedCostUSD == nil {
		run.ReportedCostUSD = o.CostUSD
	}
}
