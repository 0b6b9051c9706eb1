package engine

import (
	"context"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

func TestZZProf(t *testing.T) {
	ctx := context.Background()
	for i := 0; i < 8; i++ {
		snap, err := catalog.Build(ctx, []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: "/tmp/pchronicle-bench-catalog/ds-2000"}}, catalog.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		e := New(snap, parser, true)
		wide := `SELECT source, count(*) AS n, count(DISTINCT session_id) AS sessions, sum(length(message_value)) AS chars FROM steps GROUP BY source ORDER BY source`
		if _, err := e.Query(ctx, wide); err != nil {
			t.Fatal(err)
		}
		e.Close()
		snap.Close()
	}
}
