package openai

import (
	"encoding/binary"
	"math/bits"
)

// This file validates a rollout line and splits its envelope and payload in
// one pass. Validating (jsonx.Valid), then finding the envelope's members,
// then splitting the payload read every byte of a line three times, which
// dominated the Codex profile. The scanner accepts what jsonx.Valid
// accepts, but gives up on lines that are not objects with a string type or
// that have escaped envelope names; such a line takes the general path, so
// results and errors are those of that path whatever the input.

// member is one member of a JSON object: its name, decoded (memberName),
// and its value, both aliasing the line unless the name has escapes.
type member struct{ name, val []byte }

// text is what the scanner reads: a line, or a string decoded from one.
type text interface{ ~string | ~[]byte }

// maxScanDepth is the nesting the codecs accept (encoding/json's limit,
// which goccy applies too), so that isJSON is their Valid.
const maxScanDepth = 10000

// isJSON reports whether b is one valid JSON value, as jsonx.Valid and
// encoding/json's Valid do.
func isJSON[T text](b T) bool {
	end, ok := scanValue(b, skipWS(b, 0), 0)
	return ok && skipWS(b, end) == len(b)
}

// scanRolloutLine validates line and returns its envelope with the
// payload's members appended to members[:0] (payloadObject false when the
// payload is absent or not an object). ok is false when the line is not a
// valid object with a string type, or the scanner cannot tell.
func scanRolloutLine(line []byte, members []member) (env rolloutLine, out []member, payloadObject, ok bool) {
	out = members[:0]
	b := line
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, out, false, false
	}
	i = skipWS(b, i+1)
	var typ []byte
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return env, out, false, false
			}
			start := i
			if i, ok = scanString(b, i); !ok {
				return env, out, false, false
			}
			key := b[start:i]
			if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
				return env, out, false, false
			}
			i = skipWS(b, i+1)
			vstart := i
			switch string(key) {
			case `"payload"`:
				// A repeated member keeps its last value, as decoders do.
				out, payloadObject = out[:0], false
				if i < len(b) && b[i] == '{' {
					if i, out, ok = scanMembers(b, i, out); !ok {
						return env, out, false, false
					}
					payloadObject = true
				} else if i, ok = scanValue(b, i, 1); !ok {
					return env, out, false, false
				}
				env.Payload = b[vstart:i]
			default:
				if i, ok = scanValue(b, i, 1); !ok {
					return env, out, false, false
				}
				switch string(key) {
				case `"timestamp"`:
					env.Timestamp = b[vstart:i]
				case `"type"`:
					if b[vstart] != '"' {
						return env, out, false, false
					}
					typ = b[vstart:i]
				default:
					if hasByte(key, '\\') { // may name an envelope member
						return env, out, false, false
					}
				}
			}
			if i = skipWS(b, i); i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return env, out, false, false
		}
	}
	if skipWS(b, i) != len(b) || typ == nil {
		return env, out, false, false
	}
	env.Type = symbol(typ)
	return env, out, payloadObject, true
}

// scanMembers validates the object at b[i] and appends its members to out.
func scanMembers(b []byte, i int, out []member) (int, []member, bool) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, out, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, out, false
		}
		start := i
		var ok bool
		if i, ok = scanString(b, i); !ok {
			return i, out, false
		}
		key := b[start:i]
		if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
			return i, out, false
		}
		i = skipWS(b, i+1)
		vstart := i
		if i, ok = scanValue(b, i, 2); !ok {
			return i, out, false
		}
		out = append(out, member{name: memberName(key), val: b[vstart:i]})
		if i = skipWS(b, i); i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, out, true
		}
		return i, out, false
	}
}

// scanValue validates the JSON value at b[i] (no leading space), inside
// open containers, and returns the index just after it.
func scanValue[T text](b T, i, open int) (int, bool) {
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
func scanKey[T text](b T, i int) (int, bool) {
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
func scanString[T text](b T, i int) (int, bool) {
	i++
	for {
		for i+8 <= len(b) {
			x := load64(b, i)
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

// load64 is binary.LittleEndian.Uint64 of b[i:]: one load for a line (a
// string's eight bytes are copied to the stack).
func load64[T text](b T, i int) uint64 {
	return binary.LittleEndian.Uint64([]byte(b[i : i+8]))
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func scanLiteral[T text](b T, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanNumber validates the number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber[T text](b T, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
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
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits[T text](b T, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func skipWS[T text](b T, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}
