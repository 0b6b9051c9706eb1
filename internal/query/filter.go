package query

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// FileFilter is a conservative predicate over a source's constant `_file_`
// value, built from the `_file_` atoms of the conjuncts that every row read
// through one table reference must satisfy. Every other atom is unknown
// (may be TRUE, FALSE or NULL), so the filter over-approximates: MayMatch is
// false only when the predicate can never be TRUE for that file.
//
// The zero value matches every file.
type FileFilter struct{ root *fnode }

// MayMatch reports whether rows with this `_file_` value can satisfy the
// predicate. False means the source can be skipped without changing the
// query result.
func (f FileFilter) MayMatch(file string) bool {
	if f.root == nil {
		return true
	}
	return f.root.eval(file)&truthTrue != 0
}

// Unconstrained reports whether the filter admits every file, so a caller
// can skip per-file evaluation.
func (f FileFilter) Unconstrained() bool { return f.root == nil || f.root.op == opAny }

// String renders the filter for tests and diagnostics; `?` is an unknown atom.
func (f FileFilter) String() string {
	if f.root == nil {
		return "?"
	}
	var b strings.Builder
	f.root.format(&b)
	return b.String()
}

// truth is a set of possible SQL truth values.
type truth uint8

const (
	truthTrue truth = 1 << iota
	truthFalse
	truthNull
	truthAny = truthTrue | truthFalse | truthNull
)

type fop uint8

const (
	opAny   fop = iota // unknown atom
	opNever            // never TRUE (DESCRIBE reads no rows)
	opAnd
	opOr
	opNot
	opEq
	opNe
	opIn
	opNotIn
	opLike
	opNotLike
)

// fnode is one node of the predicate tree. For comparison atoms, vals are
// the non-NULL constants and null tells whether a NULL constant was present
// (for LIKE: the pattern is NULL).
type fnode struct {
	op     fop
	kids   []*fnode
	vals   []string
	null   bool
	escape string // LIKE escape character, "" for none
}

var anyNode = &fnode{op: opAny}

func (n *fnode) eval(file string) truth {
	switch n.op {
	case opNever:
		return truthFalse
	case opAnd, opOr:
		acc := n.kids[0].eval(file)
		for _, k := range n.kids[1:] {
			acc = combine(acc, k.eval(file), n.op == opAnd)
		}
		return acc
	case opNot:
		return negate(n.kids[0].eval(file))
	case opEq, opIn:
		return n.evalIn(file)
	case opNe, opNotIn:
		return negate(n.evalIn(file))
	case opLike:
		return n.evalLike(file)
	case opNotLike:
		return negate(n.evalLike(file))
	}
	return truthAny
}

// evalIn is SQL `file IN (vals, [NULL])`; `=` is the one-value case.
func (n *fnode) evalIn(file string) truth {
	for _, v := range n.vals {
		if v == file {
			return truthTrue
		}
	}
	if n.null {
		return truthNull
	}
	return truthFalse
}

func (n *fnode) evalLike(file string) truth {
	if n.null {
		return truthNull
	}
	switch likeMatch(file, n.vals[0], n.escape) {
	case likeYes:
		return truthTrue
	case likeNo:
		return truthFalse
	}
	return truthAny
}

func negate(t truth) truth {
	out := t & truthNull
	if t&truthTrue != 0 {
		out |= truthFalse
	}
	if t&truthFalse != 0 {
		out |= truthTrue
	}
	return out
}

// combine applies three-valued AND/OR to every pair of possible values;
// treating the operands as independent can only widen the result.
func combine(a, b truth, and bool) truth {
	var out truth
	for _, x := range []truth{truthTrue, truthFalse, truthNull} {
		if a&x == 0 {
			continue
		}
		for _, y := range []truth{truthTrue, truthFalse, truthNull} {
			if b&y != 0 {
				out |= combine1(x, y, and)
			}
		}
	}
	return out
}

func combine1(x, y truth, and bool) truth {
	dominant, neutral := truthFalse, truthTrue // AND
	if !and {
		dominant, neutral = truthTrue, truthFalse
	}
	switch {
	case x == dominant || y == dominant:
		return dominant
	case x == neutral && y == neutral:
		return neutral
	}
	return truthNull
}

// andNodes keeps unknown children: under a NOT, `? AND x` can be FALSE
// even where x is TRUE, so dropping them would be unsound. Only the top
// level of a filter (never negated) drops them, see topAnd.
func andNodes(kids []*fnode) *fnode {
	for _, k := range kids {
		if k.op != opAny {
			if len(kids) == 1 {
				return kids[0]
			}
			return &fnode{op: opAnd, kids: kids}
		}
	}
	return anyNode
}

