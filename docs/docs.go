// Package docs embeds the user documentation that the binary itself
// serves: the relations' column meanings (query-model.md), which the MCP
// server's describe_relations tool hands to agents, so that what an agent
// reads is what a person reads.
package docs

import _ "embed"

// QueryModel is query-model.md.
//
//go:embed query-model.md
var QueryModel string
