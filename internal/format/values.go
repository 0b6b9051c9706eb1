package format

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Message kinds shared by adapters.
const (
	KindText       = "text"
	KindMultimodal = "multimodal"
)

// TrailingBackslashes counts the backslashes that end b: a quote after
// an odd number of them is escaped.
func TrailingBackslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}

// TrimSpace is bytes.TrimSpace, without its loops where raw is empty or
// neither starts nor ends with space, as a member of a scanned object
// (most calls: these were some 4% of ATOF normalization).
func TrimSpace(raw []byte) []byte {
	// c-'!' < utf8.RuneSelf-'!' when c is ASCII and above ' ' (bytes
	// wrap); so is the OR of two such when both are (and for the first and
	// last bytes of any JSON value).
	n := len(raw)
	switch {
	case n == 0:
		return nil // absent, the most common
	case (raw[0]-'!')|(raw[n-1]-'!') < utf8.RuneSelf-'!':
		return raw
	}
	return bytes.TrimSpace(raw)
}

// IsNull reports whether raw is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	raw = TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// AsString returns raw as a string when it is a JSON string.
func AsString(raw json.RawMessage) (string, bool) {
	raw = TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return String(raw), true
}

// AsObject returns raw when it is a JSON object, else nil.
func AsObject(raw json.RawMessage) json.RawMessage {
	raw = TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return raw
}

// String decodes raw as a JSON string; other scalars are returned as their
// JSON text, and null/absent as "". A string without escapes (the common
// case for roles, ids and most content) is copied without the codec.
func String(raw json.RawMessage) string {
	if len(raw) == 0 { // absent, as many members asked for are: inlined, no call
		return ""
	}
	return stringValue(raw)
}

func stringValue(raw json.RawMessage) string {
	raw = TrimSpace(raw)
	if IsNull(raw) {
		return ""
	}
	if raw[0] == '"' {
		if n := len(raw); n >= 2 && raw[n-1] == '"' {
			if body := raw[1 : n-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
				return string(body)
			} else if end, ok := jsonx.ScanString(raw, 0); ok && end == n {
				if s, ok := unescape(body); ok {
					return s
				}
			}
		}
		var s string
		if jsonx.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// ValidString is String for raw known to be valid JSON with no space around
// it (a member of a validated line): a string is unescaped without being
// scanned again. The second scan was a twentieth of the Claude Code
// profile, whose tool results are half its bytes.
func ValidString(raw []byte) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if s, ok := unescape(raw[1 : n-1]); ok {
			return s
		}
	}
	return String(raw)
}