// topAnd conjoins the predicates a row must satisfy; only TRUE matters
// there, and `? AND x` can be TRUE exactly when x can.
func topAnd(kids []*fnode) *fnode {
	var keep []*fnode
	for _, k := range kids {
		if k.op != opAny {
			keep = append(keep, k)
		}
	}
	return andNodes(keep)
}

// orNodes folds to unknown when any child is unknown: a superset of the
// exact truth set, so still sound under NOT.
func orNodes(kids []*fnode) *fnode {
	for _, k := range kids {
		if k.op == opAny {
			return anyNode
		}
	}
	if len(kids) == 1 {
		return kids[0]
	}
	return &fnode{op: opOr, kids: kids}
}

func notNode(k *fnode) *fnode {
	if k.op == opAny {
		return anyNode
	}
	return &fnode{op: opNot, kids: []*fnode{k}}
}

func (n *fnode) format(b *strings.Builder) {
	names := map[fop]string{opEq: "=", opNe: "<>", opIn: "IN", opNotIn: "NOT IN", opLike: "LIKE", opNotLike: "NOT LIKE"}
	switch n.op {
	case opAny:
		b.WriteString("?")
	case opNever:
		b.WriteString("never")
	case opAnd, opOr:
		sep := " AND "
		if n.op == opOr {
			sep = " OR "
		}
		b.WriteString("(")
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(sep)
			}
			k.format(b)
		}
		b.WriteString(")")
	case opNot:
		b.WriteString("NOT ")
		n.kids[0].format(b)
	default:
		b.WriteString("_file_ " + names[n.op] + " ")
		var vals []string
		for _, v := range n.vals {
			vals = append(vals, strconv.Quote(v))
		}
		if n.null {
			vals = append(vals, "NULL")
		}
		b.WriteString(strings.Join(vals, ", "))
		if n.escape != "" {
			b.WriteString(" ESCAPE " + strconv.Quote(n.escape))
		}
	}
}

type likeResult uint8

const (
	likeNo likeResult = iota
	likeYes
	likeUnknown // DuckDB would raise an error or the text is not UTF-8
)

// likeMatch implements DuckDB's case-sensitive LIKE: `%` matches any
// sequence, `_` exactly one character (code point), no default escape, and
// an optional one-character escape that makes the next character literal.
// DuckDB treats a wildcard used as the escape inconsistently (as escape or
// as wildcard depending on position), so that case is left unknown.
func likeMatch(s, pattern, escape string) likeResult {
	if !utf8.ValidString(s) || !utf8.ValidString(pattern) || utf8.RuneCountInString(escape) > 1 ||
		escape == "%" || escape == "_" {
		return likeUnknown
	}
	pat, err := likeTokens(pattern, escape)
	if err {
		return likeUnknown
	}
	if likeRunes([]rune(s), pat) {
		return likeYes
	}
	return likeNo
}

// likeTok is a pattern element: a literal rune, or -1 for `%`, -2 for `_`.
type likeTok = rune

const (
	tokAnyseq likeTok = -1
	tokOne    likeTok = -2
)

func likeTokens(pattern, escape string) ([]likeTok, bool) {
	esc, _ := utf8.DecodeRuneInString(escape)
	var toks []likeTok
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case escape != "" && r == esc:
			if i+1 == len(rs) {
				return nil, true // DuckDB: pattern must not end with the escape
			}
			i++
			toks = append(toks, rs[i])
		case r == '%':
			toks = append(toks, tokAnyseq)
		case r == '_':
			toks = append(toks, tokOne)
		default:
			toks = append(toks, r)
		}
	}
	return toks, false
}

// likeRunes is the classic greedy matcher with one backtrack point per `%`;
// it runs in O(len(s)*len(p)).
func likeRunes(s []rune, p []likeTok) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == tokOne || p[pi] == s[si]):
			si++
			pi++
		case pi < len(p) && p[pi] == tokAnyseq:
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == tokAnyseq {
		pi++
	}
	return pi == len(p)
}

// Values returns a finite set of values outside which the filter can never
// be TRUE, when the filter proves one (an =/IN atom, an AND holding one, an
// OR of such); ok is false otherwise. Point lookups use it to read only the
// named sessions.
func (f FileFilter) Values() (vals []string, ok bool) {
	if f.root == nil {
		return nil, false
	}
	return f.root.values()
}

func (n *fnode) values() ([]string, bool) {
	switch n.op {
	case opNever:
		return []string{}, true
	case opEq, opIn:
		return n.vals, true
	case opAnd:
		// Any finite conjunct bounds the whole conjunction; take the smallest.
		var best []string
		found := false
		for _, k := range n.kids {
			if v, ok := k.values(); ok && (!found || len(v) < len(best)) {
				best, found = v, true
			}
		}
		return best, found
	case opOr:
		var all []string
		for _, k := range n.kids {
			v, ok := k.values()
			if !ok {
				return nil, false
			}
			all = append(all, v...)
		}
		return all, true
	}
	return nil, false
}
