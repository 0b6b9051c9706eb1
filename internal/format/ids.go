package format

import (
	"strconv"

	"github.com/pchronicle/pchronicle/internal/model"
)

// SessionIDs makes the session ids taken from the data unique within one
// file: a repeated id becomes id#n (the first n not taken), and the id as
// written is kept for runs.original_session_id.
type SessionIDs map[string]int

// Unique returns id the first time, else id#n with id as the original.
func (s SessionIDs) Unique(id string) (unique string, original *string) {
	n := s[id]
	s[id] = n + 1
	if n == 0 {
		return id, nil
	}
	for {
		n++
		cand := id + "#" + strconv.Itoa(n)
		if s[cand] == 0 {
			s[cand] = 1
			return cand, model.Str(id)
		}
	}
}

// Finish gives a Storyline that a RecordNormalizer built with its record's
// own id (empty when it has none: then it stays as it is) the session id
// unique within the file. It is called in file order.
func (s SessionIDs) Finish(sl *model.Storyline, id string) {
	if id == "" {
		return
	}
	if sid, orig := s.Unique(id); orig != nil {
		sl.Run.OriginalSessionID = orig
		sl.SetSessionID(sid)
	}
}
