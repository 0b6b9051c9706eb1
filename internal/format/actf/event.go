package actf

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// phase is what an event does to its scope.
type phase uint8

const (
	phaseOther phase = iota // an unknown kind: counted, otherwise ignored
	phaseStart
	phaseEnd
	phaseMark
	phaseHeader
)

// Scope types the mapping understands; every other one is counted in the
// run extra with a warning.
const (
	scopeAgent = "agent"
	scopeLLM   = "llm"
	scopeTool  = "tool"
)

// event is one line of any dialect, reduced to the fields the mapping uses.
// The dialects differ mostly in where a field lives (category vs
// scope_type, data vs input/output, category_profile vs profile vs the top
// level), so decoding is one lookup chain rather than one parser per
// dialect.
type event struct {
	line int64
	// raw is the line (a copy, which the other fields alias) when it is an
	// object, else nil; session.add drops it when the mapping does not read
	// the line again (needsLine).
	raw         []byte
	phase       phase
	fromData    bool // payload is the data field (ATOF 0.1)
	hasLeftover bool // the line may have members for leftover to keep
	ended       bool // a start an end was paired with
	uuid        string
	parentUUID  string
	name        string
	ts          *time.Time
	scopeType   string
	modelName   string
	toolCallID  string
	// payload is the start input or the end output (data in ATOF 0.1).
	payload json.RawMessage
	status  string
	errRaw  json.RawMessage
	// rare is nil when all its members are empty, as on most lines: events
	// are kept until their session ends, and most of their bytes were
	// these fields (the kind is read again for the one warning it is in).
	rare *rare

	start  *event // the matching start of an end event
	hidden *event // the open start with the same pairing key this one hides
}

// rare holds the members of an event that few lines have.
type rare struct {
	// sessionID and parentSessionID come from metadata.
	sessionID       string
	parentSessionID string
	dataSchema      string
}

var noRare rare

// more is the event's rare members (read-only).
func (e *event) more() *rare {
	if e.rare == nil {
		return &noRare
	}
	return e.rare
}

// kindOf is the kind member of the event's line.
func kindOf(e *event) string {
	var f [1][]byte
	subFields(e.raw, kindKey, f[:])
	return symbol(f[0])
}

// Members of a line that decodeLine reads, by index.
const (
	fKind = iota
	fUUID
	fParentUUID
	fName
	fTimestamp
	fScopeCategory
	fCategoryProfile
	fProfile
	fMetadata
	fData
	fCategory
	fScopeType
	fModelName
	fToolCallID
	fInput
	fOutput
	fStatus
	fError
	fDataSchema
	numFields
)

// field is the index of a line member decodeLine reads, or -1.
func field(key string) int {
	switch key {
	case "kind":
		return fKind
	case "uuid":
		return fUUID
	case "parent_uuid":
		return fParentUUID
	case "name":
		return fName
	case "timestamp":
		return fTimestamp
	case "scope_category":
		return fScopeCategory
	case "category_profile":
		return fCategoryProfile
	case "profile":
		return fProfile
	case "metadata":
		return fMetadata
	case "data":
		return fData
	case "category":
		return fCategory
	case "scope_type":
		return fScopeType
	case "model_name":
		return fModelName
	case "tool_call_id":
		return fToolCallID
	case "input":
		return fInput
	case "output":
		return fOutput
	case "status":
		return fStatus
	case "error":
		return fError
	case "data_schema":
		return fDataSchema
	}
	return -1
}

// Members of the profile, metadata, data and data_schema objects that
// decodeLine reads.
var (
	profileKeys = []string{"subtype", "model_name", "tool_call_id", "$schema"}
	metaKeys    = []string{"model_name", "model", "tool_call_id", "session_id", "parent_session_id", "status"}
	dataKeys    = []string{"reason", "error"}
	kindKey     = []string{"kind"}
	schemaKeys  = []string{"name", "version"}
)

