package mcp

import (
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// describe_relations gives every column of the six relations, in the
// model's order, with the type and meaning docs/query-model.md gives it.
func TestRelationsHaveEveryColumnWithItsMeaning(t *testing.T) {
	rels := relations()
	if len(rels) != len(model.Relations) {
		t.Fatalf("%d relations, want %d", len(rels), len(model.Relations))
	}
	for i, r := range rels {
		cols := model.Schemas[r.Name]
		if r.Name != model.Relations[i] || len(r.Columns) != len(cols) {
			t.Fatalf("relation %s: %d columns, want %s with %d", r.Name, len(r.Columns), model.Relations[i], len(cols))
		}
		for j, c := range r.Columns {
			if c.Name != cols[j].Name || c.Type == "" || len(c.Meaning) < 5 {
				t.Errorf("%s.%s: %+v", r.Name, cols[j].Name, c)
			}
		}
	}
}
