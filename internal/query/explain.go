package query

// json_serialize_sql cannot serialize EXPLAIN, so a leading
// EXPLAIN [ANALYZE] is recognized here and the wrapped statement is
// validated on its own. The scan follows DuckDB's Postgres-derived lexer:
// ASCII whitespace, `--` line comments and nested `/* */` block comments.
// Anything it does not recognize is left in place, so DuckDB's parser sees
// the keyword and rejects the text as a non-SELECT statement: a mistake
// here can only reject a query, never admit a different one.

// splitExplain returns the statement wrapped by a leading EXPLAIN or
// EXPLAIN ANALYZE (or ANALYSE), or sql unchanged.
func splitExplain(sql string) (body string, explain, analyze bool) {
	i := skipBlank(sql, 0)
	j, ok := keyword(sql, i, "explain")
	if !ok {
		return sql, false, false
	}
	k := skipBlank(sql, j)
	if e, ok := keyword(sql, k, "analyze"); ok {
		return sql[e:], true, true
	}
	if e, ok := keyword(sql, k, "analyse"); ok {
		return sql[e:], true, true
	}
	return sql[j:], true, false
}

// skipBlank returns the index of the first byte after whitespace and
// comments starting at i. An unterminated block comment swallows the rest.
func skipBlank(s string, i int) int {
	for i < len(s) {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			i = skipBlockComment(s, i)
		default:
			return i
		}
	}
	return i
}

func skipBlockComment(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*':
			depth++
			i += 2
		case s[i] == '*' && i+1 < len(s) && s[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// keyword matches an ASCII keyword case-insensitively at i, followed by a
// byte that cannot continue an identifier (non-ASCII bytes can).
func keyword(s string, i int, kw string) (end int, ok bool) {
	if i+len(kw) > len(s) {
		return 0, false
	}
	for n := 0; n < len(kw); n++ {
		c := s[i+n]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != kw[n] {
			return 0, false
		}
	}
	end = i + len(kw)
	if end < len(s) && identByte(s[end]) {
		return 0, false
	}
	return end, true
}

func identByte(c byte) bool {
	return c >= 0x80 || c == '_' || c == '$' ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
