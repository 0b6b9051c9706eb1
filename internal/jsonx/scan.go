package jsonx

import (
	"encoding/binary"
	"math/bits"
)

// A validating scanner for adapters that check a record and find its
// members in one pass: jsonx.Valid, then finding the members, then
// splitting a nested object read every byte of a line several times, which
// dominated the Codex and ATOF profiles. It accepts exactly what Valid
// accepts (FuzzScanRolloutLine and FuzzScanLine in the adapters check it).

// Text is what the scanner reads: a line, or a string decoded from one.
type Text interface{ ~string | ~[]byte }

// MaxDepth is the nesting the codecs accept (encoding/json's limit,
// which goccy applies too), so that IsValid is their Valid.
const MaxDepth = 10000

// IsValid reports whether b is one valid JSON value, as Valid and
// encoding/json's Valid do, without converting a string to bytes.
func IsValid[T Text](b T) bool {
	end, ok := ScanValue(b, SkipWS(b, 0), 0)
	return ok && SkipWS(b, end) == len(b)
}

// ScanValue validates the JSON value at b[i] (no leading space), inside
// open containers, and returns the index just after it.
func ScanValue[T Text](b T, i, open int) (int, bool) {
	if i < len(b) && b[i] == '"' { // most member values: no container stack to set up
		return ScanString(b, i)
	}
	return scanValue(b, i, open)
}

func scanValue[T Text](b T, i, open int) (int, bool) {
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
			if open+len(stack) == MaxDepth {
				return i, false
			}
			closer := byte('}')
			if b[i] == '[' {
				closer = ']'
			}
			if i = SkipWS(b, i+1); i < len(b) && b[i] == closer {
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
			if i, ok = ScanString(b, i); !ok {
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
			if i = SkipWS(b, i); i >= len(b) {
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
			i = SkipWS(b, i+1)
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
func scanKey[T Text](b T, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := ScanString(b, i)
	if !ok {
		return i, false
	}
	if i = SkipWS(b, i); i >= len(b) || b[i] != ':' {
		return i, false
	}
	return SkipWS(b, i+1), true
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// ScanString validates the string at b[i] (a quote) and returns the index
// just after it. Eight bytes are tested at a time for a quote, a backslash
// or a control character; the lowest flagged byte is exact.
func ScanString[T Text](b T, i int) (int, bool) {
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
func load64[T Text](b T, i int) uint64 {
	return binary.LittleEndian.Uint64([]byte(b[i : i+8]))
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func scanLiteral[T Text](b T, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanNumber validates the number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber[T Text](b T, i int) (int, bool) {
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

func digits[T Text](b T, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// SkipWS returns the index of the first byte at or after b[i] that is not
// JSON white space. Every white space byte is at most ' ', so most bytes
// (the one after a single space, or none) take one comparison.
func SkipWS[T Text](b T, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
