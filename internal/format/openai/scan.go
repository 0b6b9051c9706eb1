package openai

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// This file validates a rollout line and splits its envelope and payload in
// one pass. Validating (jsonx.Valid), then finding the envelope's members,
// then splitting the payload read every byte of a line three times, which
// dominated the Codex profile. The scanner accepts what jsonx.Valid
// accepts, but gives up on lines that are not objects with a string type or
// that have escaped envelope names; such a line takes the general path, so
// results and errors are those of that path whatever the input.

// member is one member of a JSON object: its name, decoded (format.MemberName),
// and its value, both aliasing the line unless the name has escapes.
type member struct{ name, val []byte }

// scanRolloutLine validates line and returns its envelope with the
// payload's members appended to members[:0] (payloadObject false when the
// payload is absent or not an object). ok is false when the line is not a
// valid object with a string type, or the scanner cannot tell.
func scanRolloutLine(line []byte, members []member) (env rolloutLine, out []member, payloadObject, ok bool) {
	out = members[:0]
	b := line
	i := jsonx.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, out, false, false
	}
	i = jsonx.SkipWS(b, i+1)
	var typ []byte
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return env, out, false, false
			}
			start := i
			if i, ok = jsonx.ScanString(b, i); !ok {
				return env, out, false, false
			}
			key := b[start:i]
			if i = jsonx.SkipWS(b, i); i >= len(b) || b[i] != ':' {
				return env, out, false, false
			}
			i = jsonx.SkipWS(b, i+1)
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
				} else if i, ok = jsonx.ScanValue(b, i, 1); !ok {
					return env, out, false, false
				}
				env.Payload = b[vstart:i]
			default:
				if i, ok = jsonx.ScanValue(b, i, 1); !ok {
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
			if i = jsonx.SkipWS(b, i); i < len(b) && b[i] == ',' {
				i = jsonx.SkipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return env, out, false, false
		}
	}
	if jsonx.SkipWS(b, i) != len(b) || typ == nil {
		return env, out, false, false
	}
	env.Type = symbol(typ)
	return env, out, payloadObject, true
}

// scanMembers validates the object at b[i] and appends its members to out.
func scanMembers(b []byte, i int, out []member) (int, []member, bool) {
	i = jsonx.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, out, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, out, false
		}
		start := i
		var ok bool
		if i, ok = jsonx.ScanString(b, i); !ok {
			return i, out, false
		}
		key := b[start:i]
		if i = jsonx.SkipWS(b, i); i >= len(b) || b[i] != ':' {
			return i, out, false
		}
		i = jsonx.SkipWS(b, i+1)
		vstart := i
		if i, ok = jsonx.ScanValue(b, i, 2); !ok {
			return i, out, false
		}
		out = append(out, member{name: format.MemberName(key), val: b[vstart:i]})
		if i = jsonx.SkipWS(b, i); i < len(b) && b[i] == ',' {
			i = jsonx.SkipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, out, true
		}
		return i, out, false
	}
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}
