package query

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// from is a node of one SELECT's FROM tree: a leaf (table, CTE, derived
// table, VALUES, …) or a join.
type from struct {
	leaf bool
	// leaf fields
	name    string          // binding name: alias, else table name (lowercase)
	ref     int             // index into analyzer.refs for a Dataset table, else -1
	schema  string          // Dataset alias of a Dataset table
	table   string          // relation of a Dataset table
	usable  bool            // a Dataset table whose `_file_` column is certain (no sample, no column aliases)
	touches map[string]bool // Datasets whose trajectory relations this leaf reads (join rule)
	cols    *columns        // its output columns (columns.go)
	label   string
	app     []pred // conjuncts every contributing row of this leaf satisfies
	// join fields
	left, right       *from
	joinType, refType string
	cond              any   // ON condition (AST)
	on                *cond // ON condition compiled by newSelectCtx
	using             []string
}

// pred is a condition that holds for contributing rows: a compiled
// expression, or the `_file_` equality implied by USING (_file_) / NATURAL.
type pred struct {
	c    *cond
	a, b *from
}

func (n *from) leaves(out []*from) []*from {
	if n.leaf {
		return append(out, n)
	}
	return n.right.leaves(n.left.leaves(out))
}

// mergesCol reports whether the join equates the col columns of its two
// sides (USING (col) or NATURAL between Dataset tables).
func (n *from) mergesCol(col string) bool {
	if n.refType == "NATURAL" {
		return true
	}
	for _, u := range n.using {
		if u == col {
			return true
		}
	}
	return false
}

// rep is the Dataset table whose col column the subtree exposes unqualified,
// or nil when that is not certain.
func (n *from) rep(col string) *from {
	if n.leaf {
		if n.ref >= 0 && n.usable {
			return n
		}
		return nil
	}
	if n.mergesCol(col) {
		switch n.joinType {
		case "INNER":
			if l := n.left.rep(col); l != nil {
				return l
			}
			return n.right.rep(col)
		case "LEFT":
			return n.left.rep(col)
		}
		return nil
	}
	var only *from
	for _, l := range n.leaves(nil) {
		if l.ref >= 0 {
			if only != nil {
				return nil
			}
			only = l
		}
	}
	if only != nil && !only.usable {
		return nil
	}
	return only
}

// ownPreds are the conditions an inner join adds for both of its sides.
func (n *from) ownPreds(col string) []pred {
	var out []pred
	if n.on != nil {
		out = append(out, pred{c: n.on})
	}
	if n.mergesCol(col) {
		if l, r := n.left.rep(col), n.right.rep(col); l != nil && r != nil {
			out = append(out, pred{a: l, b: r})
		}
	}
	return out
}

// assign gives every leaf the conditions its contributing rows satisfy.
// Only inner joins pass conditions down; the null-supplying side of an
// outer join, the right side of SEMI/ANTI/ASOF joins and both sides of a
// POSITIONAL (or unknown) join get none, because removing rows there could
// change which rows are null-extended, kept or matched.
func (n *from) assign(app []pred, col string) {
	if n.leaf {
		n.app = app
		return
	}
	regular := n.refType == "REGULAR" || n.refType == "NATURAL"
	switch {
	case n.joinType == "INNER" && (regular || n.refType == "CROSS"):
		own := append(append([]pred(nil), app...), n.ownPreds(col)...)
		n.left.assign(own, col)
		n.right.assign(own, col)
	case n.joinType == "LEFT" && (regular || n.refType == "ASOF"),
		(n.joinType == "SEMI" || n.joinType == "ANTI") && regular,
		n.joinType == "INNER" && n.refType == "ASOF":
		n.left.assign(app, col)
		n.right.assign(nil, col)
	case n.joinType == "RIGHT" && regular:
		n.left.assign(nil, col)
		n.right.assign(app, col)
	default:
		n.left.assign(nil, col)
		n.right.assign(nil, col)
	}
}

