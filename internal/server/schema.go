package server

import (
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/docs"
)

// The relations a query reads, with each column's type and meaning as
// docs/query-model.md states them: the SQL console's schema browser shows
// them.

// schemaRelations are the relations of a Dataset, in the order the docs
// give them.
var schemaRelations = []string{"runs", "steps", "tool_calls", "events", "sources", "projections"}

type schemaColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

type schemaRelation struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Columns     []schemaColumn `json:"columns"`
}

var (
	columnRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([A-Z][A-Z0-9_]*(?:\\[\\])?(?: \\(JSON\\))?) \\| (.*?) \\|\\s*$")
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// documentedSchema reads the relations out of the query model, once.
var documentedSchema = sync.OnceValue(func() []schemaRelation { return parseSchema(docs.QueryModel) })

// parseSchema finds each relation's "## name" section and its column
// table; the section's first paragraph describes the relation.
func parseSchema(md string) []schemaRelation {
	sections := map[string]string{}
	for _, part := range strings.Split(md, "\n## ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		sections[strings.TrimSpace(name)] = body
	}
	out := make([]schemaRelation, 0, len(schemaRelations))
	for _, name := range schemaRelations {
		body, ok := sections[name]
		if !ok {
			continue
		}
		rel := schemaRelation{Name: name, Description: plainText(firstParagraph(body))}
		for _, m := range columnRow.FindAllStringSubmatch(body, -1) {
			rel.Columns = append(rel.Columns, schemaColumn{Name: m[1], Type: m[2], Description: plainText(m[3])})
		}
		out = append(out, rel)
	}
	return out
}

func firstParagraph(s string) string {
	p, _, _ := strings.Cut(strings.TrimSpace(s), "\n\n")
	return strings.Join(strings.Fields(p), " ")
}

// plainText drops Markdown links' targets and code marks.
func plainText(s string) string {
	return strings.ReplaceAll(mdLink.ReplaceAllString(s, "$1"), "`", "")
}

func (s *Server) schema(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"relations": documentedSchema()})
	return nil
}
