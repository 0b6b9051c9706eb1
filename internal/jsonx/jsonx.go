// Package jsonx is the one place that chooses the JSON codec used on hot
// paths (adapters, stores). Callers use these functions, never a codec
// package directly, so the choice can be re-measured and changed in one spot.
//
// Decoding uses github.com/goccy/go-json: on agent trajectories (deeply
// nested objects decoded into raw-message maps) it measured 3–30x faster
// than encoding/json with identical results on every golden file (see
// docs/performance.md); the adapters' fuzz targets run through it. Encoding
// stays on encoding/json, because goccy's MarshalNoEscape (v0.12.0) still
// escapes '<', '>' and '&', which would bloat and alter stored text.
package jsonx

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"strings"

	gojson "github.com/goccy/go-json"
)

// RawMessage is a raw encoded JSON value.
type RawMessage = json.RawMessage

// Unmarshal decodes data into v.
func Unmarshal(data []byte, v any) error { return gojson.Unmarshal(data, v) }

// Valid reports whether data is valid JSON.
func Valid(data []byte) bool { return gojson.Valid(data) }

// Compact returns src without insignificant space, as encoding/json's
// Compact writes it, and false when src is not valid JSON. It validates
// with the fast codec, then copies the bytes outside strings that are not
// space; a value that has no such space (the usual case for JSON Lines) is
// returned as it is, without a copy. encoding/json's byte-at-a-time state
// machine cost a fifth of some adapters' time in profiles.
func Compact(src []byte) ([]byte, bool) {
	if !Valid(src) {
		return nil, false
	}
	return CompactValid(src), true
}

// CompactValid is Compact for src already known to be valid JSON (a member
// of a validated record), without validating it again.
func CompactValid(src []byte) []byte {
	// A scalar with no space around it has none inside (outside a string):
	// most extras are strings, which nextSpace would read to their end.
	if n := len(src); n > 0 && src[0] != '{' && src[0] != '[' && !isSpace(src[0]) && !isSpace(src[n-1]) {
		return src
	}
	i := nextSpace(src, 0)
	if i < 0 {
		return src
	}
	return appendCompact(make([]byte, 0, len(src)), src, i)
}

// AppendCompactValid appends CompactValid(src) to dst, for a writer of a
// larger text (an extra column), without a copy of its own.
func AppendCompactValid(dst, src []byte) []byte {
	if n := len(src); n > 0 && src[0] != '{' && src[0] != '[' && !isSpace(src[0]) && !isSpace(src[n-1]) {
		return append(dst, src...)
	}
	i := nextSpace(src, 0)
	if i < 0 {
		return append(dst, src...)
	}
	return appendCompact(dst, src, i)
}

// appendCompact appends src without the space outside its strings to dst;
// i is the index of its first such space.
func appendCompact(dst, src []byte, i int) []byte {
	for start := 0; ; {
		dst = append(dst, src[start:i]...)
		for i < len(src) && isSpace(src[i]) {
			i++
		}
		start = i
		if i = nextSpace(src, i); i < 0 {
			return append(dst, src[start:]...)
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// nextSpace returns the index of the first space at or after i that is not
// inside a string of the valid JSON text b, or -1.
func nextSpace(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			i = StringEnd(b, i)
		case isSpace(c):
			return i
		default:
			i++
		}
	}
	return -1
}

// StringEnd returns the index just after the JSON string that starts at
// b[i] (a quote), or len(b) when it does not end. The first bytes are
// tested eight at a time for a quote or a backslash (the lowest flagged
// byte is exact), then one by one: most strings of a record (names, ids,
// types) end there, before bytes.IndexByte would have paid for its setup.
func StringEnd(b []byte, i int) int {
	j, end := i+1, min(len(b), i+33)
	for ; j+8 <= end; j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		quote, slash := x^(lsb*'"'), x^(lsb*'\\')
		if hit := ((quote-lsb)&^quote | (slash-lsb)&^slash) & msb; hit != 0 {
			if j += bits.TrailingZeros64(hit) / 8; b[j] == '"' {
				return j + 1
			}
			return stringEnd(b, i)
		}
	}
	for ; j < end; j++ {
		switch b[j] {
		case '"':
			return j + 1
		case '\\':
			return stringEnd(b, i)
		}
	}
	return stringEnd(b, i)
}

func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		bs := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return j + 1
		}
		j++
	}
}

// SpacesEnd returns the index just after the run of spaces at b[i], eight
// at a time: pretty-printed documents (Inspect logs, ATIF) are mostly
// indentation outside their strings, which structural scans step over
// after each newline.
func SpacesEnd(b []byte, i int) int {
	for i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == 0x2020202020202020 {
		i += 8
	}
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}

// AppendQuoted appends s as a JSON string, as Marshal encodes it (no HTML
// escaping); the common case of printable ASCII without quotes or
// backslashes (object keys, ids) is copied as it is.
func AppendQuoted(dst []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	// A string always encodes. A copy of s is boxed, not s: s then does not
	// escape, and a caller's string(name) conversion needs no allocation.
	b, _ := Marshal(strings.Clone(s))
	return append(dst, b...)
}

// Marshal encodes v without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeStrict decodes one JSON value of our own formats (manifests,
// pointers) into v: unknown fields and anything after the value are
// errors, because a file this build does not fully understand must not be
// half-read. It decodes with the fast codec, whose strictness and errors
// match encoding/json's here (TestDecodeStrict): a cache lookup decodes
// manifests of thousands of members.
func DecodeStrict(data []byte, v any) error {
	dec := gojson.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
