package query

import (
	"fmt"
	"strings"

	"github.com/pchronicle/pchronicle/internal/model"
)

// The join rule accepts an equality on a derived table's or CTE's `_file_`
// only when that column provably is a Dataset relation's `_file_` passed
// through unchanged (docs/sql.md, The join rule): `max(_file_) AS _file_`,
// `'a.jsonl' AS _file_` or `* REPLACE (session_id AS _file_)` name a column
// `_file_` whose values say nothing about which source a row came from.
// So the analyzer tracks, for every FROM leaf and every query, its output
// columns and which of them carry a base `_file_`.

// column is one output column: its name (lowercase) and, when its value is
// provably the `_file_` of trajectory relations passed through unchanged,
// the Datasets whose relations those are (nil otherwise).
type column struct {
	name  string
	files map[string]bool
}

// columns are the output columns of a FROM leaf or a query. complete is
// false when some columns are not known (PIVOT, a recursive CTE's own name,
// COLUMNS(...)): any of them could be named `_file_`. ordered is false when
// their positions are not known either.
type columns struct {
	list     []column
	complete bool
	ordered  bool
}

// unknownColumns are the columns of something the analyzer cannot see into.
var unknownColumns = &columns{}

func exactColumns(list []column) *columns {
	return &columns{list: list, complete: true, ordered: true}
}

// relationColumns are the columns of a Dataset relation; only a trajectory
// relation's `_file_` counts for the join rule (the metadata relations'
// rows are not rows of their sources).
func relationColumns(dataset, relation string) *columns {
	names := model.ColumnNames(relation)
	list := make([]column, len(names))
	for i, n := range names {
		list[i].name = n
		if n == colFile && trajectory[relation] {
			list[i].files = map[string]bool{dataset: true}
		}
	}
	return exactColumns(list)
}

// file returns the Datasets whose base `_file_` the column named `_file_`
// provably is (nil when it is not, or when there is none), and whether the
// columns have, or may have, a `_file_` at all.
func (c *columns) file() (files map[string]bool, has bool) { return c.named(colFile) }

// named is file for any column name: what a reference to it carries. In a
// derived table DuckDB renames repeated names (`_file_`, `_file__1`), so
// with known positions the first column of the name is the one a reference
// means; otherwise every candidate must qualify.
func (c *columns) named(name string) (files map[string]bool, has bool) {
	if !c.complete {
		return nil, true
	}
	var found []map[string]bool
	for _, col := range c.list {
		if col.name == name {
			if c.ordered {
				return col.files, true
			}
			found = append(found, col.files)
		}
	}
	return commonDatasets(found...), len(found) > 0
}