// decodeLine decodes one line into e (which route moves to its session).
// A valid object's members are looked up in one pass and without a map per
// line; they alias text, which route copies to the session (events are kept
// until their session ends), or a copy when the line takes splitLine.
// Anything else goes through the codec, for its error (or null, which reads
// as {}).
func (s *stream) decodeLine(e *event, line int64, text []byte) error {
	var m lineMembers
	raw := text
	if !scanLine(text, &m) {
		m = lineMembers{}
		raw = splitLine(text, &m)
	}
	if raw == nil {
		var v map[string]json.RawMessage
		if err := jsonx.Unmarshal(text, &v); err != nil {
			return err
		}
	}
	obj, rest, dataRest := &m.vals, m.rest, m.dataRest
	*e = event{
		line:       line,
		raw:        raw,
		uuid:       scopeID(obj[fUUID], s.scopes),
		parentUUID: scopeID(obj[fParentUUID], s.scopes),
		name:       format.Symbol(obj[fName]),
	}
	if t, ok := format.Time(obj[fTimestamp]); ok {
		e.ts = s.time(t)
	}
	e.phase = phaseOf(symbol(obj[fKind]), symbol(obj[fScopeCategory]))
	var profile [4][]byte
	isProfile := subFields(obj[fCategoryProfile], profileKeys, profile[:]) ||
		subFields(obj[fProfile], profileKeys, profile[:])
	var meta [6][]byte
	subFields(obj[fMetadata], metaKeys, meta[:])
	data := decodedData(obj[fData])
	e.scopeType = first(symbol(obj[fCategory]), symbol(obj[fScopeType]))
	if e.scopeType == "custom" && isProfile {
		e.scopeType = first(format.String(profile[0]), e.scopeType)
	}
	e.modelName = first(str(profile[1]), format.Symbol(obj[fModelName]), str(meta[0]), str(meta[1]))
	e.toolCallID = first(str(profile[2]), format.String(obj[fToolCallID]), str(meta[2]))
	var r rare
	r.sessionID = str(meta[3])
	r.parentSessionID = str(meta[4])
	e.payload = e.pick(obj[fInput], obj[fOutput], data)
	var dataObj [2][]byte
	isData := subFields(data, dataKeys, dataObj[:])
	if e.fromData && isData && (dataObj[0] != nil || dataObj[1] != nil) {
		e.payload = withoutStatus(data)
	}
	e.status = first(symbol(obj[fStatus]), str(meta[5]), str(dataObj[0]))
	e.errRaw = obj[fError]
	if format.IsNull(e.errRaw) && isData {
		e.errRaw = dataObj[1]
	}
	var ds [2][]byte
	if subFields(obj[fDataSchema], schemaKeys, ds[:]) {
		r.dataSchema = str(ds[0])
		if v := str(ds[1]); v != "" {
			r.dataSchema += "@" + v
		}
	} else if isProfile {
		r.dataSchema = str(profile[3])
	}
	if r != (rare{}) {
		e.rare = new(rare) // r itself stays on the stack
		*e.rare = r
	}
	e.hasLeftover = rest || dataRest && !e.fromData
	return nil
}

// time is &t, from a block of the stream's timestamps rather than an
// allocation per line. The steps of a Storyline keep their block, which holds
// nothing but timestamps.
func (s *stream) time(t time.Time) *time.Time {
	if len(s.times) == cap(s.times) {
		s.times = make([]time.Time, 0, 128)
	}
	s.times = append(s.times, t)
	return &s.times[len(s.times)-1]
}

// scopeID is format.String for a uuid member, reusing the string of a
// started scope (an end's own, most parents) rather than allocating one
// per line: an unescaped string is its bytes, and a key of scopes is valid
// UTF-8, so a match is the string format.String would return.
func scopeID(raw []byte, scopes map[string]scope) string {
	if len(raw) == 0 { // absent (see str)
		return ""
	}
	return knownScopeID(raw, scopes)
}

func knownScopeID(raw []byte, scopes map[string]scope) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		if sc, ok := scopes[string(raw[1:n-1])]; ok {
			return sc.uuid
		}
	}
	return format.String(raw)
}

// symbol is format.Symbol for the envelope's enumerations, whose known
// values are matched as written, without hashing.
func symbol(raw []byte) string {
	if len(raw) == 0 { // absent (see str)
		return ""
	}
	return symbolValue(raw)
}

func symbolValue(raw []byte) string {
	switch string(raw) {
	case `"ScopeStart"`:
		return "ScopeStart"
	case `"ScopeEnd"`:
		return "ScopeEnd"
	case `"scope"`:
		return "scope"
	case `"mark"`:
		return "mark"
	case `"start"`:
		return "start"
	case `"end"`:
		return "end"
	case `"agent"`:
		return scopeAgent
	case `"llm"`:
		return scopeLLM
	case `"tool"`:
		return scopeTool
	case `"ok"`:
		return "ok"
	}
	return format.Symbol(raw)
}

