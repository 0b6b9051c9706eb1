package cli

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/pchronicle/pchronicle/internal/engine"
)

// A PIVOT statement without an IN list is two statements in DuckDB: one
// that makes an ENUM type of the ON column's distinct values, then the
// pivot. The first is a write, which the sandbox rejects, so query does
// what DuckDB does, read-only: it asks for the distinct values with a
// SELECT (analyzed and sandboxed like any query), writes them into the IN
// list, and runs the PIVOT as a subquery, the form the sandbox admits
// (docs/sql.md, "Allowed statements").

// valuesQuerier runs the query that finds a PIVOT's values.
type valuesQuerier interface {
	Query(ctx context.Context, sql string, opts engine.QueryOptions) (*engine.Result, error)
}

// expandPivot returns sqlText unchanged unless it is a top-level PIVOT
// statement; then it returns the same PIVOT as a query, with every ON
// expression that has no IN list given the values it takes in the data.
func expandPivot(ctx context.Context, q valuesQuerier, sqlText string) (string, error) {
	start := skipSpaceAndComments(sqlText, 0)
	if !keywordAt(sqlText, start, "PIVOT") {
		return sqlText, nil
	}
	body := strings.TrimRight(sqlText, " \t\r\n;")
	on, _ := topLevelKeyword(body, start+len("PIVOT"), "ON")
	if on < 0 {
		return sqlText, nil // DuckDB says what is wrong
	}
	source := strings.TrimSpace(body[start+len("PIVOT") : on])
	end, _ := topLevelKeyword(body, on+len("ON"), "USING", "GROUP", "ORDER", "LIMIT")
	if end < 0 {
		end = len(body)
	}
	exprs := splitTopLevel(body[on+len("ON"):end], ',')
	for i, e := range exprs {
		if in, _ := topLevelKeyword(e, 0, "IN"); in >= 0 {
			continue
		}
		expr := strings.TrimSpace(e)
		res, err := q.Query(ctx, fmt.Sprintf("SELECT DISTINCT CAST((%s) AS VARCHAR) FROM %s WHERE (%s) IS NOT NULL ORDER BY 1", expr, source, expr), engine.QueryOptions{})
		if err != nil {
			return "", fmt.Errorf("finding the values of the PIVOT's ON %s: %w", expr, err)
		}
		if len(res.Rows) == 0 {
			return "", fmt.Errorf("the PIVOT's ON %s has no values (every row is NULL, or there are no rows)", expr)
		}
		values := make([]string, len(res.Rows))
		for j, r := range res.Rows {
			values[j] = sqlLiteral(plain(r[0]))
		}
		exprs[i] = " " + expr + " IN (" + strings.Join(values, ", ") + ") "
	}
	return "SELECT * FROM (PIVOT " + source + " ON" + strings.Join(exprs, ",") + body[end:] + ")", nil
}

// skipSpaceAndComments returns the position of the first byte at or after
// i that is neither white space nor inside a -- or /* */ comment.
func skipSpaceAndComments(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r':
			i++
		case strings.HasPrefix(s[i:], "--"):
			n := strings.IndexByte(s[i:], '\n')
			if n < 0 {
				return len(s)
			}
			i += n + 1
		case strings.HasPrefix(s[i:], "/*"):
			n := strings.Index(s[i:], "*/")
			if n < 0 {
				return len(s)
			}
			i += n + 2
		default:
			return i
		}
	}
	return i
}

// keywordAt reports whether the word w (any case) starts at i and ends at
// a word boundary.
func keywordAt(s string, i int, w string) bool {
	if i < 0 || i+len(w) > len(s) || !strings.EqualFold(s[i:i+len(w)], w) {
		return false
	}
	if i > 0 && isWordByte(s[i-1]) {
		return false
	}
	return i+len(w) == len(s) || !isWordByte(s[i+len(w)])
}

func isWordByte(b byte) bool {
	return b == '_' || unicode.IsLetter(rune(b)) || unicode.IsDigit(rune(b))
}

// topLevelKeyword finds the first of words at or after i that is outside
// quotes, comments and parentheses; -1 when there is none.
func topLevelKeyword(s string, i int, words ...string) (int, string) {
	depth := 0
	for i < len(s) {
		if j := skipSpaceAndComments(s, i); j != i {
			i = j
			continue
		}
		switch c := s[i]; c {
		case '\'', '"':
			n := strings.IndexByte(s[i+1:], c)
			if n < 0 {
				return -1, ""
			}
			i += n + 2
			continue
		case '(':
			depth++
		case ')':
			depth--
		default:
			if depth == 0 {
				for _, w := range words {
					if keywordAt(s, i, w) {
						return i, w
					}
				}
			}
		}
		i++
	}
	return -1, ""
}

// splitTopLevel splits s at sep outside quotes and parentheses.
func splitTopLevel(s string, sep byte) []string {
	var parts []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			if n := strings.IndexByte(s[i+1:], c); n >= 0 {
				i += n + 1
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[last:i])
			last = i + 1
		}
	}
	return append(parts, s[last:])
}
