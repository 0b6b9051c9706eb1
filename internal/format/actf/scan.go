package actf

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// This file validates a line and finds the members decodeLine reads in one
// pass. jsonx.Valid and then format.EachMemberName read every byte twice,
// and decoded every member name to match it. The scanner accepts what
// jsonx.Valid accepts (as the Codex adapter's scanner does), but gives up
// on lines that are not objects or that have escaped member names; such a
// line takes splitLine, so results and errors are that path's whatever the
// input.

// maxScanDepth is the nesting the codecs accept (encoding/json's limit,
// which goccy applies too), so that scanning is their Valid.
const maxScanDepth = 10000

// lineMembers is what decodeLine takes from a line's members: the values
// it reads, by field index, and whether leftover would keep a member
// (rest), or the data member in a dialect without input/output (dataRest).
type lineMembers struct {
	vals           [numFields][]byte
	rest, dataRest bool
}

// add records the member named name (unquoted, unescaped).
func (m *lineMembers) add(i int, consumed bool, name, val []byte) {
	if i >= 0 {
		m.vals[i] = val
	}
	if !consumed && !format.EmptyJSON(val) {
		if string(name) == "data" {
			m.dataRest = true
		} else {
			m.rest = true
		}
	}
}

// splitLine is the general path: the members of text when it is a valid
// object, in raw (a copy they alias); raw is nil otherwise.
func splitLine(text []byte, m *lineMembers) (raw []byte) {
	if !jsonx.Valid(text) {
		return nil
	}
	raw = bytes.Clone(text)
	if !format.EachMemberName(raw, func(k, v []byte) { m.add(field(string(k)), consumed(string(k)), k, v) }) {
		return nil
	}
	return raw
}

// scanLine is splitLine for a line already copied to raw: ok is false when
// raw is not a valid object or has an escaped member name (m is then
// partly filled and must be discarded).
func scanLine(raw []byte, m *lineMembers) (ok bool) {
	b := raw
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = skipWS(b, i+1); i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		start := i
		if i, ok = scanString(b, i); !ok {
			return false
		}
		key := b[start:i]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
			return false
		}
		vstart := skipWS(b, i+1)
		if i, ok = scanValue(b, vstart, 1); !ok {
			return false
		}
		// An unescaped name that is not valid UTF-8 decodes to one with
		// U+FFFD, which matches no field, as its bytes do not.
		f, c := member(key)
		m.add(f, c, key[1:len(key)-1], b[vstart:i])
		if i = skipWS(b, i); i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return skipWS(b, i+1) == len(b)
		}
		return false
	}
}

// member is field and consumed for a member name as written (quoted),
// without decoding it.
func member(key []byte) (field int, consumed bool) {
	switch string(key) {
	case `"kind"`:
		return fKind, true
	case `"uuid"`:
		return fUUID, true
	case `"parent_uuid"`:
		return fParentUUID, true
	case `"name"`:
		return fName, true
	case `"timestamp"`:
		return fTimestamp, true
	case `"scope_category"`:
		return fScopeCategory, true
	case `"category_profile"`:
		return fCategoryProfile, false
	case `"profile"`:
		return fProfile, false
	case `"metadata"`:
		return fMetadata, false
	case `"data"`:
		return fData, false
	case `"category"`:
		return fCategory, true
	case `"scope_type"`:
		return fScopeType, true
	case `"model_name"`:
		return fModelName, true
	case `"tool_call_id"`:
		return fToolCallID, true
	case `"input"`:
		return fInput, true
	case `"output"`:
		return fOutput, true
	case `"status"`:
		return fStatus, true
	case `"error"`:
		return fError, true
	case `"data_schema"`:
		return fDataSchema, false
	case `"atof_version"`, `"schema_version"`:
		return -1, true
	}
	return -1, false
}

// scanValue validates the JSON value at b[i] (no leading space), inside
// open containers, and returns the index just after it.
func scanValue(b []byte, i, open int) (int, bool) {
	var buf [32]byte
	stack := buf[:0] // the closing byte of each open container
	var ok bool
	for {
		// A value is expected at b[i].
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '{', '[':
			if open+len(stack) == maxScanDepth {
				return i, false
			}
			closer := byte('}')
			if b[i] == '[' {
				closer = ']'
			}
			if i = skipWS(b, i+1); i < len(b) && b[i] == closer {
				i++
				break
			}
			stack = append(stack, closer)
			if closer == '}' {
				if i, ok = scanKey(b, i); !ok {
					return i, false
				}
			}
			continue
		case '"':
			if i, ok = scanString(b, i); !ok {
				return i, false
			}
		case 't':
			if i, ok = scanLiteral(b, i, "true"); !ok {
				return i, false
			}
		case 'f':
			if i, ok = scanLiteral(b, i, "false"); !ok {
				return i, false
			}
		case 'n':
			if i, ok = scanLiteral(b, i, "null"); !ok {
				return i, false
			}
		default:
			if i, ok = scanNumber(b, i); !ok {
				return i, false
			}
		}
		// A value ended: close containers until a comma asks for the next.
		for {
			if len(stack) == 0 {
				return i, true
			}
			closer := stack[len(stack)-1]
			if i = skipWS(b, i); i >= len(b) {
				return i, false
			}
			if b[i] == closer {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
			if closer == '}' {
				if i, ok = scanKey(b, i); !ok {
					return i, false
				}
			}
			break
		}
	}
}

// scanKey validates a member name and its colon at b[i] and returns the
// index of the value.
func scanKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := scanString(b, i)
	if !ok {
		return i, false
	}
	if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipWS(b, i+1), true
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// scanString validates the string at b[i] (a quote) and returns the index
// just after it. Eight bytes are tested at a time for a quote, a backslash
// or a control character; the lowest flagged byte is exact.
func scanString(b []byte, i int) (int, bool) {
	i++
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			quote := x ^ (lsb * '"')
			slash := x ^ (lsb * '\\')
			hit := ((quote - lsb) &^ quote) | ((slash - lsb) &^ slash) | (x - lsb*0x20)
			hit &^= x // bytes >= 0x80 are text
			hit &= msb
			if hit == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(hit) / 8
			break
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default: // fewer than eight bytes were left
			i++
		}
	}
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanNumber validates the number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
