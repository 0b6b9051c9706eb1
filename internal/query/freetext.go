package query

import (
	"slices"
	"strings"

	"github.com/pchronicle/pchronicle/internal/model"
)

// A query that reads none of a relation's free-text columns (message
// texts, tool arguments and results, extras: model.Column.FreeText) can be
// answered from lean normalized files, which leave those columns NULL
// (docs/architecture.md, "Lean relations"). Deciding that must never be
// wrong the other way, so this pass is deliberately blunt: it looks at the
// whole statement, not at scopes, and any construct that can reach columns
// without naming them counts as reading every column.

// textReads is what a statement may read of free-text columns.
type textReads struct {
	all   bool            // something may read every column of some relation
	names map[string]bool // lowercase names that column references or USING lists use
}

// freeTextReads walks every value of the statement's AST.
func freeTextReads(stmt map[string]any) *textReads {
	r := &textReads{names: map[string]bool{}}
	bindings := map[string]bool{} // table names and aliases, CTE names
	var refs [][]string           // column references' name parts
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			switch str(v, "class") {
			case "STAR", "POSITIONAL_REFERENCE":
				// *, t.*, COLUMNS(...), #n: columns by position or pattern.
				r.all = true
			case "COLUMN_REF":
				var parts []string
				for _, p := range arr(v["column_names"]) {
					if s, ok := p.(string); ok {
						parts = append(parts, strings.ToLower(s))
					}
				}
				refs = append(refs, parts)
			}
			switch str(v, "type") {
			case "BASE_TABLE", "SUBQUERY", "TABLE_FUNCTION":
				bindings[strings.ToLower(str(v, "table_name"))] = true
				bindings[strings.ToLower(str(v, "alias"))] = true
			case "JOIN":
				if str(v, "ref_type") == "NATURAL" {
					r.all = true // joins on every column both sides have
				}
				for _, u := range arr(v["using_columns"]) {
					if s, ok := u.(string); ok {
						r.names[strings.ToLower(s)] = true
					}
				}
			case "PIVOT":
				r.all = true // groups by every column it does not name
			}
			if str(v, "type") == "ORDER_MODIFIER" {
				// ORDER BY ALL is a star over the select list, not a table.
				for _, o := range arr(v["orders"]) {
					if !plainStar(obj(obj(o)["expression"])) {
						walk(o)
					}
				}
				return
			}
			if cm := obj(v["cte_map"]); cm != nil {
				for _, e := range arr(cm["map"]) {
					bindings[strings.ToLower(str(obj(e), "key"))] = true
				}
			}
			_, isValue := v["is_null"]
			for k, x := range v {
				if k == "value" && isValue {
					continue // a constant's payload is data, not AST
				}
				walk(x)
			}
		}
	}
	walk(stmt)
	for _, parts := range refs {
		for _, p := range parts {
			r.names[p] = true
		}
		// A reference to a table's name is its whole row, as a struct.
		if len(parts) > 0 && bindings[parts[len(parts)-1]] {
			r.all = true
		}
	}
	return r
}

// plainStar reports whether e is `*` or COLUMNS(*) with nothing excluded,
// replaced or renamed.
func plainStar(e map[string]any) bool {
	return str(e, "class") == "STAR" && str(e, "relation_name") == "" && e["expr"] == nil &&
		len(arr(e["exclude_list"])) == 0 && len(arr(e["replace_list"])) == 0 &&
		len(arr(e["qualified_exclude_list"])) == 0 && len(arr(e["rename_list"])) == 0
}

// ReadsFreeText reports whether the statement may read a free-text column
// of relation; true when it was not analyzed for that.
func (a *Analysis) ReadsFreeText(relation string) bool {
	r := a.text
	return r == nil || r.all || slices.ContainsFunc(model.FreeTextColumns(relation), func(c string) bool { return r.names[c] })
}
