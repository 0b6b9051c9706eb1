package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/pchronicle/pchronicle/internal/engine"
)

// GET /api/storyline/text downloads one body of one step whole, as plain
// text: the message, reasoning or observation of step step, or the
// arguments or result of its call call_index. The Explorer shows bodies cut
// to a preview with their true size; this is its "download" for a body of
// any size, which the page never has to hold.

func (s *Server) storylineText(w http.ResponseWriter, r *http.Request, g Generation) error {
	key, err := storylineKey(r, g)
	if err != nil {
		return err
	}
	step, err := intParam(r, "step", -1, 0, 1<<62)
	if err != nil {
		return err
	}
	if step < 0 {
		return badRequest("parameter step (a step_index) is required")
	}
	field := r.URL.Query().Get("field")
	callIndex, err := intParam(r, "call_index", -1, 0, 1<<62)
	if err != nil {
		return err
	}
	bodies, err := g.StorylineReader().StepBodies(r.Context(), key, step, 1, 0)
	if err != nil {
		return err
	}
	if len(bodies) == 0 || bodies[0].StepIndex != step {
		return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: fmt.Sprintf("%s has no step %d", key, step)}
	}
	t, err := bodyText(&bodies[0], field, callIndex)
	if err != nil {
		return err
	}
	if t == nil {
		return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: fmt.Sprintf("step %d of %s has no %s", step, key, field)}
	}
	name := fmt.Sprintf("%s-step%d-%s.txt", safeFileName(key.SessionID), step, field)
	if callIndex >= 0 {
		name = fmt.Sprintf("%s-step%d-call%d-%s.txt", safeFileName(key.SessionID), step, callIndex, field)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Write([]byte(t.Value))
	return nil
}

// bodyText picks one body of a step: a step field, or a field of one of
// the calls it made or whose results it carries.
func bodyText(b *engine.StepBody, field string, callIndex int64) (*engine.Text, error) {
	switch field {
	case "message", "reasoning", "observation":
		if callIndex >= 0 {
			return nil, badRequest("parameter call_index goes with field arguments or result, not %s", field)
		}
		return map[string]*engine.Text{"message": b.Message, "reasoning": b.Reasoning, "observation": b.Observation}[field], nil
	case "arguments", "result":
		if callIndex < 0 {
			return nil, badRequest("parameter call_index is required with field %s", field)
		}
		for _, calls := range [][]engine.CallBody{b.Calls, b.ResultsOf} {
			for i := range calls {
				if calls[i].CallIndex == callIndex {
					if field == "arguments" {
						return calls[i].Arguments, nil
					}
					return calls[i].Result, nil
				}
			}
		}
		return nil, &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: fmt.Sprintf("step %d has no call %d", b.StepIndex, callIndex)}
	}
	return nil, badRequest("parameter field=%q: want message, reasoning, observation, arguments or result", field)
}

// safeFileName keeps a name to printable ASCII that no header or file
// system reads specially.
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || strings.ContainsRune(`"\/;:*?<>|`, r) {
			return '_'
		}
		return r
	}, s)
}