// selectCtx resolves `_file_` column references inside one SELECT. The
// lookup maps and the compiled conditions keep the analysis about
// quadratic in the number of tables at worst (DuckDB's expression depth
// limit bounds that number at about a thousand).
type selectCtx struct {
	col     string // the constant-per-source column being analyzed (_file_ or session_id)
	root    *from
	leaves  []*from
	rootRep *from
	names   map[string]*from    // binding name → leaf; nil value when duplicated
	tables  map[[2]string]*from // (Dataset, relation) → unaliased Dataset leaf
}

func newSelectCtx(root *from, col string) *selectCtx {
	c := &selectCtx{col: col, root: root, leaves: root.leaves(nil), rootRep: root.rep(col)}
	c.names, c.tables = bindings(c.leaves)
	c.walkJoins(root, func(j *from) {
		if j.cond != nil {
			j.on = c.compile(j.cond)
		}
	})
	return c
}

// analyzeFrom computes the candidates of the Dataset tables of one FROM
// tree and enforces the join rule. where is the SELECT's WHERE clause;
// sampled is a USING SAMPLE on the SELECT, which runs before WHERE, so
// pruning by WHERE would change what gets sampled.
//
// The same sound pass then runs for session_id, giving each reference the
// session filter that point lookups use to read only those Storylines.
func (a *analyzer) analyzeFrom(root *from, where any, sampled bool) error {
	var joinErr error
	for _, col := range []string{colFile, colSession} {
		c := newSelectCtx(root, col)
		var w *cond
		if where != nil {
			w = c.compile(where)
		}
		var top []pred
		if !sampled && w != nil {
			top = append(top, pred{c: w})
		}
		root.assign(top, col)
		for _, l := range c.leaves {
			if l.ref < 0 {
				continue
			}
			f := FileFilter{}
			if !sampled {
				f = filterFor(l)
			}
			if col == colFile {
				a.refs[l.ref].Candidates = f
			} else {
				a.refs[l.ref].Sessions = f
			}
		}
		if col == colFile {
			if joinErr = c.checkJoins(w); joinErr != nil {
				return joinErr
			}
		}
	}
	return nil
}

// The columns that are constant per source (_file_) or provably selective
// for point lookups (session_id).
const (
	colFile    = "_file_"
	colSession = "session_id"
)

// resolve maps a column reference to the leaf whose `_file_` it names, or
// nil if it is not a `_file_` column of this SELECT's FROM.
func (c *selectCtx) resolve(e any) *from {
	m := obj(e)
	if str(m, "class") != "COLUMN_REF" {
		return nil
	}
	var parts []string
	for _, p := range arr(m["column_names"]) {
		s, _ := p.(string)
		parts = append(parts, strings.ToLower(s))
	}
	if len(parts) == 0 || parts[len(parts)-1] != c.col {
		return nil
	}
	switch len(parts) {
	case 1:
		return c.rootRep
	case 2:
		return c.names[parts[0]]
	case 3, 4: // [catalog.]schema.table._file_ names an unaliased table
		return c.tables[[2]string{parts[len(parts)-3], parts[len(parts)-2]}]
	}
	return nil
}

// cond is a condition compiled once per SELECT, with `_file_` columns
// resolved: a connective, a `_file_` atom (col + node), a `_file_` equality
// between two tables (eq), or an unknown atom.
type cond struct {
	op   fop // opAnd, opOr, opNot, else opAny (atoms: see node)
	kids []*cond
	col  *from
	node *fnode
	eq   [2]*from
}

var unknownCond = &cond{op: opAny}

