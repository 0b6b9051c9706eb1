package query

import (
	"slices"
	"sort"
	"strings"
)

// The walker visits every field of the parser's JSON AST. Known node types
// get structured handling (scopes, FROM trees, pruning); every other field
// is walked generically, so a nested query, table reference or function
// call is never missed whatever field DuckDB puts it in.

var queryNodes = map[string]bool{
	"SELECT_NODE": true, "SET_OPERATION_NODE": true, "RECURSIVE_CTE_NODE": true, "CTE_NODE": true,
}

var tableRefs = map[string]bool{
	"BASE_TABLE": true, "JOIN": true, "SUBQUERY": true, "TABLE_FUNCTION": true, "EMPTY": true,
	"EXPRESSION_LIST": true, "SHOW_REF": true, "PIVOT": true, "COLUMN_DATA": true, "DELIM_GET": true,
}

// showTables are the SHOW_REF table names of SHOW TABLES, SHOW ALL TABLES
// and a bare DESCRIBE.
var showTables = map[string]bool{`"tables"`: true, "__show_tables_expanded": true}

type analyzer struct {
	datasets map[string]bool
	def      bool
	refs     []TableRef
	locs     []float64 // query_location of each ref, for source order
	touched  []map[string]bool
}

func newAnalyzer(opts AnalyzeOptions) *analyzer {
	a := &analyzer{datasets: map[string]bool{}, def: opts.Default}
	for _, d := range opts.Datasets {
		a.datasets[strings.ToLower(strings.TrimSpace(d))] = true
	}
	if opts.Default {
		a.datasets[DefaultSchema] = true
	}
	return a
}

func (a *analyzer) run(node map[string]any) (*Analysis, error) {
	kind := KindSelect
	if str(node, "type") == "SELECT_NODE" {
		switch str(obj(node["from_table"]), "type") {
		case "SHOW_REF":
			if str(obj(node["from_table"]), "show_type") != "SUMMARY" {
				kind = KindDescribe
			}
		case "EXPRESSION_LIST":
			kind = KindValues
		}
	}
	if _, err := a.query(node, nil); err != nil {
		return nil, err
	}
	order := make([]int, len(a.refs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return a.locs[order[i]] < a.locs[order[j]] })
	refs := make([]TableRef, len(order))
	for i, k := range order {
		refs[i] = a.refs[k]
	}
	return &Analysis{Kind: kind, Refs: refs}, nil
}

// scope is one CTE binding; CTE names shadow relation names for
// unqualified references in the scopes below them.
type scope struct {
	parent  *scope
	name    string
	touches map[string]bool // Datasets whose trajectory relations the CTE reads
	cols    *columns        // the CTE's columns; nil inside a recursive CTE's own body
}

func (s *scope) lookup(name string) *scope {
	for ; s != nil; s = s.parent {
		if s.name == name {
			return s
		}
	}
	return nil
}

// walk dispatches on the shape of any AST value.
func (a *analyzer) walk(v any, sc *scope) error {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			if err := a.walk(x, sc); err != nil {
				return err
			}
		}
	case map[string]any:
		if cls, ok := v["class"].(string); ok {
			return a.expr(v, cls, sc)
		}
		if t, ok := v["type"].(string); ok {
			switch {
			case queryNodes[t]:
				_, err := a.query(v, sc)
				return err
			case tableRefs[t]:
				// A table reference outside a FROM clause (e.g. a PIVOT
				// source) is analyzed on its own, with no WHERE.
				tree, err := a.table(v, sc)
				if err != nil {
					return err
				}
				return a.analyzeFrom(tree, nil, false)
			}
		}
		return a.fields(v, sc)
	}
	return nil
}

