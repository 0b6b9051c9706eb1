package storyline

import (
	"path/filepath"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Scratch writes the rows of Storylines as they arrive into runs, steps and
// tool_calls Parquet files in a directory, in arrival order, with no
// sorting, manifest, lock or fsync. It is for data whose lifetime is a
// process (a Snapshot's normalized peripheral files), where durability buys
// nothing and a store's publication protocol costs more than the
// normalization itself.
type Scratch struct {
	dir   string
	runs  *tableWriter[model.Run]
	steps *tableWriter[model.Step]
	calls *tableWriter[model.ToolCall]
}

// NewScratch creates the three files in dir, which must exist.
func NewScratch(dir string) (*Scratch, error) {
	s := &Scratch{dir: dir}
	var err error
	if s.runs, err = newTableWriter(s.Path(model.RelRuns), spillCodec, sizeRun, false); err != nil {
		return nil, err
	}
	if s.steps, err = newTableWriter(s.Path(model.RelSteps), spillCodec, sizeStep, false); err != nil {
		s.runs.abort()
		return nil, err
	}
	if s.calls, err = newTableWriter(s.Path(model.RelToolCalls), spillCodec, sizeToolCall, false); err != nil {
		s.runs.abort()
		s.steps.abort()
		return nil, err
	}
	return s, nil
}

// Path is the file of a relation (runs, steps or tool_calls).
func (s *Scratch) Path(rel string) string { return filepath.Join(s.dir, rel+".parquet") }

// Add writes one Storyline's rows. Not safe for concurrent use.
func (s *Scratch) Add(sl *model.Storyline) error {
	if err := s.runs.write(&sl.Run); err != nil {
		return err
	}
	for i := range sl.Steps {
		if err := s.steps.write(&sl.Steps[i]); err != nil {
			return err
		}
	}
	for i := range sl.ToolCalls {
		if err := s.calls.write(&sl.ToolCalls[i]); err != nil {
			return err
		}
	}
	return nil
}

// Close finishes the three files.
func (s *Scratch) Close() error {
	_, err1 := s.runs.close()
	_, err2 := s.steps.close()
	_, err3 := s.calls.close()
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Abort removes the three files.
func (s *Scratch) Abort() {
	s.runs.abort()
	s.steps.abort()
	s.calls.abort()
}
