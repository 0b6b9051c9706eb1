package storyline

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Scratch writes the rows of Storylines as they arrive into Parquet files
// of some of the relations runs, steps and tool_calls in a directory, in
// arrival order, with no sorting, manifest, lock or fsync. It is for data
// whose lifetime is a process (a Snapshot's normalized peripheral files),
// where durability buys nothing and a store's publication protocol costs
// more than the normalization itself. Each relation is its own file
// (Path), so a query writes only the relations it reads.
type Scratch struct {
	dir   string
	runs  *tableWriter[model.Run]
	steps *tableWriter[model.Step]
	calls *tableWriter[model.ToolCall]
	lean  map[string]bool // relations written lean (Lean)
}

// A part is what a Scratch writes of one relation: the relation whole, or
// lean, with its free-text columns NULL (model.Column.FreeText) for a query
// that reads none of them, so that a count of tool calls never encodes
// their arguments and results. A lean file has the relation's schema.
const leanSuffix = "#lean"

// Lean names the lean part of a relation.
func Lean(rel string) string { return rel + leanSuffix }

// PartRelation returns the relation of a part and whether it is lean.
func PartRelation(part string) (rel string, lean bool) { return strings.CutSuffix(part, leanSuffix) }

// Parts lists every part: the relations in table order, then their lean
// parts.
var Parts = append(slices.Clone(Tables), Lean(model.RelRuns), Lean(model.RelSteps), Lean(model.RelToolCalls))

// NewScratch creates the files of parts (every relation whole when none
// are given) in dir, which must exist; a relation may be given once. Scratch
// sets written at the same time share the memory of their buffered row
// groups: concurrent says how many there are (1: this one alone), and each
// cuts groups that much smaller.
func NewScratch(dir string, concurrent int, parts ...string) (*Scratch, error) {
	s := &Scratch{dir: dir, lean: map[string]bool{}}
	rels := make([]string, len(parts))
	for i, p := range parts {
		var lean bool
		rels[i], lean = PartRelation(p)
		s.lean[rels[i]] = lean
	}
	want := func(rel string) bool { return len(rels) == 0 || slices.Contains(rels, rel) }
	var err error
	if want(model.RelRuns) {
		s.runs, err = newTableWriter(s.Path(model.RelRuns), spillCodec, sizeRun, false)
	}
	if err == nil && want(model.RelSteps) {
		s.steps, err = newTableWriter(s.Path(model.RelSteps), spillCodec, sizeStep, false)
	}
	if err == nil && want(model.RelToolCalls) {
		s.calls, err = newTableWriter(s.Path(model.RelToolCalls), spillCodec, sizeToolCall, false)
	}
	if err != nil {
		s.Abort()
		return nil, err
	}
	share := max(tempGroupBytes/int64(max(concurrent, 1)), minTempGroupBytes)
	if s.runs != nil {
		s.runs.groupMax = share
	}
	if s.steps != nil {
		s.steps.groupMax = share
	}
	if s.calls != nil {
		s.calls.groupMax = share
	}
	return s, nil
}

// Path is the file of a relation (runs, steps or tool_calls).
func (s *Scratch) Path(rel string) string { return filepath.Join(s.dir, rel+".parquet") }

// Relations lists the relations the Scratch writes, in table order.
func (s *Scratch) Relations() []string {
	var rels []string
	if s.runs != nil {
		rels = append(rels, model.RelRuns)
	}
	if s.steps != nil {
		rels = append(rels, model.RelSteps)
	}
	if s.calls != nil {
		rels = append(rels, model.RelToolCalls)
	}
	return rels
}

// Add writes one Storyline's rows of the Scratch's relations, or a part's
// (model.Storyline.More: its run row comes with the last part). Not safe
// for concurrent use.
func (s *Scratch) Add(sl *model.Storyline) error {
	if s.runs != nil && !sl.More {
		r := &sl.Run
		if s.lean[model.RelRuns] {
			r = leanRun(*r)
		}
		if err := s.runs.write(r); err != nil {
			return err
		}
	}
	if s.steps != nil {
		lean := s.lean[model.RelSteps]
		for i := range sl.Steps {
			r := &sl.Steps[i]
			if lean {
				r = leanStep(*r)
			}
			if err := s.steps.write(r); err != nil {
				return err
			}
		}
	}
	if s.calls != nil {
		lean := s.lean[model.RelToolCalls]
		for i := range sl.ToolCalls {
			r := &sl.ToolCalls[i]
			if lean {
				r = leanToolCall(*r)
			}
			if err := s.calls.write(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// leanRun, leanStep and leanToolCall are copies of a row without its
// free-text columns.
func leanRun(r model.Run) *model.Run {
	r.Scores, r.SubagentRefs, r.Extra = nil, nil, nil
	return &r
}

func leanStep(r model.Step) *model.Step {
	r.MessageValue, r.Reasoning, r.Observation, r.Extra = nil, nil, nil, nil
	return &r
}

func leanToolCall(r model.ToolCall) *model.ToolCall {
	r.Arguments, r.Result, r.Extra = nil, nil, nil
	return &r
}

// Close finishes the files.
func (s *Scratch) Close() error {
	var errs []error
	if s.runs != nil {
		_, err := s.runs.close()
		errs = append(errs, err)
	}
	if s.steps != nil {
		_, err := s.steps.close()
		errs = append(errs, err)
	}
	if s.calls != nil {
		_, err := s.calls.close()
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Abort removes the files.
func (s *Scratch) Abort() {
	if s.runs != nil {
		s.runs.abort()
	}
	if s.steps != nil {
		s.steps.abort()
	}
	if s.calls != nil {
		s.calls.abort()
	}
}
