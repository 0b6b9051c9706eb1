package format

import (
	"bytes"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Hot-path decoding. Unmarshalling a record, then its members, then each
// string validates the same bytes again at every level, which dominated
// adapter profiles. Records are therefore validated once (jsonx.Valid) and
// then split structurally by these functions: the members and elements they
// return alias the record's bytes, so they must not outlive it. They assume
// valid JSON input.

// SplitObject returns the members of the valid JSON value raw, or nil when
// it is not an object. A repeated key keeps its last value, as decoders do.
func SplitObject(raw []byte) map[string]jsonx.RawMessage {
	m := make(map[string]jsonx.RawMessage, 8)
	if !EachMember(raw, func(key string, val []byte) { m[key] = val }) {
		return nil
	}
	return m
}

// EachMember calls fn for every member of the valid JSON value raw, in
// document order (duplicates included, for strict readers), and reports
// whether raw is an object.
func EachMember(raw []byte, fn func(key string, val []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		end := skipValue(raw, i)
		key := String(raw[i:end])
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // ':'
		end = skipValue(raw, i)
		fn(key, raw[i:end])
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return true
}

// JoinArray is SplitArray's inverse: the JSON array of the given elements.
func JoinArray(elems [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(elems, []byte{','})...), ']')
}

// SplitArray returns the elements of the valid JSON value raw, and false
// when it is not an array.
func SplitArray(raw []byte) ([][]byte, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	var elems [][]byte
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] != ']' {
		end := skipValue(raw, i)
		elems = append(elems, raw[i:end])
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return elems, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the valid JSON value at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the index just after the string starting at b[i].
func skipString(b []byte, i int) int { return jsonx.StringEnd(b, i) }
