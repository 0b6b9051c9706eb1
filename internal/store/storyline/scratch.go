package storyline

import (
	"errors"
	"path/filepath"
	"slices"

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
}

// NewScratch creates the files of rels (all three relations when none are
// given) in dir, which must exist. Scratch sets written at the same time
// share the memory of their buffered row groups: concurrent says how many
// there are (1: this one alone), and each cuts groups that much smaller.
func NewScratch(dir string, concurrent int, rels ...string) (*Scratch, error) {
	s := &Scratch{dir: dir}
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
		if err := s.runs.write(&sl.Run); err != nil {
			return err
		}
	}
	if s.steps != nil {
		for i := range sl.Steps {
			if err := s.steps.write(&sl.Steps[i]); err != nil {
				return err
			}
		}
	}
	if s.calls != nil {
		for i := range sl.ToolCalls {
			if err := s.calls.write(&sl.ToolCalls[i]); err != nil {
				return err
			}
		}
	}
	return nil
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
