package mcp

import (
	"strings"

	"github.com/pchronicle/pchronicle/docs"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Column is one column of a relation, with its meaning.
type Column struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Meaning string `json:"meaning"`
}

// Relation is one of the six relations every Dataset schema holds.
type Relation struct {
	Name    string   `json:"name"`
	Columns []Column `json:"columns"`
}

// relations reads the relations' columns and meanings from the query
// model's documentation (docs/query-model.md): a "## <relation>" heading,
// then a table of | `column` | type | meaning |. The columns are the
// model's, in its order; a column the page does not describe (which its
// own test forbids) has an empty meaning.
func relations() []Relation {
	meanings := map[string]map[string]Column{}
	var rel string
	for line := range strings.Lines(docs.QueryModel) {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "## "); ok {
			rel = strings.TrimSpace(name)
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if rel == "" || len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if meanings[rel] == nil {
			meanings[rel] = map[string]Column{}
		}
		meanings[rel][name] = Column{Name: name, Type: strings.TrimSpace(cells[1]), Meaning: strings.TrimSpace(strings.Join(cells[2:], "|"))}
	}
	var out []Relation
	for _, r := range model.Relations {
		rl := Relation{Name: r}
		for _, c := range model.Schemas[r] {
			col, ok := meanings[r][c.Name]
			if !ok {
				col = Column{Name: c.Name, Type: c.SQLType}
			}
			rl.Columns = append(rl.Columns, col)
		}
		out = append(out, rl)
	}
	return out
}