// unescape decodes the body of a JSON string with escapes that the
// scanner accepted (text with newlines and quotes, most message text) as
// the codec would, in one pass into the result: the codec's unescaping and
// copy were a tenth of the Claude Code profile. ok is false for invalid
// UTF-8 and for \u escapes of surrogates, which the codec then decodes.
func unescape(body []byte) (string, bool) {
	if !utf8.Valid(body) {
		return "", false
	}
	var b strings.Builder // its String is the text, without a copy
	b.Grow(len(body))
	for {
		i := bytes.IndexByte(body, '\\')
		if i < 0 {
			i = len(body)
		}
		b.Write(body[:i])
		if i == len(body) {
			return b.String(), true
		}
		if i+1 == len(body) {
			return "", false
		}
		c := body[i+1]
		body = body[i+2:]
		switch c {
		case '"', '\\', '/':
			b.WriteByte(c)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if len(body) < 4 {
				return "", false
			}
			r := rune(0)
			for _, h := range body[:4] {
				switch {
				case '0' <= h && h <= '9':
					r = r<<4 | rune(h-'0')
				case 'a' <= h && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case 'A' <= h && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if utf16.IsSurrogate(r) {
				return "", false
			}
			b.WriteRune(r)
			body = body[4:]
		default:
			return "", false
		}
	}
}

// Int decodes raw as an integer (accepting integral floats and numeric
// strings, which loose producers emit).
func Int(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if IsNull(raw) {
		return 0, false
	}
	s := string(raw)
	if raw[0] == '"' {
		s = String(raw)
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
		return int64(f), true
	}
	return 0, false
}

// numberLiteral returns raw as a JSON number's text ("" for anything else).
func numberLiteral(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return ""
	}
	return string(raw)
}

// IntOutOfRange reports whether raw is a JSON number that Int refuses only
// for its size: a count of 30 digits, 1e999.
func IntOutOfRange(raw []byte) bool {
	s := numberLiteral(raw)
	if s == "" {
		return false
	}
	if _, ok := Int(raw); ok {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return (err == nil || errors.Is(err, strconv.ErrRange)) && (math.IsInf(f, 0) || f == math.Trunc(f) && math.Abs(f) >= 1<<62)
}

// FloatOutOfRange reports whether raw is a JSON number too large for a
// float64 (1e999), which Float refuses.
func FloatOutOfRange(raw []byte) bool {
	s := numberLiteral(raw)
	if s == "" {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0)
}

// Float decodes raw as a number (or a numeric string).
func Float(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if IsNull(raw) {
		return 0, false
	}
	s := string(raw)
	if raw[0] == '"' {
		s = String(raw)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// Bool decodes raw as a boolean.
func Bool(raw json.RawMessage) (bool, bool) {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// Time parses a timestamp in any of the forms producers use: RFC 3339 /
// ISO 8601 strings (with or without zone; no zone means UTC), or epoch
// numbers in seconds, milliseconds or microseconds (chosen by magnitude).
// The result is UTC.
func Time(raw json.RawMessage) (time.Time, bool) {
	raw = TrimSpace(raw)
	if t, ok := utcTime(raw); ok {
		return t, true
	}
	if t, ok := zonelessTime(raw); ok {
		return t, true
	}
	return timeOf(raw)
}

// zonelessTime is utcTime for the usual form without a zone, as OpenHands
// writes it ("2025-10-30T03:50:30.915175": no zone means UTC): the same
// text with a Z, which parses to the same time (FuzzUTCTime).
func zonelessTime(raw []byte) (time.Time, bool) {
	var buf [len(utcLayout) + 12]byte // room for nine digits of fraction, the Z and the quote
	n := len(raw)
	if n < len(utcLayout)+1 || n+1 > len(buf) || raw[n-1] != '"' || raw[n-2] < '0' || raw[n-2] > '9' {
		return time.Time{}, false
	}
	return utcTime(append(append(buf[:0], raw[:n-1]...), 'Z', '"'))
}

func timeOf(raw json.RawMessage) (time.Time, bool) {
	if IsNull(raw) {
		return time.Time{}, false
	}
	if raw[0] == '"' {
		return ParseTimeString(String(raw))
	}
	f, ok := Float(raw)
	if !ok {
		return time.Time{}, false
	}
	return EpochTime(f)
}

// utcLayout is the start of the usual timestamp form (Codex, ATOF, Claude
// Code write it: "2006-01-02T15:04:05.000Z"): digits ('0') and separators.
const utcLayout = `"0000-00-00T00:00:00`

// utcTime parses a timestamp of the usual form (with a fraction of up to
// nine digits, or none) in place, as ParseTimeString would: the string and
// its layout tries were most of a timestamp's cost in the adapters'
// profiles. ok is false for any other form, which Time reads the slow way.
// The fields sit at fixed offsets, and the time is computed from the date
// rather than by time.Date, which normalizes (a third of the cost).
func utcTime(raw []byte) (t time.Time, ok bool) {
	n := len(raw)
	if n < len(utcLayout)+2 || raw[n-2] != 'Z' || raw[n-1] != '"' ||
		raw[0] != '"' || raw[5] != '-' || raw[8] != '-' || raw[11] != 'T' || raw[14] != ':' || raw[17] != ':' {
		return t, false
	}
	year, ok1 := decimal(raw[1:5])
	month, ok2 := decimal(raw[6:8])
	day, ok3 := decimal(raw[9:11])
	hour, ok4 := decimal(raw[12:14])
	minute, ok5 := decimal(raw[15:17])
	sec, ok6 := decimal(raw[18:20])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return t, false
	}
	nsec := 0
	if frac := raw[len(utcLayout) : n-2]; len(frac) > 0 {
		var fracOK bool
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return t, false
		}
		if nsec, fracOK = decimal(frac[1:]); !fracOK {
			return t, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	// Parsing rejects fields out of range, which time.Date would normalize.
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return t, false
	}
	unix := daysSinceEpoch(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// decimal is the value of a run of ASCII digits (false for anything else).
func decimal(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		v = v*10 + int(d)
	}
	return v, true
}

// daysSinceEpoch is the number of days from 1970-01-01 to a Gregorian date
// (year 0 to 9999; month and day in range), by the civil-from-days
// algorithm: eras of 400 years, years starting in March.
func daysSinceEpoch(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yearOfEra := y - era*400
	m := int64(month) + 9 // months from March
	if month > 2 {
		m = int64(month) - 3
	}
	dayOfYear := (153*m+2)/5 + int64(day) - 1
	dayOfEra := yearOfEra*365 + yearOfEra/4 - yearOfEra/100 + dayOfYear
	return era*146097 + dayOfEra - 719468
}

// daysIn is the number of days of month (1-12) in year, Gregorian, as
// parsing checks a day: t.Day() after time.Date, which did the same, was a
// fifth of utcTime's cost.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// EpochTime converts an epoch number whose unit is chosen by magnitude.
func EpochTime(f float64) (time.Time, bool) {
	if f <= 0 {
		return time.Time{}, false
	}
	var t time.Time
	switch {
	case f < 1e11: // seconds (until year 5138)
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(frac*1e9))
	case f < 1e14: // milliseconds
		t = time.UnixMilli(int64(f))
	case f < 1e17: // microseconds
		t = time.UnixMicro(int64(f))
	default: // nanoseconds
		t = time.Unix(0, int64(f))
	}
	return t.UTC(), true
}

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02",
}

// ParseTimeString parses an ISO 8601 / RFC 3339 timestamp string (or an
// epoch number written as a string).
func ParseTimeString(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return EpochTime(f)
	}
	return time.Time{}, false
}

// Content flattens a message or tool-output content value into column text.
// A string is kept as is; an array of text parts is joined with newlines;
// anything else (multimodal parts, objects) is kept as compact JSON, with
// inline base64 data replaced by a digest reference so that megabytes of
// image data never land in a text column. kind is KindText or
// KindMultimodal; ok is false for null/absent content.
func Content(raw json.RawMessage) (text string, kind string, ok bool) {
	raw = TrimSpace(raw)
	if IsNull(raw) {
		return "", KindText, false
	}
	switch raw[0] {
	case '"':
		return String(raw), KindText, true
	case '[':
		if text, ok := TextArray(raw); ok {
			return text, KindText, true
		}
		if text, ok := decodedTextArray(raw); ok {
			return text, KindText, true
		}
		return string(StripInlineData(raw)), KindMultimodal, true
	case '{':
		return string(StripInlineData(raw)), KindText, true
	}
	return string(raw), KindText, true
}

var textPartKeys = []string{"type", "text"}

// TextArray is the text Content gives an array of text parts, read with
// the scanner and Fields: decoding the parts into maps with the codec was
// most of the cost of message, reasoning and tool-result content. ok is
// false when raw is not valid JSON or not all text parts, which Content
// then maps.
func TextArray(raw []byte) (string, bool) {
	if !jsonx.IsValid(raw) {
		return "", false
	}
	return validTextArray(raw)
}

// validTextArray is TextArray for raw known to be valid JSON.
func validTextArray(raw []byte) (string, bool) {
	elems, isArray := SplitArray(raw)
	if !isArray {
		return "", false
	}
	var buf [4]string
	texts := buf[:0]
	for _, e := range elems {
		var part [2][]byte // type, text
		if !Fields(e, textPartKeys, part[:]) || part[1] == nil {
			return "", false
		}
		switch ValidString(part[0]) {
		case "", "text", "input_text", "output_text", "summary_text", "reasoning_text":
		default:
			return "", false
		}
		texts = append(texts, ValidString(part[1]))
	}
	return strings.Join(texts, "\n"), true
}

// ValidContent is Content for raw known to be valid JSON (a member of a
// validated line or document): its text is not scanned again, which
// Content does once for a string and twice for text parts (the OpenHands
// observations' profile).
func ValidContent(raw json.RawMessage) (text string, kind string, ok bool) {
	if len(raw) > 0 {
		switch raw[0] {
		case '"':
			return ValidString(raw), KindText, true
		case '[':
			if text, ok := validTextArray(raw); ok {
				return text, KindText, true
			}
		}
	}
	return Content(raw)
}

// ValidContentText is ContentText for raw known to be valid JSON
// (ValidContent).
func ValidContentText(raw json.RawMessage) (*string, string) {
	t, kind, ok := ValidContent(raw)
	if !ok {
		return nil, KindText
	}
	return &t, kind
}

// decodedTextArray is TextArray by the codec: what Content gave before
// TextArray, and still gives for what TextArray does not take.
func decodedTextArray(raw []byte) (string, bool) {
	var parts []map[string]json.RawMessage
	if jsonx.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	texts, allText := textParts(parts)
	return strings.Join(texts, "\n"), allText
}

// ContentText is Content for a step's message_value: the text (nil for
// null/absent content) and its message kind.
func ContentText(raw json.RawMessage) (*string, string) {
	t, kind, ok := Content(raw)
	if !ok {
		return nil, KindText
	}
	return &t, kind
}

// textParts returns the texts of parts when every part is a text part
// ({type: text|input_text|output_text, text} or a bare {text}).
func textParts(parts []map[string]json.RawMessage) ([]string, bool) {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p == nil {
			return nil, false
		}
		switch String(p["type"]) {
		case "", "text", "input_text", "output_text", "summary_text", "reasoning_text":
		default:
			return nil, false
		}
		t, ok := p["text"]
		if !ok {
			return nil, false
		}
		texts = append(texts, String(t))
	}
	return texts, true
}

const inlineDataMin = 256

// StripInlineData replaces base64 payloads (data: URIs and long "data" /
// "file_data" / "b64_json" strings) inside a JSON value with a
// "sha256:<hex>;len=<n>" reference. Invalid JSON is returned unchanged.
func StripInlineData(raw json.RawMessage) json.RawMessage {
	if !mayHoldInlineData(raw) {
		return raw
	}
	if jsonx.IsValid(raw) {
		// Twice its size: appendStripped writes an object whose names are
		// out of order twice, and growing the output to do so copied it
		// (a third of the stripping of OpenHands runs' extra). Every
		// caller copies the result.
		value := jsonx.SkipWS(raw, 0)
		out, _ := appendStripped(make([]byte, 0, 2*len(raw)), raw, value, nil)
		if bytes.Equal(out, raw) {
			return raw // already as it is written: StripExtra keeps its text
		}
		return out
	}
	// Not one value: what the decoder makes of it (the first value, when
	// only trailing data is wrong).
	return stripDecoded(raw)
}

// stripDecoded is StripInlineData by way of a decoded value: decoded into
// an any, stripped, encoded again; raw itself when it does not decode.
// appendStripped writes what it writes, in one pass (FuzzStripInlineData).
func stripDecoded(raw json.RawMessage) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return raw
	}
	out, err := jsonx.Marshal(stripValue(v, ""))
	if err != nil {
		return raw
	}
	return out
}