// commonDatasets is the set of Datasets in every set; nil when there is
// none or any is nil.
func commonDatasets(sets ...map[string]bool) map[string]bool {
	if len(sets) == 0 {
		return nil
	}
	out := map[string]bool{}
	for d := range sets[0] {
		out[d] = true
	}
	for _, s := range sets[1:] {
		for d := range out {
			if !s[d] {
				delete(out, d)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// withAliases renames the first columns (`t(a, b)`, `WITH t(a, b) AS`);
// values, and so provenances, stay where they are. Without known positions
// the renamed columns are unknown, and so are the names of the others.
func (c *columns) withAliases(aliases []any) *columns {
	if len(aliases) == 0 {
		return c
	}
	out := &columns{complete: c.complete && c.ordered, ordered: c.complete && c.ordered}
	if out.complete {
		out.list = append(out.list, c.list...)
	}
	for i, a := range aliases {
		name, _ := a.(string)
		switch {
		case !out.complete:
			out.list = append(out.list, column{name: strings.ToLower(name)})
		case i < len(out.list):
			out.list[i].name = strings.ToLower(name)
		}
	}
	return out
}

// valuesColumns are the columns DuckDB gives a VALUES list: col0, col1, ...
func valuesColumns(m map[string]any) *columns {
	rows := arr(m["values"])
	if len(rows) == 0 {
		return unknownColumns
	}
	list := make([]column, len(arr(rows[0])))
	for i := range list {
		list[i].name = fmt.Sprintf("col%d", i)
	}
	return exactColumns(list)
}

// setColumns are the columns of a set operation (UNION, EXCEPT, INTERSECT,
// a recursive CTE): the left side's names, and a provenance only where both
// sides pass the same Datasets' `_file_` through, by position or, for
// UNION BY NAME, by name.
func setColumns(m map[string]any, left, right *columns) *columns {
	out := &columns{complete: left.complete, ordered: left.ordered}
	for _, col := range left.list {
		out.list = append(out.list, column{name: col.name})
	}
	byName := strings.HasSuffix(str(m, "setop_type"), "BY_NAME")
	switch {
	case byName && left.complete && right.complete:
		// The result also has the right side's other names; only `_file_`
		// matters, and it keeps a provenance only when both sides have one.
		out.ordered = false
		lf, lhas := left.file()
		rf, rhas := right.file()
		for i := range out.list {
			if out.list[i].name == colFile && lhas && rhas {
				out.list[i].files = commonDatasets(lf, rf)
			}
		}
		seen := map[string]bool{}
		for _, col := range left.list {
			seen[col.name] = true
		}
		for _, col := range right.list {
			if !seen[col.name] {
				out.list = append(out.list, column{name: col.name})
			}
		}
	case !byName && left.ordered && left.complete && right.ordered && right.complete && len(left.list) == len(right.list):
		for i := range out.list {
			out.list[i].files = commonDatasets(left.list[i].files, right.list[i].files)
		}
	case byName:
		out.complete = false
	}
	return out
}

// bindings indexes a FROM tree's leaves by binding name (nil when the name
// is repeated, which DuckDB rejects) and its unaliased Dataset tables by
// (Dataset, relation), as column references address them.
func bindings(leaves []*from) (names map[string]*from, tables map[[2]string]*from) {
	names, tables = map[string]*from{}, map[[2]string]*from{}
	for _, l := range leaves {
		if _, dup := names[l.name]; dup {
			names[l.name] = nil
		} else {
			names[l.name] = l
		}
		if l.ref >= 0 && l.name == l.table {
			tables[[2]string{l.schema, l.table}] = l
		}
	}
	return names, tables
}

// selectColumns are the output columns of a SELECT over the FROM tree root.
func selectColumns(m map[string]any, root *from) *columns {
	leaves := root.leaves(nil)
	names, tables := bindings(leaves)
	// provenance is what a column reference in the select list carries.
	provenance := func(e map[string]any) map[string]bool {
		var parts []string
		for _, p := range arr(e["column_names"]) {
			s, _ := p.(string)
			parts = append(parts, strings.ToLower(s))
		}
		var l *from
		switch len(parts) {
		case 1:
			// Every leaf that has, or may have, the column could be the
			// one meant (several: USING merged them, or DuckDB rejects it).
			var sets []map[string]bool
			for _, l := range leaves {
				if files, has := l.cols.named(parts[0]); has {
					sets = append(sets, files)
				}
			}
			return commonDatasets(sets...)
		case 2:
			l = names[parts[0]]
		case 3, 4:
			l = tables[[2]string{parts[len(parts)-3], parts[len(parts)-2]}]
		}
		if l == nil {
			return nil // a struct field, or a column of an enclosing query
		}
		files, _ := l.cols.named(parts[len(parts)-1])
		return files
	}
	out := exactColumns(nil)
	for _, item := range arr(m["select_list"]) {
		e := obj(item)
		if str(e, "class") == "STAR" {
			out.add(starColumns(e, root, names, provenance))
			continue
		}
		col := column{name: strings.ToLower(str(e, "alias"))}
		if str(e, "class") == "COLUMN_REF" {
			col.files = provenance(e)
			if col.name == "" {
				parts := arr(e["column_names"])
				last, _ := parts[len(parts)-1].(string)
				col.name = strings.ToLower(last)
			}
		}
		// Any other expression without an alias is named after its text
		// ("max(_file_)"), never a bare column name.
		out.list = append(out.list, col)
	}
	return out
}

// add appends more columns, keeping what is known about completeness and
// order.
func (c *columns) add(more *columns) {
	c.list = append(c.list, more.list...)
	c.complete = c.complete && more.complete
	c.ordered = c.ordered && more.ordered && more.complete
}

// starColumns expands `*` or `t.*` with its EXCLUDE, REPLACE and RENAME
// lists. COLUMNS(...) is not expanded: its columns are unknown.
func starColumns(e map[string]any, root *from, names map[string]*from, provenance func(map[string]any) map[string]bool) *columns {
	if b, _ := e["columns"].(bool); b || e["expr"] != nil {
		return unknownColumns
	}
	var base *columns
	if rel := strings.ToLower(str(e, "relation_name")); rel != "" {
		l := names[rel]
		if l == nil {
			return unknownColumns // a struct column, or an outer table
		}
		base = l.cols
	} else {
		base = joinColumns(root)
	}
	exclude := map[string]bool{}
	for _, x := range arr(e["exclude_list"]) {
		if s, ok := x.(string); ok {
			exclude[strings.ToLower(s)] = true
		}
	}
	for _, x := range arr(e["qualified_exclude_list"]) {
		// Which table a qualified name excludes from matters little here:
		// excluding a `_file_` can only make a join fail.
		exclude[strings.ToLower(str(obj(x), "column"))] = true
	}
	replace := map[string]column{}
	for _, x := range arr(e["replace_list"]) {
		kv := obj(x)
		name := strings.ToLower(str(kv, "key"))
		val := obj(kv["value"])
		col := column{name: name}
		if str(val, "class") == "COLUMN_REF" {
			col.files = provenance(val)
		}
		replace[name] = col
	}
	rename := map[string]string{}
	for _, x := range arr(e["rename_list"]) {
		kv := obj(x)
		to, _ := kv["value"].(string)
		rename[strings.ToLower(str(obj(kv["key"]), "column"))] = strings.ToLower(to)
	}
	out := &columns{complete: base.complete, ordered: base.ordered}
	for _, col := range base.list {
		switch {
		case exclude[col.name]:
			continue
		case replace[col.name].name != "":
			col = replace[col.name]
		case rename[col.name] != "":
			col.name = rename[col.name]
		}
		out.list = append(out.list, col)
	}
	return out
}

// joinColumns are the columns `*` gives over a FROM tree: the left side's,
// then the right side's, with a column merged by USING or NATURAL listed
// once, where the left side has it (its value may come from either side).
func joinColumns(n *from) *columns {
	if n.leaf {
		return n.cols
	}
	left, right := joinColumns(n.left), joinColumns(n.right)
	merged := map[string]bool{}
	for _, u := range n.using {
		merged[u] = true
	}
	if n.refType == "NATURAL" {
		if !left.complete || !right.complete {
			return &columns{list: append(append([]column(nil), left.list...), right.list...)}
		}
		rightNames := map[string]bool{}
		for _, col := range right.list {
			rightNames[col.name] = true
		}
		for _, col := range left.list {
			if rightNames[col.name] {
				merged[col.name] = true
			}
		}
	}
	out := &columns{complete: left.complete && right.complete, ordered: left.ordered && right.ordered}
	rightFiles := map[string]map[string]bool{}
	for _, col := range right.list {
		if merged[col.name] {
			rightFiles[col.name] = col.files
		}
	}
	for _, col := range left.list {
		if merged[col.name] {
			col.files = commonDatasets(col.files, rightFiles[col.name])
		}
		out.list = append(out.list, col)
	}
	for _, col := range right.list {
		if !merged[col.name] {
			out.list = append(out.list, col)
		}
	}
	return out
}