func (c *selectCtx) compile(e any) *cond {
	m := obj(e)
	kids := arr(m["children"])
	switch t := str(m, "type"); t {
	case "CONJUNCTION_AND", "CONJUNCTION_OR":
		if len(kids) == 0 {
			return unknownCond
		}
		out := &cond{op: opAnd}
		if t == "CONJUNCTION_OR" {
			out.op = opOr
		}
		for _, k := range kids {
			out.kids = append(out.kids, c.compile(k))
		}
		return out
	case "OPERATOR_NOT":
		if len(kids) != 1 {
			return unknownCond
		}
		return &cond{op: opNot, kids: []*cond{c.compile(kids[0])}}
	case "COMPARE_EQUAL", "COMPARE_NOTEQUAL", "COMPARE_NOT_DISTINCT_FROM", "COMPARE_DISTINCT_FROM":
		return c.compare(t, m["left"], m["right"])
	case "COMPARE_IN", "COMPARE_NOT_IN":
		return c.in(t == "COMPARE_NOT_IN", kids)
	case "FUNCTION":
		return c.like(strings.ToLower(str(m, "function_name")), kids)
	}
	return unknownCond
}

func atom(col *from, n *fnode) *cond { return &cond{op: opAny, col: col, node: n} }

func (c *selectCtx) compare(t string, l, r any) *cond {
	lc, rc := c.resolve(l), c.resolve(r)
	if lc != nil && rc != nil {
		if t == "COMPARE_EQUAL" || t == "COMPARE_NOT_DISTINCT_FROM" {
			return &cond{op: opAny, eq: [2]*from{lc, rc}}
		}
		return unknownCond
	}
	if lc == nil {
		lc, r = rc, l
	}
	if lc == nil {
		return unknownCond
	}
	v, null, ok := constString(r)
	if !ok {
		return unknownCond
	}
	switch t {
	case "COMPARE_NOT_DISTINCT_FROM", "COMPARE_DISTINCT_FROM":
		// `_file_` is never NULL, so these are = / <> without the NULL case.
		if null {
			n := &fnode{op: opNever}
			if t == "COMPARE_DISTINCT_FROM" {
				return atom(lc, notNode(n))
			}
			return atom(lc, n)
		}
		if t == "COMPARE_DISTINCT_FROM" {
			return atom(lc, &fnode{op: opNe, vals: []string{v}})
		}
		return atom(lc, &fnode{op: opEq, vals: []string{v}})
	case "COMPARE_NOTEQUAL":
		return atom(lc, &fnode{op: opNe, vals: nonNull(v, null), null: null})
	}
	return atom(lc, &fnode{op: opEq, vals: nonNull(v, null), null: null})
}

func (c *selectCtx) in(not bool, kids []any) *cond {
	if len(kids) < 2 {
		return unknownCond
	}
	col := c.resolve(kids[0])
	if col == nil {
		return unknownCond
	}
	n := &fnode{op: opIn}
	if not {
		n.op = opNotIn
	}
	for _, k := range kids[1:] {
		v, null, ok := constString(k)
		if !ok {
			return unknownCond
		}
		n.vals = append(n.vals, nonNull(v, null)...)
		n.null = n.null || null
	}
	return atom(col, n)
}

// like handles `~~` / `!~~` (LIKE / NOT LIKE) and their ESCAPE forms.
func (c *selectCtx) like(name string, kids []any) *cond {
	var op fop
	switch name {
	case "~~", "like_escape":
		op = opLike
	case "!~~", "not_like_escape":
		op = opNotLike
	default:
		return unknownCond
	}
	escaped := strings.HasSuffix(name, "_escape")
	if (escaped && len(kids) != 3) || (!escaped && len(kids) != 2) {
		return unknownCond
	}
	col := c.resolve(kids[0])
	pattern, null, ok := constString(kids[1])
	if col == nil || !ok {
		return unknownCond
	}
	n := &fnode{op: op, vals: []string{pattern}, null: null}
	if escaped {
		esc, escNull, ok := constString(kids[2])
		if !ok || escNull {
			return unknownCond
		}
		n.escape = esc
	}
	return atom(col, n)
}

func nonNull(v string, null bool) []string {
	if null {
		return nil
	}
	return []string{v}
}

