package format

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Hot-path decoding. Unmarshalling a record, then its members, then each
// string validates the same bytes again at every level, which dominated
// adapter profiles. Records are therefore validated once (jsonx.Valid) and
// then split structurally by these functions: the members and elements they
// return alias the record's bytes, so they must not outlive it. They assume
// valid JSON input.

// Object is SplitObject for a value that may not be valid JSON: the
// members of raw when it is a valid JSON object, else nil — what decoding
// into a map gives (nil for null, an error for anything else), without a
// copy of every member. The members alias raw.
func Object(raw []byte) map[string]jsonx.RawMessage {
	if !jsonx.Valid(raw) {
		return nil
	}
	return SplitObject(raw)
}

// Array is SplitArray for a value that may not be valid JSON, as decoding
// into a slice would: ok for a valid array, and for null (no elements).
func Array(raw []byte) ([][]byte, bool) {
	if !jsonx.Valid(raw) {
		return nil, false
	}
	if IsNull(raw) {
		return nil, true
	}
	return SplitArray(raw)
}

// ObjectArray is Array of objects, as decoding into a slice of maps would:
// ok unless raw is not a valid array or an element is neither an object
// nor null (which gives a nil map).
func ObjectArray(raw []byte) ([]map[string]jsonx.RawMessage, bool) {
	elems, ok := Array(raw)
	if !ok {
		return nil, false
	}
	var out []map[string]jsonx.RawMessage
	if elems != nil {
		out = make([]map[string]jsonx.RawMessage, len(elems))
	}
	for i, e := range elems {
		if out[i] = SplitObject(e); out[i] == nil && !IsNull(e) {
			return nil, false
		}
	}
	return out, true
}

// SplitObject returns the members of the valid JSON value raw, or nil when
// it is not an object. A repeated key keeps its last value, as decoders do.
func SplitObject(raw []byte) map[string]jsonx.RawMessage {
	m := make(map[string]jsonx.RawMessage, 8)
	if !SplitObjectInto(m, raw) {
		return nil
	}
	return m
}

// SplitObjectInto is SplitObject into m, cleared first, and reports
// whether raw is an object: a reader of many records can reuse one map
// rather than allocate one per record, which showed in profiles.
func SplitObjectInto(m map[string]jsonx.RawMessage, raw []byte) bool {
	clear(m)
	return EachMember(raw, func(key string, val []byte) { m[key] = val })
}

// EachMemberName is EachMember with each member name as matching needs
// it, without a string per member: its bytes between the quotes, decoded
// only when escaped (or not valid UTF-8).
func EachMemberName(raw []byte, fn func(name, val []byte)) bool {
	return eachMember(raw, func(key, val []byte) { fn(MemberName(key), val) })
}

// Fields looks the members named keys up in the valid JSON value raw
// without building a map: vals[i] gets the value of keys[i] (the last one
// when repeated, as SplitObject keeps) and is left alone when keys[i] is
// absent. keys must be distinct. It reports whether raw is an object.
func Fields(raw []byte, keys []string, vals [][]byte) bool {
	return EachMemberName(raw, func(name, val []byte) {
		for i, k := range keys {
			if string(name) == k {
				vals[i] = val
				break
			}
		}
	})
}

// MemberName is the member name key (a JSON string, quotes included) as
// memberKey decodes it; a name without escapes or invalid UTF-8 (which
// decodes to U+FFFD) is its bytes, without a copy. ASCII names, nearly all
// of them, are checked in one pass.
func MemberName(key []byte) []byte {
	n := len(key)
	if n < 2 {
		return []byte(String(key))
	}
	body := key[1 : n-1]
	if plainName(body) || bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return body
	}
	return []byte(String(key))
}

// plainName reports whether a name has neither a backslash nor a byte of
// 0x80 or more, testing eight bytes at a time (a short name's two
// overlapping halves at once): a byte at a time was a twentieth of the
// Codex profile.
func plainName(b []byte) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	flagged := func(x uint64) bool { // a byte >= 0x80, or a zero byte of x^'\\'s
		s := x ^ (lsb * '\\')
		return (x|(s-lsb)&^s)&msb != 0
	}
	n := len(b)
	switch {
	case n >= 8:
		for i := 0; i+8 <= n; i += 8 {
			if flagged(binary.LittleEndian.Uint64(b[i:])) {
				return false
			}
		}
		return !flagged(binary.LittleEndian.Uint64(b[n-8:]))
	case n >= 4:
		return !flagged(uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32)
	}
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// EachMember calls fn for every member of the valid JSON value raw, in
// document order (duplicates included, for strict readers), and reports
// whether raw is an object.
func EachMember(raw []byte, fn func(key string, val []byte)) bool {
	return eachMember(raw, func(key, val []byte) { fn(memberKey(key), val) })
}

