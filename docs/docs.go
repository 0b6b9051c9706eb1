// Package docs holds the user documentation. The query model is compiled
// in, so that the schema the server describes (GET /api/schema, which the
// MCP server's describe_relations tool also reads) is this very text and
// cannot drift from it.
package docs

import _ "embed"

// QueryModel is query-model.md: the relations and their columns.
//
//go:embed query-model.md
var QueryModel string