// mayHoldInlineData reports whether raw contains one of the markers a value
// must contain for StripInlineData to change it: "base64", "data",
// "file_data" or "b64_json" (textMayHoldInlineData, on raw's bytes as they
// are: they are only read during the call).
func mayHoldInlineData(raw []byte) bool {
	return textMayHoldInlineData(unsafe.String(unsafe.SliceData(raw), len(raw)))
}

// textMayHoldInlineData is mayHoldInlineData for text, in two searches
// rather than one for each marker (they were a tenth of every extra's cost
// in the OpenHands profile): "64" is in base64 and "b64_json", `data"` in
// "data" and "file_data" (FuzzInlineDataMarkers).
func textMayHoldInlineData(s string) bool {
	for i := 0; ; i++ {
		k := strings.Index(s[i:], "64")
		if k < 0 {
			break
		}
		i += k
		if strings.HasSuffix(s[:i+2], "base64") || strings.HasPrefix(s[max(i-2, 0):], `"b64_json"`) {
			return true
		}
	}
	for i := 0; ; i++ {
		k := strings.Index(s[i:], `data"`)
		if k < 0 {
			return false
		}
		i += k
		if strings.HasSuffix(s[:i], `"`) || strings.HasSuffix(s[:i], `"file_`) {
			return true
		}
	}
}