// constString reads a VARCHAR or NULL constant. Other types are not
// recognized: comparing `_file_` with them involves casts.
func constString(e any) (v string, null, ok bool) {
	m := obj(e)
	if str(m, "class") != "CONSTANT" {
		return "", false, false
	}
	val := obj(m["value"])
	if isNull, _ := val["is_null"].(bool); isNull {
		return "", true, true
	}
	if str(obj(val["type"]), "id") != "VARCHAR" {
		return "", false, false
	}
	v, ok = val["value"].(string)
	return v, false, ok
}

// conjuncts flattens top-level ANDs.
func (c *cond) conjuncts(out []*cond) []*cond {
	if c.op == opAnd {
		for _, k := range c.kids {
			out = k.conjuncts(out)
		}
		return out
	}
	return append(out, c)
}

// filterFor builds the candidate filter of a Dataset leaf: the conjunction
// of its conditions, where `_file_` atoms on any column known equal to the
// leaf's `_file_` (through top-level equality conjuncts) are evaluated and
// everything else is unknown.
func filterFor(l *from) FileFilter {
	if !l.usable || len(l.app) == 0 {
		return FileFilter{}
	}
	uf := unionFind{}
	var conjs []*cond
	for _, p := range l.app {
		if p.a != nil {
			uf.union(p.a, p.b)
			continue
		}
		conjs = p.c.conjuncts(conjs)
	}
	for _, k := range conjs {
		if k.eq[0] != nil {
			uf.union(k.eq[0], k.eq[1])
		}
	}
	root := uf.find(l)
	member := func(x *from) bool { return x == l || uf.find(x) == root }
	var kids []*fnode
	for _, k := range conjs {
		kids = append(kids, k.filter(member))
	}
	n := topAnd(kids)
	if n.op == opAny {
		return FileFilter{}
	}
	return FileFilter{root: n}
}

// filter maps a compiled condition to a filter tree for one leaf.
func (c *cond) filter(member func(*from) bool) *fnode {
	if c.node != nil {
		if member(c.col) {
			return c.node
		}
		return anyNode
	}
	switch c.op {
	case opAnd, opOr:
		ks := make([]*fnode, len(c.kids))
		for i, k := range c.kids {
			ks[i] = k.filter(member)
		}
		if c.op == opAnd {
			return andNodes(ks)
		}
		return orNodes(ks)
	case opNot:
		return notNode(c.kids[0].filter(member))
	}
	return anyNode
}

type unionFind map[any]any

func (u unionFind) find(x any) any {
	for {
		p, ok := u[x]
		if !ok || p == x {
			return x
		}
		if gp, ok := u[p]; ok {
			u[x] = gp // path halving keeps finds near-constant
		}
		x = p
	}
}

func (u unionFind) union(x, y any) {
	rx, ry := u.find(x), u.find(y)
	if rx != ry {
		u[rx] = ry
	}
}

