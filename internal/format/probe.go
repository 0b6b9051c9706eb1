package format

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Shape is the top-level structure of a file, as far as the probe could see.
type Shape int

const (
	ShapeUnknown Shape = iota
	ShapeObject        // one JSON object document
	ShapeArray         // one JSON array document
	ShapeLines         // one JSON value per line (JSONL / NDJSON)
	// ShapeZip is a zip archive (Inspect AI .eval logs are zips). It is
	// binary, so no JSON adapter must read it; Probe.ZipNames lists what
	// the prefix shows of its entries.
	ShapeZip
)

func (s Shape) String() string {
	return [...]string{"unknown", "object", "array", "lines", "zip"}[s]
}

// Probe is the structural view of a file's first bytes that detection works
// on. It never holds more than the detection limit.
type Probe struct {
	Name string // file name, for extension hints and name-keyed formats
	// Prefix is the file's first bytes, without a leading UTF-8 byte order
	// mark (BOM says whether there was one).
	Prefix    []byte
	BOM       bool
	Truncated bool // the file is longer than Prefix
	Shape     Shape
	// Valid: the file is one JSON object, validated whole while it was
	// probed (ShapeObject, not Truncated), so an adapter given the same
	// bytes need not validate them again (Source.Valid).
	Valid bool
	// First is the document (ShapeObject), the first element (ShapeArray)
	// or the first non-blank line (ShapeLines). Second is the next element
	// or line when the prefix holds it. Either may be nil.
	First, Second *Obj
	// Note explains a structural problem (not JSON, empty, ...), for
	// "why was this file not recognized" messages.
	Note string
	// ZipNames are the names of a zip's entries whose local headers lie
	// inside the prefix, in file order (ShapeZip only). A zip's central
	// directory sits at its end, so this is all detection can see: usually
	// the first entries.
	ZipNames []string
}

// Obj is a top-level JSON object seen through a bounded prefix: its keys in
// order, and the values that were complete inside the prefix.
type Obj struct {
	Keys      []string
	Values    map[string]json.RawMessage
	Truncated bool // the prefix ended inside this object
}

// Has reports whether the object has key k (even if its value was cut off).
func (o *Obj) Has(k string) bool {
	if o == nil {
		return false
	}
	for _, key := range o.Keys {
		if key == k {
			return true
		}
	}
	return false
}

// Str returns the value of k when it is a complete JSON string.
func (o *Obj) Str(k string) string {
	if o == nil {
		return ""
	}
	var s string
	if raw, ok := o.Values[k]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// Sub returns the value of k as an object, when it is a complete object or at
// least its beginning is inside the prefix (the raw value is parsed
// leniently).
func (o *Obj) Sub(k string) *Obj {
	if o == nil {
		return nil
	}
	raw, ok := o.Values[k]
	if !ok {
		return nil
	}
	sub, _, _ := scanObject(raw)
	return sub
}

// FirstElem returns the first element of k's array value as an object.
func (o *Obj) FirstElem(k string) *Obj {
	if o == nil {
		return nil
	}
	raw, ok := o.Values[k]
	if !ok {
		return nil
	}
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	elem, _, _ := scanObject(bytes.TrimLeft(raw[1:], " \t\r\n"))
	return elem
}

// ReadProbe reads at most limit bytes from r and builds the probe.
func ReadProbe(r io.Reader, name string, limit int64) (*Probe, error) {
	return ReadProbeInto(nil, r, name, limit)
}

// ReadProbeInto is ReadProbe into buf's memory when it has room (the
// Probe then points into it): a caller that probes file after file reuses
// one buffer instead of a new one of up to the limit for each, which was
// a fifth of the page faults of normalizing 4 MB ATOF files.
func ReadProbeInto(buf []byte, r io.Reader, name string, limit int64) (*Probe, error) {
	if limit <= 0 {
		limit = DefaultMaxDetectionBytes
	}
	buf, err := readAtMost(buf, r, limit+1)
	if err != nil {
		return nil, err
	}
	truncated := int64(len(buf)) > limit
	if truncated {
		buf = buf[:limit]
	}
	return NewProbe(name, buf, truncated), nil
}

// readAtMost is io.ReadAll of r's first n bytes into buf's memory when it
// has room, else into one buffer of the size a file's Stat gives, where
// io.ReadAll grows one from 512 bytes (for every file, some 2.5× the
// default limit allocated and copied).
func readAtMost(buf []byte, r io.Reader, n int64) ([]byte, error) {
	size := int64(512)
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = min(st.Size()+1, n) // +1: room to see EOF without growing
		}
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, 0, max(size, 1))
	}
	buf = buf[:0]
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		read, err := r.Read(buf[len(buf):min(int64(cap(buf)), n)])
		buf = buf[:len(buf)+read]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// NewProbe builds a probe over an in-memory prefix of a file.