// appendStripped appends the valid JSON value at b[i] (the member named key
// holds it, or an array under that member) as decoding it into an any,
// stripValue and jsonx.Marshal would write it — members sorted by name, the
// last of a repeated name kept, no space, strings in encoding/json's
// escaping, numbers as written — in one pass over the bytes, without the
// tree of maps that was most of the time of an extra with a "data" member.
// It returns the index after the value.
func appendStripped(out, b []byte, i int, key []byte) ([]byte, int) {
	switch b[i] {
	case '{':
		// Each member is written as it is read; when the names were not
		// in order (or one repeats), the members are written again in
		// order of name, over the first copies.
		type member struct {
			name       []byte // decoded
			start, end int    // its output, name and value
		}
		var buf [16]member
		ms := buf[:0]
		start := len(out)
		out = append(out, '{')
		inOrder := true
		for i = jsonx.SkipWS(b, i+1); b[i] != '}'; {
			end, _ := jsonx.ScanString(b, i)
			lit := b[i:end]
			m := member{name: decodedString(lit)}
			if len(ms) > 0 {
				out = append(out, ',')
				inOrder = inOrder && bytes.Compare(ms[len(ms)-1].name, m.name) < 0
			}
			m.start = len(out)
			out = appendJSONString(out, m.name, lit)
			out = append(out, ':')
			out, i = appendStripped(out, b, jsonx.SkipWS(b, jsonx.SkipWS(b, end)+1), m.name) // past the colon
			m.end = len(out)
			ms = append(ms, m)
			if i = jsonx.SkipWS(b, i); b[i] == ',' {
				i = jsonx.SkipWS(b, i+1)
			}
		}
		if inOrder {
			return append(out, '}'), i + 1
		}
		// Sorted by name, a repeated name's members in document order: its
		// last one is the value a map keeps.
		slices.SortFunc(ms, func(x, y member) int {
			if c := bytes.Compare(x.name, y.name); c != 0 {
				return c
			}
			return cmp.Compare(x.start, y.start)
		})
		sorted := len(out)
		out = append(out, '{')
		for k, m := range ms {
			if k+1 < len(ms) && bytes.Equal(ms[k+1].name, m.name) {
				continue
			}
			if out[len(out)-1] != '{' {
				out = append(out, ',')
			}
			out = append(out, out[m.start:m.end]...)
		}
		out = append(out, '}')
		n := copy(out[start:], out[sorted:])
		return out[:start+n], i + 1
	case '[':
		out = append(out, '[')
		for i = jsonx.SkipWS(b, i+1); b[i] != ']'; {
			if out[len(out)-1] != '[' {
				out = append(out, ',')
			}
			out, i = appendStripped(out, b, i, key)
			if i = jsonx.SkipWS(b, i); b[i] == ',' {
				i = jsonx.SkipWS(b, i+1)
			}
		}
		return append(out, ']'), i + 1
	case '"':
		end, _ := jsonx.ScanString(b, i)
		lit := b[i:end]
		if mayBeInlineData(lit[1:len(lit)-1], key) {
			if t := decodedString(lit); inlineData(t, key) {
				return appendJSONString(out, []byte(inlineDataRef(t)), nil), end
			}
		}
		if o, ok := appendCanonicalLiteral(out, lit); ok {
			return o, end
		}
		return appendJSONString(out, decodedString(lit), nil), end
	default: // a number (written as decoded with UseNumber) or a literal
		end, _ := jsonx.ScanValue(b, i, 0)
		return append(out, b[i:end]...), end
	}
}

