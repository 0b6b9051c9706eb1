package testutil

import (
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// BySession returns the Storyline of sls with the given session_id,
// failing the test when there is none.
func BySession(t testing.TB, sls []*model.Storyline, session string) *model.Storyline {
	t.Helper()
	for _, sl := range sls {
		if sl.Run.SessionID == session {
			return sl
		}
	}
	t.Fatalf("no Storyline %q among %d", session, len(sls))
	return nil
}
