package actf

import (
	"bytes"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// This file validates a line and finds the members decodeLine reads in one
// pass. jsonx.Valid and then format.EachMemberName read every byte twice,
// and decoded every member name to match it. The scanner accepts what
// jsonx.Valid accepts (jsonx.ScanValue, which the Codex adapter's scanner uses too), but gives up
// on lines that are not objects or that have escaped member names; such a
// line takes splitLine, so results and errors are that path's whatever the
// input.

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
	i := jsonx.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = jsonx.SkipWS(b, i+1); i < len(b) && b[i] == '}' {
		return jsonx.SkipWS(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		start := i
		if i, ok = jsonx.ScanString(b, i); !ok {
			return false
		}
		// A name the mapping knows is written without escapes; any other
		// with one may decode to one it knows.
		key := b[start:i]
		f, c := member(key)
		if f < 0 && !c && bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		if i = jsonx.SkipWS(b, i); i >= len(b) || b[i] != ':' {
			return false
		}
		vstart := jsonx.SkipWS(b, i+1)
		if i, ok = jsonx.ScanValue(b, vstart, 1); !ok {
			return false
		}
		// An unescaped name that is not valid UTF-8 decodes to one with
		// U+FFFD, which matches no field, as its bytes do not.
		m.add(f, c, key[1:len(key)-1], b[vstart:i])
		if i = jsonx.SkipWS(b, i); i < len(b) && b[i] == ',' {
			i = jsonx.SkipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return jsonx.SkipWS(b, i+1) == len(b)
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