// mayBeInlineData reports whether a string literal's content c, under the
// member key, can decode to inline data: long enough, and under a data key
// or starting with "data:" — as written, or in escapes within its first
// bytes (six bytes at most for each of the five letters).
func mayBeInlineData(c, key []byte) bool {
	if len(c) < inlineDataMin {
		// Escapes only shorten the text; an invalid byte becomes three.
		return !utf8.Valid(c)
	}
	return inlineData(c, key) || bytes.IndexByte(c[:30], '\\') >= 0
}

// appendCanonicalLiteral appends the valid string literal q as
// jsonx.Marshal writes its text, without decoding it to a string first:
// escapes are written again the way encoding/json writes their characters.
// It gives up (false) on what encoding/json decodes specially: invalid
// UTF-8, escaped surrogates, U+2028 and U+2029.
func appendCanonicalLiteral(out, q []byte) ([]byte, bool) {
	c := q[1 : len(q)-1]
	if !utf8.Valid(c) || bytes.Contains(c, lineSeparator) || bytes.Contains(c, paragraphSeparator) {
		return out, false
	}
	if bytes.IndexByte(c, '\\') < 0 { // written as it is, as the loop below would
		return append(out, q...), true
	}
	start := len(out)
	out = append(out, '"')
	for i := 0; i < len(c); i++ {
		x := c[i]
		if x != '\\' {
			out = append(out, x)
			continue
		}
		i++
		switch c[i] {
		case '"', '\\':
			out = append(out, '\\', c[i])
		case '/':
			out = append(out, '/')
		case 'b', 'f', 'n', 'r', 't':
			out = append(out, '\\', c[i])
		case 'u':
			r, _ := strconv.ParseUint(string(c[i+1:i+5]), 16, 32)
			i += 4
			switch {
			case r >= 0xd800 && r < 0xe000, r == 0x2028, r == 0x2029:
				return out[:start], false
			case r == '"' || r == '\\':
				out = append(out, '\\', byte(r))
			case r == '\b':
				out = append(out, '\\', 'b')
			case r == '\f':
				out = append(out, '\\', 'f')
			case r == '\n':
				out = append(out, '\\', 'n')
			case r == '\r':
				out = append(out, '\\', 'r')
			case r == '\t':
				out = append(out, '\\', 't')
			case r < 0x20:
				out = append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
			default:
				out = utf8.AppendRune(out, rune(r))
			}
		}
	}
	return append(out, '"'), true
}