// consumed reports whether key is an envelope key the mapping reads; the
// rest of a line lands in extra.
func consumed(key string) bool {
	switch key {
	case "kind", "atof_version", "schema_version", "uuid", "parent_uuid", "timestamp", "name",
		"scope_category", "category", "scope_type", "model_name", "tool_call_id",
		"input", "output", "status", "error":
		return true
	}
	return false
}

// pick returns the event's payload: input/output in the NAT dialects, data
// in ATOF 0.1 (where input/output do not exist). A member present in the
// line is never nil.
func (e *event) pick(input, output, data json.RawMessage) json.RawMessage {
	raw := input
	if e.phase == phaseEnd {
		raw = output
	}
	if raw != nil {
		if format.IsNull(raw) {
			return nil
		}
		return raw
	}
	e.fromData = true
	return data
}

// withoutStatus drops the end-status members (reason, error) that ATOF 0.1
// puts in data, so that they are not read as the scope's output; a data
// object holding nothing else is no output at all.
func withoutStatus(data json.RawMessage) json.RawMessage {
	rest := format.Extra(format.SplitObject(data), "reason", "error")
	if rest == nil {
		return nil
	}
	return json.RawMessage(*rest)
}

func phaseOf(kind, scopeCategory string) phase {
	switch kind {
	case "ScopeStart":
		return phaseStart
	case "ScopeEnd":
		return phaseEnd
	case "scope":
		switch scopeCategory {
		case "start":
			return phaseStart
		case "end":
			return phaseEnd
		}
	case "mark", "Mark":
		return phaseMark
	case "StreamHeader", "StreamHeaderEvent":
		return phaseHeader
	}
	return phaseOther
}

// decodedData unwraps data that a producer JSON-encoded into a string
// (seen in Relay captures); other values are returned unchanged.
func decodedData(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 { // absent (see str)
		return nil
	}
	return decodedValue(raw)
}

func decodedValue(raw json.RawMessage) json.RawMessage {
	raw = format.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return raw
	}
	s := format.String(raw)
	if len(s) > 0 && (s[0] == '{' || s[0] == '[') && jsonx.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return raw
}

func subObject(raw json.RawMessage) map[string]json.RawMessage {
	raw = format.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return format.SplitObject(raw) // a member of a validated line
}

// subFields is format.Fields for a member of a validated line, which may
// be absent: it reports whether raw is an object (subObject non-nil).
// vals must start empty. Names are matched as written (keys are plain
// ASCII, which an unescaped name matches only as its bytes); an object
// with an escaped name goes to format.Fields.
func subFields(raw json.RawMessage, keys []string, vals [][]byte) bool {
	if len(raw) == 0 { // absent (see str)
		return false
	}
	return objectFields(raw, keys, vals)
}

func objectFields(raw json.RawMessage, keys []string, vals [][]byte) bool {
	i := jsonx.SkipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	for i = jsonx.SkipWS(raw, i+1); i < len(raw) && raw[i] == '"'; {
		start := i
		end, ok := jsonx.ScanString(raw, i)
		if !ok {
			clear(vals)
			return format.Fields(raw, keys, vals)
		}
		name, at := raw[start+1:end-1], -1
		for k, key := range keys {
			if string(name) == key {
				at = k
				break
			}
		}
		if at < 0 && bytes.IndexByte(name, '\\') >= 0 { // may decode to a key
			clear(vals)
			return format.Fields(raw, keys, vals)
		}
		vstart := jsonx.SkipWS(raw, jsonx.SkipWS(raw, end)+1) // after the ':'
		if i, ok = jsonx.ScanValue(raw, vstart, 0); !ok {
			clear(vals)
			return format.Fields(raw, keys, vals)
		}
		if at >= 0 {
			vals[at] = raw[vstart:i]
		}
		if i = jsonx.SkipWS(raw, i); i < len(raw) && raw[i] == ',' {
			i = jsonx.SkipWS(raw, i+1)
		}
	}
	return true
}

// str is the string value raw, or "" for any other value.
func str(raw json.RawMessage) string {
	if len(raw) == 0 { // absent, as most members asked for are: inlined, no call
		return ""
	}
	return stringValue(raw)
}

func stringValue(raw json.RawMessage) string {
	raw = format.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	return format.String(raw)
}

// symbolStr is str for a name drawn from a small set (format.Symbol).
func symbolStr(raw json.RawMessage) string {
	raw = format.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	return format.Symbol(raw)
}

// strOf is str of obj's member key.
func strOf(obj map[string]json.RawMessage, key string) string { return str(obj[key]) }

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