func NewProbe(name string, prefix []byte, truncated bool) *Probe {
	p := &Probe{Name: name, Truncated: truncated}
	p.Prefix, p.BOM = TrimBOM(prefix)
	p.analyze()
	return p
}

// BOM is the UTF-8 byte order mark (U+FEFF encoded), which editors on
// Windows write at the start of text files.
const BOM = "\xef\xbb\xbf"

// TrimBOM returns data without a leading UTF-8 byte order mark, and whether
// it had one. Files are accepted with or without one: the probe drops it,
// and ingest hands adapters the file after it, so no adapter sees it.
func TrimBOM(data []byte) ([]byte, bool) {
	if bytes.HasPrefix(data, []byte(BOM)) {
		return data[len(BOM):], true
	}
	return data, false
}

// LinesHint reports whether the file name says JSON Lines.
func (p *Probe) LinesHint() bool {
	ext := strings.ToLower(path.Ext(p.Name))
	return ext == ".jsonl" || ext == ".ndjson"
}

func (p *Probe) analyze() {
	if bytes.HasPrefix(p.Prefix, zipLocalHeader) || bytes.HasPrefix(p.Prefix, zipEmptyArchive) {
		p.Shape = ShapeZip
		p.ZipNames = zipLocalNames(p.Prefix)
		return
	}
	data := bytes.TrimLeft(p.Prefix, " \t\r\n")
	if len(data) == 0 {
		p.Note = "file is empty"
		return
	}
	switch data[0] {
	case '{':
		first, rest, valid := scanObject(data)
		p.First = first
		if first == nil {
			p.Note = "starts with '{' but is not a JSON object"
			return
		}
		// A second top-level value after the first one means JSON Lines.
		rest = bytes.TrimLeft(rest, " \t\r\n")
		switch {
		case first.Truncated && p.LinesHint():
			p.Shape = ShapeLines
		case first.Truncated:
			p.Shape = ShapeObject
		case len(rest) > 0 && rest[0] == '{':
			p.Shape = ShapeLines
			p.Second, _, _ = scanObject(rest)
		case len(rest) == 0 && p.LinesHint():
			p.Shape = ShapeLines
		case len(rest) == 0:
			p.Shape = ShapeObject
			p.Valid = valid && !p.Truncated
		default:
			p.Shape = ShapeUnknown
			p.Note = "unexpected data after the first JSON object"
		}
	case '[':
		p.Shape = ShapeArray
		elems := bytes.TrimLeft(data[1:], " \t\r\n")
		if len(elems) > 0 && elems[0] == '{' {
			var rest []byte
			p.First, rest, _ = scanObject(elems)
			rest = bytes.TrimLeft(rest, " \t\r\n")
			if len(rest) > 0 && rest[0] == ',' {
				p.Second, _, _ = scanObject(bytes.TrimLeft(rest[1:], " \t\r\n"))
			}
		}
	default:
		p.Note = "does not start with a JSON object or array"
	}
}

// scanObject reads the object at the start of data as far as the data goes.
// It returns nil when data does not start with a JSON object, the bytes
// after the object when it was complete, and whether the object was
// validated whole.
func scanObject(data []byte) (*Obj, []byte, bool) {
	if len(data) == 0 || data[0] != '{' {
		return nil, nil, false
	}
	if obj, rest, ok := scanCompleteLine(data); ok {
		return obj, rest, true
	}
	if obj, rest, ok := scanComplete(data); ok {
		return obj, rest, true
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, nil, false
	}
	obj := &Obj{Values: map[string]json.RawMessage{}}
	for {
		tok, err := dec.Token()
		if err != nil {
			obj.Truncated = true
			return obj, nil, false
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			return obj, data[dec.InputOffset():], false
		}
		key, ok := tok.(string)
		if !ok {
			obj.Truncated = true
			return obj, nil, false
		}
		obj.Keys = append(obj.Keys, key)
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			obj.Truncated = true
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				// Keep the partial value: Sub/FirstElem can still look inside it.
				obj.Values[key] = partialValue(data[start:])
			}
			return obj, nil, false
		}
		obj.Values[key] = raw
	}
}