const hexDigits = "0123456789abcdef"

// decodedString is the text of a valid JSON string literal q, as
// encoding/json decodes it: q's own bytes when it is plain (plainString).
func decodedString(q []byte) []byte {
	c := q[1 : len(q)-1]
	if plainString(c) {
		return c
	}
	if s, ok := unescape(c); ok { // the codec's text (FuzzString), without its reflection
		return []byte(s)
	}
	var s string
	json.Unmarshal(q, &s) // valid: cannot fail
	return []byte(s)
}

// plainString reports whether the content of a string literal is its own
// text and encoding/json writes it as it is: no escape, no control
// character, valid UTF-8 without U+2028 or U+2029 (which it escapes).
func plainString(c []byte) bool {
	ascii := true
	for _, x := range c {
		if x < 0x20 || x == '"' || x == '\\' {
			return false
		}
		ascii = ascii && x < utf8.RuneSelf
	}
	return ascii || utf8.Valid(c) && !bytes.Contains(c, lineSeparator) && !bytes.Contains(c, paragraphSeparator)
}

var (
	lineSeparator      = []byte("\u2028")
	paragraphSeparator = []byte("\u2029")
)

// appendJSONString appends s as jsonx.Marshal writes a string; literal,
// when not nil, is a literal of s, written as it is when it is plain.
func appendJSONString(out, s, literal []byte) []byte {
	if literal != nil && plainString(literal[1:len(literal)-1]) || literal == nil && plainString(s) {
		out = append(out, '"')
		out = append(out, s...)
		return append(out, '"')
	}
	q, _ := jsonx.Marshal(string(s))
	return append(out, q...)
}

// inlineData reports whether the string t under the member key is inline
// data that StripInlineData replaces.
func inlineData[T []byte | string](t, key T) bool {
	return len(t) >= inlineDataMin && (string(t[:5]) == "data:" ||
		string(key) == "data" || string(key) == "file_data" || string(key) == "b64_json")
}

// inlineDataRef is what replaces inline data t.
func inlineDataRef[T []byte | string](t T) string {
	sum := sha256.Sum256([]byte(t))
	return "sha256:" + hex.EncodeToString(sum[:]) + ";len=" + strconv.Itoa(len(t))
}

func stripValue(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = stripValue(e, k)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = stripValue(e, key)
		}
		return t
	case string:
		if inlineData(t, key) {
			return inlineDataRef(t)
		}
	}
	return v
}