// fields walks every field of m except skip, in key order. The payload of a
// constant is user data, never AST, so it is not walked.
func (a *analyzer) fields(m map[string]any, sc *scope, skip ...string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !slices.Contains(skip, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	_, isValue := m["is_null"]
	for _, k := range keys {
		if k == "value" && isValue {
			continue
		}
		if err := a.walk(m[k], sc); err != nil {
			return err
		}
	}
	return nil
}

func (a *analyzer) expr(m map[string]any, cls string, sc *scope) error {
	if cls == "PARAMETER" {
		// Nothing binds values to it: DuckDB would fail at run time with
		// an argument count, which reads as an internal error.
		return reject("parameter $%s has no value: queries take no parameters; write the value into the SQL", str(m, "identifier"))
	}
	if cls == "FUNCTION" || cls == "WINDOW" {
		name := strings.ToLower(str(m, "function_name"))
		if why := deniedFunction(name); why != "" {
			return reject("function %s is not allowed: it %s", name, why)
		}
	}
	return a.fields(m, sc)
}

// query walks a query node and returns its output columns; its WITH clause
// scopes everything inside it.
func (a *analyzer) query(m map[string]any, sc *scope) (*columns, error) {
	sc, err := a.ctes(obj(m["cte_map"]), sc)
	if err != nil {
		return nil, err
	}
	switch str(m, "type") {
	case "SELECT_NODE":
		return a.selectNode(m, sc)
	case "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE":
		left, err := a.query(obj(m["left"]), sc)
		if err != nil {
			return nil, err
		}
		right, err := a.query(obj(m["right"]), sc)
		if err != nil {
			return nil, err
		}
		return setColumns(m, left, right), a.fields(m, sc, "cte_map", "left", "right")
	}
	return unknownColumns, a.fields(m, sc, "cte_map")
}

// statement walks a statement object ({"node": query node, ...}) and
// returns its query's columns.
func (a *analyzer) statement(m map[string]any, sc *scope) (*columns, error) {
	cols, err := a.query(obj(m["node"]), sc)
	if err != nil {
		return nil, err
	}
	return cols, a.fields(m, sc, "node")
}

// ctes binds each CTE in order: a body sees the CTEs before it and, when
// recursive, itself (DuckDB resolves a non-recursive CTE's own name in its
// body to the base table).
func (a *analyzer) ctes(cm map[string]any, sc *scope) (*scope, error) {
	entries, _ := cm["map"].([]any)
	for _, e := range entries {
		entry := obj(e)
		name := strings.ToLower(str(entry, "key"))
		value := obj(entry["value"])
		body := sc
		if str(obj(obj(value["query"])["node"]), "type") == "RECURSIVE_CTE_NODE" {
			body = &scope{parent: sc, name: name}
		}
		a.push()
		cols, err := a.statement(obj(value["query"]), body)
		if err == nil {
			err = a.fields(value, body, "query")
		}
		touches := a.pop()
		if err != nil {
			return nil, err
		}
		sc = &scope{parent: sc, name: name, touches: touches, cols: cols.withAliases(arr(value["aliases"]))}
	}
	return sc, nil
}

func (a *analyzer) selectNode(m map[string]any, sc *scope) (*columns, error) {
	tree := &from{leaf: true, ref: -1, cols: exactColumns(nil)}
	if ft := obj(m["from_table"]); ft != nil {
		var err error
		if tree, err = a.table(ft, sc); err != nil {
			return nil, err
		}
	}
	if err := a.fields(m, sc, "from_table", "cte_map"); err != nil {
		return nil, err
	}
	if err := a.analyzeFrom(tree, m["where_clause"], m["sample"] != nil); err != nil {
		return nil, err
	}
	return selectColumns(m, tree), nil
}

// table validates one table reference and returns its FROM tree.
func (a *analyzer) table(m map[string]any, sc *scope) (*from, error) {
	leaf := &from{leaf: true, ref: -1, name: strings.ToLower(str(m, "alias")), cols: unknownColumns}
	switch t := str(m, "type"); t {
	case "BASE_TABLE":
		return a.baseTable(m, sc)
	case "JOIN":
		l, err := a.table(obj(m["left"]), sc)
		if err != nil {
			return nil, err
		}
		r, err := a.table(obj(m["right"]), sc)
		if err != nil {
			return nil, err
		}
		j := &from{left: l, right: r, joinType: str(m, "join_type"), refType: str(m, "ref_type"), cond: m["condition"]}
		for _, u := range arr(m["using_columns"]) {
			if s, ok := u.(string); ok {
				j.using = append(j.using, strings.ToLower(s))
			}
		}
		return j, a.fields(m, sc, "left", "right")
	case "SUBQUERY":
		a.push()
		cols, err := a.statement(obj(m["subquery"]), sc)
		leaf.touches = a.pop()
		a.touch(leaf.touches)
		leaf.label = "subquery " + leaf.name
		if err != nil {
			return nil, err
		}
		leaf.cols = cols.withAliases(arr(m["column_name_alias"]))
		return leaf, a.fields(m, sc, "subquery")
	case "TABLE_FUNCTION":
		return nil, reject("table function %s is not allowed: only the relations of mounted Datasets and information_schema can be read",
			strings.ToLower(str(obj(m["function"]), "function_name")))
	case "SHOW_REF":
		return leaf, a.show(m, sc)
	case "EXPRESSION_LIST":
		leaf.cols = valuesColumns(m)
		return leaf, a.fields(m, sc)
	case "EMPTY":
		leaf.cols = exactColumns(nil)
		return leaf, a.fields(m, sc)
	default:
		// EMPTY, EXPRESSION_LIST (VALUES), PIVOT, …: not a Dataset table.
		return leaf, a.fields(m, sc)
	}
}

func (a *analyzer) baseTable(m map[string]any, sc *scope) (*from, error) {
	if m["at_clause"] != nil {
		return nil, reject("AT (time travel) clauses are not supported")
	}
	cat, sch, name := strings.ToLower(str(m, "catalog_name")), strings.ToLower(str(m, "schema_name")), strings.ToLower(str(m, "table_name"))
	leaf := &from{leaf: true, ref: -1, name: strings.ToLower(str(m, "alias")), cols: unknownColumns}
	if leaf.name == "" {
		leaf.name = name
	}
	var ds string
	switch {
	case cat == "" && sch == "":
		if c := sc.lookup(name); c != nil {
			leaf.touches, leaf.label = c.touches, "CTE "+name
			if c.cols != nil { // nil: a recursive CTE's own name in its body
				leaf.cols = c.cols.withAliases(arr(m["column_name_alias"]))
			}
			a.touch(c.touches)
			return leaf, a.fields(m, sc)
		}
		if !isRelation(name) {
			return nil, reject("unknown table %q: tables are the relations of mounted Datasets (%s) and information_schema", name, relationList())
		}
		if !a.def {
			return nil, reject("no default Dataset: qualify the table, e.g. name.%s", name)
		}
		ds = DefaultSchema
	case sch == "information_schema" && cat == "":
		return leaf, a.fields(m, sc)
	case sch == "information_schema":
		// The engine's DuckDB has no catalog "main", and naming its
		// catalogs only ties queries to how the engine is built.
		return nil, reject("%s.information_schema.%s: read information_schema without a catalog (information_schema.%s)", cat, name, name)
	case cat == "" && a.datasets[sch]:
		if !isRelation(name) {
			return nil, reject("unknown relation %s.%s: a Dataset has %s", sch, name, relationList())
		}
		ds = sch
	default:
		q := sch
		if cat != "" {
			q = cat + "." + sch
		}
		return nil, reject("unknown schema %q in %s.%s: only mounted Datasets (%s) and information_schema can be read", q, q, name, a.datasetList())
	}
	leaf.ref, leaf.schema, leaf.table = len(a.refs), ds, name
	leaf.usable = m["sample"] == nil && len(arr(m["column_name_alias"])) == 0
	leaf.cols = relationColumns(ds, name).withAliases(arr(m["column_name_alias"]))
	leaf.label = ds + "." + name
	if alias := str(m, "alias"); alias != "" {
		leaf.label += " AS " + alias
	}
	if trajectory[name] {
		leaf.touches = map[string]bool{ds: true}
		a.touch(leaf.touches)
	}
	loc, _ := m["query_location"].(float64)
	a.refs = append(a.refs, TableRef{Dataset: ds, Relation: name})
	a.locs = append(a.locs, loc)
	return leaf, a.fields(m, sc)
}

// show allows DESCRIBE and the SHOW TABLES family; every reference under a
// DESCRIBE reads no rows (DuckDB only binds the described query).
func (a *analyzer) show(m map[string]any, sc *scope) error {
	switch st := str(m, "show_type"); st {
	case "DESCRIBE":
		first := len(a.refs)
		q := obj(m["query"])
		if q == nil {
			return reject("DESCRIBE needs a table or a query")
		}
		if err := a.walk(q, sc); err != nil {
			return err
		}
		for i := first; i < len(a.refs); i++ {
			a.refs[i].Candidates = FileFilter{root: &fnode{op: opNever}}
		}
		return a.fields(m, sc, "query")
	case "SHOW_UNQUALIFIED":
		if !showTables[str(m, "table_name")] {
			return reject("SHOW %s is not allowed; use SHOW TABLES, DESCRIBE or information_schema", str(m, "table_name"))
		}
	case "SHOW_FROM":
		sch := strings.ToLower(str(m, "schema_name"))
		if str(m, "catalog_name") != "" || !(a.datasets[sch] || sch == "information_schema") {
			return reject("SHOW TABLES FROM %q: not a mounted Dataset", sch)
		}
	case "SUMMARY":
		// SUMMARIZE reads the rows of the summarized query (a table or a
		// SELECT) and computes aggregates of them: read-only, and its
		// references are pruned and resolved like a SELECT's.
		q := obj(m["query"])
		if q == nil {
			return reject("SUMMARIZE needs a table or a query")
		}
		if err := a.walk(q, sc); err != nil {
			return err
		}
	default:
		return reject("SHOW (%s) is not allowed; %s", strings.ToLower(st), errOnlySelect)
	}
	return a.fields(m, sc, "query")
}

// The touch stack records which Datasets' trajectory relations the
// enclosing derived tables and CTE bodies read, for the join rule.
func (a *analyzer) push() { a.touched = append(a.touched, map[string]bool{}) }

func (a *analyzer) pop() map[string]bool {
	t := a.touched[len(a.touched)-1]
	a.touched = a.touched[:len(a.touched)-1]
	return t
}

func (a *analyzer) touch(ds map[string]bool) {
	if len(a.touched) == 0 {
		return
	}
	top := a.touched[len(a.touched)-1]
	for d := range ds {
		top[d] = true
	}
}

func (a *analyzer) datasetList() string {
	var names []string
	for d := range a.datasets {
		names = append(names, d)
	}
	if len(names) == 0 {
		return "none mounted"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func relationList() string { return strings.Join(Relations, ", ") }

// JSON helpers: the AST is untrusted input, so every access tolerates a
// missing or mistyped field.
func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func arr(v any) []any          { s, _ := v.([]any); return s }
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