// checkJoins enforces the join rule (docs/sql.md): within one FROM, every
// two inputs that read trajectory relations of the same Dataset must be
// connected by equalities of their `_file_` (ON, WHERE, USING, NATURAL, or
// both pinned to the same constant), whatever the join type. An input's
// `_file_` connects it for a Dataset only when it provably is that
// Dataset's `_file_` (columns.go), so the connections are kept per Dataset.
func (c *selectCtx) checkJoins(where *cond) error {
	var parts []*from
	for _, l := range c.leaves {
		if len(l.touches) > 0 {
			parts = append(parts, l)
		}
	}
	if len(parts) < 2 {
		return nil
	}
	uf := unionFind{}
	joinEdges(uf, where)
	c.walkJoins(c.root, func(j *from) {
		joinEdges(uf, j.on)
		if !j.mergesCol(colFile) {
			return
		}
		// USING (_file_) and NATURAL merge the `_file_` of both sides (a
		// NATURAL join only when both have one). Joining, per Dataset, every
		// input on the left with every one on the right connects them all.
		for _, d := range slices.Sorted(maps.Keys(j.touchedDatasets())) {
			left, right := j.left.fileLeaves(d), j.right.fileLeaves(d)
			if len(left) == 0 || len(right) == 0 {
				continue
			}
			for _, l := range append(left[1:], right...) {
				uf.union(fileNode{left[0], d}, fileNode{l, d})
			}
		}
	})
	touched := map[string]bool{}
	for _, p := range parts {
		for d := range p.touches {
			touched[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(touched)) {
		var first *from
		for _, p := range parts {
			if !p.touches[d] {
				continue
			}
			if first == nil {
				first = p
				continue
			}
			if uf.find(fileNode{first, d}) != uf.find(fileNode{p, d}) {
				x, y := bindingOr(first, "a"), bindingOr(p, "b")
				return reject("joining %s and %s needs an equality on _file_ between them "+
					"(e.g. ON %s._file_ = %s._file_ AND %s.session_id = %s.session_id, or USING (_file_, session_id)): "+
					"session_id and run_id are unique only inside one source of Dataset %s%s",
					first.label, p.label, x, y, x, y, d, notBaseFile(d, first, p))
			}
		}
	}
	return nil
}

// notBaseFile explains a rejection caused by a derived table or CTE whose
// column `_file_` is not the Dataset's `_file_` itself.
func notBaseFile(d string, leaves ...*from) string {
	for _, l := range leaves {
		if files, has := l.cols.file(); has && !files[d] && l.ref < 0 {
			return fmt.Sprintf("; the _file_ of %s is not %s's _file_ passed through unchanged "+
				"(an expression, constant, aggregate or REPLACE names a column _file_ whose values do not say which source a row came from): "+
				"select _file_ itself, e.g. SELECT _file_, session_id, … GROUP BY _file_, session_id", l.label, d)
		}
	}
	return ""
}

// fileNode is one FROM input's `_file_` as the `_file_` of one Dataset; two
// nodes connected by equalities hold the same source of that Dataset.
type fileNode struct {
	leaf    *from
	dataset string
}

// fileLeaves are the subtree's inputs whose `_file_` provably is Dataset d's.
func (n *from) fileLeaves(d string) []*from {
	var out []*from
	for _, l := range n.leaves(nil) {
		if files, _ := l.cols.file(); files[d] {
			out = append(out, l)
		}
	}
	return out
}

// touchedDatasets are the Datasets the subtree's inputs read.
func (n *from) touchedDatasets() map[string]bool {
	out := map[string]bool{}
	for _, l := range n.leaves(nil) {
		for d := range l.touches {
			out[d] = true
		}
	}
	return out
}

func bindingOr(l *from, fallback string) string {
	if l.name != "" {
		return l.name
	}
	return fallback
}

func (c *selectCtx) walkJoins(n *from, fn func(*from)) {
	if n.leaf {
		return
	}
	fn(n)
	c.walkJoins(n.left, fn)
	c.walkJoins(n.right, fn)
}

// joinEdges adds the `_file_` equalities of a condition's top-level
// conjuncts, including two columns pinned to the same constant, for each
// Dataset whose `_file_` both sides provably are.
func joinEdges(uf unionFind, c *cond) {
	if c == nil {
		return
	}
	for _, k := range c.conjuncts(nil) {
		switch {
		case k.eq[0] != nil:
			a, _ := k.eq[0].cols.file()
			b, _ := k.eq[1].cols.file()
			for d := range a {
				if b[d] {
					uf.union(fileNode{k.eq[0], d}, fileNode{k.eq[1], d})
				}
			}
		case k.node != nil && k.node.op == opEq && len(k.node.vals) == 1 && !k.node.null:
			files, _ := k.col.cols.file()
			for d := range files {
				uf.union(fileNode{k.col, d}, [2]string{d, k.node.vals[0]})
			}
		}
	}
}
