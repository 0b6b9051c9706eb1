package query

import "strings"

// RouteFacts are what the server's source-routing index may use of a
// statement, extracted exactly as the routing rule allows: a single SELECT
// over one base relation of a Dataset — no join, CTE, subquery or set
// operation — whose WHERE is a conjunction; only its top-level conjuncts
// of the form `column = 'string'` or `column IN ('a', 'b', …)` count.
// Everything else in WHERE only narrows rows further, so routing on these
// facts alone never drops a row the statement selects.
type RouteFacts struct {
	Dataset  string
	Relation string
	// FilePredicate is set when WHERE references _file_: catalog pruning
	// already applies, and routing leaves the statement alone.
	FilePredicate bool
	// Equal maps a column (lowercase) to the values every selected row's
	// column is among; two conjuncts on one column intersect.
	Equal map[string][]string
}

// routeFacts extracts the facts of a statement whose analysis found exactly
// one Dataset reference, or returns nil when the statement has another
// shape.
func routeFacts(node map[string]any, refs []TableRef) *RouteFacts {
	if len(refs) != 1 || str(node, "type") != "SELECT_NODE" || len(arr(obj(node["cte_map"])["map"])) > 0 {
		return nil
	}
	from := obj(node["from_table"])
	if str(from, "type") != "BASE_TABLE" {
		return nil
	}
	table := strings.ToLower(str(from, "table_name"))
	if table != refs[0].Relation {
		return nil
	}
	names := map[string]bool{table: true}
	if alias := strings.ToLower(str(from, "alias")); alias != "" {
		names = map[string]bool{alias: true}
	}
	f := &RouteFacts{Dataset: refs[0].Dataset, Relation: refs[0].Relation, Equal: map[string][]string{}}
	where := node["where_clause"]
	if where == nil {
		return f
	}
	if mentions(where, "_file_") {
		f.FilePredicate = true
		return f
	}
	if hasSubquery(where) {
		return nil
	}
	for _, c := range andConjuncts(where, nil) {
		col, vals, ok := equality(c, names)
		if !ok {
			continue
		}
		if prev, seen := f.Equal[col]; seen {
			vals = intersect(prev, vals)
		}
		f.Equal[col] = vals
	}
	return f
}

// andConjuncts flattens the top-level ANDs of an expression.
func andConjuncts(e any, out []map[string]any) []map[string]any {
	m := obj(e)
	if str(m, "class") == "CONJUNCTION" && str(m, "type") == "CONJUNCTION_AND" {
		for _, k := range arr(m["children"]) {
			out = andConjuncts(k, out)
		}
		return out
	}
	return append(out, m)
}

// equality recognizes `col = 'v'`, `'v' = col` and `col IN ('a', …)` on a
// column of the one table (unqualified, or qualified by its name or alias).
// NULLs in an IN list match nothing and are dropped.
func equality(m map[string]any, table map[string]bool) (string, []string, bool) {
	switch {
	case str(m, "class") == "COMPARISON" && str(m, "type") == "COMPARE_EQUAL":
		for _, sides := range [][2]any{{m["left"], m["right"]}, {m["right"], m["left"]}} {
			col, ok := columnOf(sides[0], table)
			v, null, isConst := constString(sides[1])
			if ok && isConst && !null {
				return col, []string{v}, true
			}
		}
	case str(m, "class") == "OPERATOR" && str(m, "type") == "COMPARE_IN":
		kids := arr(m["children"])
		if len(kids) < 2 {
			return "", nil, false
		}
		col, ok := columnOf(kids[0], table)
		if !ok {
			return "", nil, false
		}
		vals := []string{}
		for _, k := range kids[1:] {
			v, null, isConst := constString(k)
			if !isConst {
				return "", nil, false
			}
			if !null {
				vals = append(vals, v)
			}
		}
		return col, vals, true
	}
	return "", nil, false
}

// columnOf returns the lowercase name of a column reference to the table.
func columnOf(e any, table map[string]bool) (string, bool) {
	m := obj(e)
	if str(m, "class") != "COLUMN_REF" {
		return "", false
	}
	names := arr(m["column_names"])
	switch len(names) {
	case 1:
	case 2:
		q, _ := names[0].(string)
		if !table[strings.ToLower(q)] {
			return "", false
		}
	default:
		return "", false
	}
	name, _ := names[len(names)-1].(string)
	return strings.ToLower(name), name != ""
}

// mentions reports whether any column reference under e is named col.
func mentions(e any, col string) bool {
	switch v := e.(type) {
	case []any:
		for _, x := range v {
			if mentions(x, col) {
				return true
			}
		}
	case map[string]any:
		if str(v, "class") == "COLUMN_REF" {
			names := arr(v["column_names"])
			if len(names) > 0 {
				if n, _ := names[len(names)-1].(string); strings.EqualFold(n, col) {
					return true
				}
			}
		}
		for _, x := range v {
			if mentions(x, col) {
				return true
			}
		}
	}
	return false
}

// hasSubquery reports whether a nested query appears under e.
func hasSubquery(e any) bool {
	switch v := e.(type) {
	case []any:
		for _, x := range v {
			if hasSubquery(x) {
				return true
			}
		}
	case map[string]any:
		if str(v, "class") == "SUBQUERY" || queryNodes[str(v, "type")] {
			return true
		}
		for _, x := range v {
			if hasSubquery(x) {
				return true
			}
		}
	}
	return false
}

func intersect(a, b []string) []string {
	in := make(map[string]bool, len(a))
	for _, v := range a {
		in[v] = true
	}
	out := []string{}
	for _, v := range b {
		if in[v] {
			out = append(out, v)
			in[v] = false
		}
	}
	return out
}
