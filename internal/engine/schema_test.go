package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// testdata/store-schema-v1 is a Storyline store that a build at schema
// version 1 imported from examples/trajectories: its runs table has no
// reward and scores columns. It must stay readable, with those columns
// NULL, through SQL and through the Storyline reader.
func TestStoreOfOlderSchemaReadsAddedColumnsAsNull(t *testing.T) {
	snap, e := open(t, "testdata/store-schema-v1", catalog.DefaultOptions())
	res := mustQuery(t, e, "SELECT count(*), count(reward), count(scores), sum(step_count), sum(tool_call_count) FROM runs")
	if got, want := fmt.Sprint(res.Rows[0]), "[5 0 0 26 9]"; got != want {
		t.Fatalf("runs of the v1 store: got %s, want %s", got, want)
	}
	res = mustQuery(t, e, "SELECT _file_, session_id FROM runs ORDER BY 1, 2 LIMIT 1")
	file, session := res.Rows[0][0].(string), res.Rows[0][1].(string)
	sl, err := NewReader(snap, LimitsFrom(snap.Options)).LoadStoryline(context.Background(), StorylineKey{catalog.DefaultAlias, ".", session})
	if err != nil {
		t.Fatalf("LoadStoryline(%s, %s): %v", file, session, err)
	}
	if sl.Run.Reward != nil || sl.Run.Scores != nil || len(sl.Steps) == 0 {
		t.Fatalf("Storyline of the v1 store: reward %v, scores %v, %d steps; want NULL, NULL and its steps", sl.Run.Reward, sl.Run.Scores, len(sl.Steps))
	}
}