// Extra returns the members of obj whose keys are not in known, as a compact
// JSON object with sorted keys, or nil when nothing is left.
func Extra(obj map[string]json.RawMessage, known ...string) *string {
	var buf [16]string // most objects fit: the keys stay off the heap
	keys := buf[:0]
	for k := range obj {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	return extraText(obj, keys, compact)
}

// ExtraNamed is Extra for an object split from a validated record whose
// member names are names (in order, repeats included): it ranges over
// names rather than the map and does not validate the values again, which
// were half the cost of an extra in profiles.
func ExtraNamed(obj map[string]json.RawMessage, names, known []string) *string {
	var buf [16]string
	keys := buf[:0]
	for _, k := range names {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	return extraText(obj, keys, func(v json.RawMessage) []byte { return jsonx.CompactValid(v) })
}

// extraText writes the members of obj named keys (a repeated name is one
// member, its last value), sorted, with their values as value writes them.
func extraText(obj map[string]json.RawMessage, keys []string, value func(json.RawMessage) []byte) *string {
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	size := 2
	for _, k := range keys {
		size += len(k) + len(obj[k]) + 4
	}
	var b strings.Builder // its String is the text, without a copy
	b.Grow(size)
	b.WriteByte('{')
	var quoted [64]byte
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonx.AppendQuoted(quoted[:0], k))
		b.WriteByte(':')
		b.Write(value(obj[k]))
	}
	b.WriteByte('}')
	s := b.String()
	return &s
}

// Without returns a copy of obj without keys, for building what goes to an
// extra column.
func Without(obj map[string]json.RawMessage, keys ...string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// MergeExtra adds key=value (JSON) into an extra object (nil = empty).
func MergeExtra(extra *string, key string, value json.RawMessage) *string {
	return MergeExtras(extra, map[string]json.RawMessage{key: value})
}

// MergeExtras adds every member of add into an extra object (nil = empty),
// as MergeExtra of each would, in one pass; with nothing to add it returns
// extra unchanged.
func MergeExtras(extra *string, add map[string]json.RawMessage) *string {
	if len(add) == 0 {
		return extra
	}
	var obj map[string]json.RawMessage
	if extra != nil && jsonx.Valid([]byte(*extra)) {
		obj = SplitObject([]byte(*extra))
	}
	if obj == nil {
		obj = make(map[string]json.RawMessage, len(add))
	}
	for k, v := range add {
		obj[k] = v
	}
	return Extra(obj)
}

// EmptyJSON reports whether the valid JSON value raw is null, [] or {}
// (with any space inside), which producers emit for absent fields.
func EmptyJSON(raw []byte) bool {
	raw = TrimSpace(raw)
	if string(raw) == "null" {
		return true
	}
	n := len(raw)
	return n >= 2 && (raw[0] == '[' && raw[n-1] == ']' || raw[0] == '{' && raw[n-1] == '}') &&
		len(bytes.TrimSpace(raw[1:n-1])) == 0
}

// compact is raw without insignificant space, or raw as a JSON string when
// it is not valid JSON.
func compact(raw json.RawMessage) []byte {
	if c, ok := jsonx.Compact(raw); ok {
		return c
	}
	s, _ := jsonx.Marshal(string(raw))
	return s
}

// CompactJSON returns raw without insignificant space (so that text columns
// do not depend on how a file was indented), or raw itself, trimmed, when it
// is not a valid object or array.
func CompactJSON(raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return raw // a scalar has no inner space to drop
	}
	if c, ok := jsonx.Compact(raw); ok {
		return c
	}
	return raw
}

// ArgumentsText normalizes tool-call arguments: objects/arrays become compact
// JSON text; a string is kept raw (OpenAI encodes arguments as a JSON
// string). valid says whether the text parses as JSON.
func ArgumentsText(raw json.RawMessage) (text *string, valid bool) {
	raw = bytes.TrimSpace(raw)
	if IsNull(raw) {
		return nil, false
	}
	if raw[0] != '"' {
		if c, ok := jsonx.Compact(raw); ok { // compact valid JSON is valid: no second check
			s := string(c)
			return &s, true
		}
	}
	var s string
	if raw[0] == '"' {
		s = String(raw)
	} else {
		s = string(compact(raw))
	}
	// The scanner, not encoding/json's Valid, which reads a byte at a time
	// and allocates its error for text that is not JSON (most strings).
	return &s, jsonx.IsValid(s)
}

// Pointer builds a JSON pointer (RFC 6901) from path parts.
func Pointer(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		switch v := p.(type) {
		case string:
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(v, "~", "~0"), "/", "~1"))
		case int:
			b.WriteString(strconv.Itoa(v))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		}
	}
	return b.String()
}