// eachMember is EachMember with each member name as it is written (a JSON
// string), for callers that compare names rather than keep them.
func eachMember(raw []byte, fn func(key, val []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	members(raw, i, fn)
	return true
}

// members calls fn for every member of the valid JSON object at raw[i]
// and returns the index just after it.
func members(raw []byte, i int, fn func(key, val []byte)) int {
	return WalkMembers(raw, i, func(key []byte, v int) int {
		end := skipValue(raw, v)
		fn(key, raw[v:end])
		return end
	})
}

// WalkMembers calls fn for every member of the valid JSON object at raw[i]
// with its name as written (a JSON string) and the index of its value,
// and returns the index just after the object. fn returns the index just
// after the value when it read the value itself, or -1 to have it stepped
// over: a reader that splits a document level by level that way reads
// each byte once, where splitting each level's values again read the
// deepest bytes once per level (Inspect logs).
func WalkMembers(raw []byte, i int, fn func(key []byte, v int) int) int {
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		end := skipValue(raw, i)
		key := raw[i:end]
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // ':'
		if end = fn(key, i); end < 0 {
			end = skipValue(raw, i)
		}
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return i + 1 // '}'
}

// WalkElements is WalkMembers for the elements of the valid JSON array at
// raw[i]: fn gets the index of each element.
func WalkElements(raw []byte, i int, fn func(v int) int) int {
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] != ']' {
		end := fn(i)
		if end < 0 {
			end = skipValue(raw, i)
		}
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return i + 1 // ']'
}

// SkipValue returns the index just after the valid JSON value at raw[i]
// (no leading space), for a WalkMembers or WalkElements reader.
func SkipValue(raw []byte, i int) int { return skipValue(raw, i) }

// SplitObjects is SplitArray of objects, each split as SplitObject splits
// it, in one pass rather than a pass for the elements and one for each
// element's members (the steps of a document are most of its bytes). It
// is ok, as decoding into a slice of maps is, for an array of objects and
// nulls (a nil map) and for null (no elements); the members alias raw.
func SplitObjects(raw []byte) ([]map[string]jsonx.RawMessage, bool) {
	if IsNull(raw) {
		return nil, true
	}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	var out []map[string]jsonx.RawMessage
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != ']'; {
		var m map[string]jsonx.RawMessage
		if raw[i] == '{' {
			m = make(map[string]jsonx.RawMessage, 8)
			i = members(raw, i, func(key, val []byte) { m[memberKey(key)] = val })
		} else {
			end := skipValue(raw, i)
			if string(raw[i:end]) != "null" {
				return nil, false
			}
			i = end
		}
		out = append(out, m)
		if i = skipSpace(raw, i); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out, true
}

// keys caches member names: a record's keys repeat on every line, and a
// new string per key per record was a large share of the allocations. It
// is direct-mapped by a hash of the name; a collision just replaces the
// entry, and concurrent use is safe (each slot is one atomic pointer).
var keys [4096]atomic.Pointer[string]

// memberKey decodes a member name (a JSON string), reusing the cached
// string for a name that decodes to its own bytes.
func memberKey(raw []byte) string {
	n := len(raw)
	if n < 2 || n > 66 || bytes.IndexByte(raw, '\\') >= 0 {
		return String(raw)
	}
	h := uint32(2166136261)
	for _, c := range raw[1 : n-1] {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &keys[h%uint32(len(keys))]
	if p := slot.Load(); p != nil && *p == string(raw[1:n-1]) {
		return *p
	}
	s := String(raw)
	if s == string(raw[1:n-1]) { // a hit is then right for any input
		slot.Store(&s)
	}
	return s
}

// Symbol is String for a value drawn from a small set that repeats across
// records (a type, role or tool name): it is cached with the member names,
// so a repeated value is not allocated again. Ids and text must not go
// through it, or they would evict the names.
func Symbol(raw []byte) string {
	if len(raw) == 0 { // absent (see String)
		return ""
	}
	return symbolValue(raw)
}

func symbolValue(raw []byte) string {
	raw = TrimSpace(raw)
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		return memberKey(raw)
	}
	return String(raw)
}

// JoinArray is SplitArray's inverse: the JSON array of the given elements.
func JoinArray(elems [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(elems, []byte{','})...), ']')
}

// SplitArray returns the elements of the valid JSON value raw, and false
// when it is not an array.
func SplitArray(raw []byte) ([][]byte, bool) { return AppendElements(nil, raw) }

// AppendElements is SplitArray appending to elems (returned unchanged
// when raw is not an array), for a reader of many arrays that reuses one
// slice.
func AppendElements(elems [][]byte, raw []byte) ([][]byte, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return elems, false
	}
	WalkElements(raw, i, func(v int) int {
		end := skipValue(raw, v)
		elems = append(elems, raw[v:end])
		return end
	})
	return elems, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r':
			i++
		case '\n':
			i = jsonx.SpacesEnd(b, i+1)
		default:
			return i
		}
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
			default:
				i = structuralByte(b, i+1)
				continue
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

// structuralByte returns the index of the first quote, brace or bracket
// at or after b[i] (or of one of the last seven bytes, before it), eight
// bytes at a time: between them a container holds spaces, separators and
// numbers, and the arrays of token ids and logprobs some producers write
// (ATIF metrics) made a byte-by-byte skip the largest cost of splitting
// them. The lowest flagged byte of a word is exact, so the byte is found
// in the word rather than tested again from each byte before it (between
// the members of a pretty-printed document, a fifth of its skip).
func structuralByte(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(b) {
		// Setting bit 5 maps '[' to '{' and ']' to '}' (and only control
		// bytes, which cannot occur outside strings, to '"').
		w := binary.LittleEndian.Uint64(b[i:]) | 0x2020202020202020
		q, o, c := w^('"'*ones), w^('{'*ones), w^('}'*ones)
		if hit := ((q-ones)&^q | (o-ones)&^o | (c-ones)&^c) & highs; hit != 0 {
			return i + bits.TrailingZeros64(hit)/8
		}
		i += 8
	}
	return i
}

// skipString returns the index just after the string starting at b[i].
func skipString(b []byte, i int) int { return jsonx.StringEnd(b, i) }