// partialValue returns a cut-off value without the separator the decoder
// left in front of it.
func partialValue(b []byte) json.RawMessage {
	b = bytes.TrimLeft(b, " \t\r\n:")
	return json.RawMessage(b)
}

// scanCompleteLine is scanObject's fast path for the common case: the object
// ends at the first newline (a JSONL line) or is all of data (a whole small
// document). One validation, then a zero-copy split; anything else goes
// through the token decoder, which copes with cut-off values.
func scanCompleteLine(data []byte) (*Obj, []byte, bool) {
	end := bytes.IndexByte(data, '\n')
	if end < 0 {
		end = len(data)
	}
	line := bytes.TrimRight(data[:end], " \t\r")
	if !jsonx.Valid(line) {
		return nil, nil, false
	}
	obj := &Obj{Values: map[string]json.RawMessage{}}
	EachMember(line, func(key string, val []byte) {
		if _, dup := obj.Values[key]; !dup {
			obj.Keys = append(obj.Keys, key)
		}
		obj.Values[key] = val
	})
	return obj, data[end:], true
}

// scanComplete is scanObject's fast path for an object that spans lines
// and is all of data (a whole pretty-printed document: Inspect logs,
// ATIF): the token decoder, which scanned every value twice and copied
// it, took half the time of normalizing such files. One pass validates
// the object and splits it in place (ScanMembers; validating, then
// splitting, read the document twice: a third of the Inspect profile),
// read as the decoder does: every key in order (duplicates included),
// decoded by encoding/json, the last value kept.
func scanComplete(data []byte) (*Obj, []byte, bool) {
	doc := data[:len(bytes.TrimRight(data, " \t\r\n"))]
	var buf [16]Member
	end, members, ok := ScanMembers(doc, 0, 0, buf[:0])
	if !ok || end != len(doc) {
		return nil, nil, false
	}
	obj := &Obj{Values: make(map[string]json.RawMessage, len(members))}
	for _, m := range members {
		raw := writtenName(doc, m.Val)
		key := string(raw[1 : len(raw)-1])
		if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			json.Unmarshal(raw, &key)
		}
		obj.Keys = append(obj.Keys, key)
		obj.Values[key] = m.Val
	}
	return obj, data[len(doc):], true
}

// writtenName is the name of the member whose value val is, as written in
// the valid object doc (val is a slice of doc): the string that ends
// before val's colon, whose opening quote is the first one back that no
// odd run of backslashes escapes.
func writtenName(doc, val []byte) []byte {
	i := cap(doc) - cap(val) - 1 // just before val
	for doc[i] != ':' {
		i--
	}
	for doc[i] != '"' {
		i--
	}
	closing := i
	for i--; doc[i] != '"' || TrailingBackslashes(doc[:i])%2 == 1; i-- {
	}
	return doc[i : closing+1]
}

var (
	zipLocalHeader  = []byte("PK\x03\x04")
	zipEmptyArchive = []byte("PK\x05\x06") // an end-of-central-directory record only
)

// maxZipNames bounds the entry names read from a prefix.
const maxZipNames = 64

// zipLocalNames walks the local file headers at the start of a zip: each
// gives its entry's name and compressed size, which leads to the next one.
// It stops at the end of the prefix, at a header whose size is only known
// after its data (data descriptor, zip64), or at anything unexpected.
func zipLocalNames(data []byte) []string {
	var names []string
	for off := 0; len(names) < maxZipNames; {
		if len(data)-off < 30 || !bytes.Equal(data[off:off+4], zipLocalHeader) {
			break
		}
		h := data[off:]
		flags := binary.LittleEndian.Uint16(h[6:])
		size := binary.LittleEndian.Uint32(h[18:])
		nameLen := int(binary.LittleEndian.Uint16(h[26:]))
		extraLen := int(binary.LittleEndian.Uint16(h[28:]))
		if len(h) < 30+nameLen {
			break
		}
		names = append(names, string(h[30:30+nameLen]))
		if flags&0x8 != 0 || size == 0xFFFFFFFF || uint64(size) > uint64(len(data)) {
			break
		}
		off += 30 + nameLen + extraLen + int(size)
	}
	return names
}
