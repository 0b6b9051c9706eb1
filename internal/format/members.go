package format

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Member lists. A line-oriented adapter reads a handful of members of each
// object a few times each; hashing every name into a map, and clearing it,
// was a sixth of the Codex profile and a quarter of Claude Code's. These
// keep an object's members in order instead, found by name from the end.

// Member is one member of a JSON object: its name, decoded (MemberName),
// and its value, both aliasing the object unless the name has escapes.
type Member struct{ Name, Val []byte }

// Members is an object's members in document order, repeats included.
type Members []Member

// Get is the value of member name, the last one when repeated (as a split
// map keeps), or nil.
func (ms Members) Get(name string) []byte {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].Name) == name {
			return ms[i].Val
		}
	}
	return nil
}

// Has reports whether ms has a member named name.
func (ms Members) Has(name string) bool {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].Name) == name {
			return true
		}
	}
	return false
}

// Delete removes every member named name, as deleting it from a map would.
func (ms *Members) Delete(name string) {
	l := *ms
	k := 0
	for k < len(l) && string(l[k].Name) != name {
		k++ // members before the first match stay where they are: no writes
	}
	if k == len(l) {
		return
	}
	for _, m := range l[k+1:] {
		if string(m.Name) != name {
			l[k] = m
			k++
		}
	}
	*ms = l[:k]
}

// Set replaces the members named name with one of value val: the first
// takes it in place (the order of different names does not matter to a
// map, nor to Extra, which sorts), later ones are deleted.
func (ms *Members) Set(name string, val []byte) {
	l := *ms
	for i := range l {
		if string(l[i].Name) == name {
			l[i].Val = val
			rest := l[i+1:]
			rest.Delete(name)
			*ms = l[:i+1+len(rest)]
			return
		}
	}
	*ms = append(l, Member{Name: []byte(name), Val: val})
}

// Map is ms as a map, for the few readers of whole objects.
func (ms Members) Map() map[string]jsonx.RawMessage {
	m := make(map[string]jsonx.RawMessage, len(ms))
	for _, mb := range ms {
		m[string(mb.Name)] = mb.Val
	}
	return m
}

// AppendMembers appends the members of the valid JSON value raw to out
// (as SplitObject finds them) and reports whether raw is an object.
func AppendMembers(out Members, raw []byte) (Members, bool) {
	ok := eachMember(raw, func(key, val []byte) { out = append(out, Member{Name: MemberName(key), Val: val}) })
	return out, ok
}

// ScanMembers validates the object at b[i] (no leading space), inside open
// containers, as jsonx.ScanValue would, and appends its members to out.
func ScanMembers(b []byte, i, open int, out Members) (int, Members, bool) {
	i = jsonx.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, out, true
	}
	for {
		var key []byte
		var ok bool
		if key, i, ok = scanName(b, i); !ok {
			return i, out, false
		}
		v := i
		if i, ok = jsonx.ScanValue(b, i, open+1); !ok {
			return i, out, false
		}
		out = append(out, Member{Name: key, Val: b[v:i]})
		var more bool
		if i, more, ok = nextMember(b, i, '}'); !more {
			return i, out, ok
		}
	}
}

// ScanMembersWithin is ScanMembers that also appends to inner the members
// of the last member named name when its value is an object (innerObject),
// in the same pass: an adapter reading a line's envelope and its message
// (or payload) reads each byte once. (Not ScanMembers calling itself: the
// recursion made the compiler move a caller's stack buffer for out to the
// heap.)
func ScanMembersWithin(b []byte, i, open int, out Members, name string, inner Members) (end int, members, innerMembers Members, innerObject, ok bool) {
	end, members, innerMembers, innerObject, _, ok = ScanMembersWithinListed(b, i, open, out, name, inner, "", nil)
	return end, members, innerMembers, innerObject, ok
}

// ScanMembersWithinListed is ScanMembersWithin that also splits the inner
// object's member named list, when it is an array (listed), into l, as
// ScanMembersWithinList does, in the same pass: a Claude Code line's
// content blocks, most of its bytes, are read once. With no list it is
// ScanMembersWithin (one loop for both cost Codex lines about 1% more
// instructions than a twin of it did; the twin was not kept).
func ScanMembersWithinListed(b []byte, i, open int, out Members, name string, inner Members, list string, l *List) (end int, members, innerMembers Members, innerObject, listed, ok bool) {
	i = jsonx.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, out, inner, false, false, true
	}
	start := len(inner)
	for {
		var key []byte
		if key, i, ok = scanName(b, i); !ok {
			return i, out, inner, false, false, false
		}
		v := i
		if name != "" && string(key) == name {
			// A repeated member keeps its last value, as decoders do.
			inner, innerObject, listed = inner[:start], false, false
			switch {
			case i < len(b) && b[i] == '{' && list != "":
				i, inner, listed, ok = ScanMembersWithinList(b, i, open+1, inner, list, l)
				innerObject = ok
			case i < len(b) && b[i] == '{':
				i, inner, ok = ScanMembers(b, i, open+1, inner)
				innerObject = ok
			default:
				i, ok = jsonx.ScanValue(b, i, open+1)
			}
		} else {
			i, ok = jsonx.ScanValue(b, i, open+1)
		}
		if !ok {
			return i, out, inner, false, false, false
		}
		out = append(out, Member{Name: key, Val: b[v:i]})
		var more bool
		if i, more, ok = nextMember(b, i, '}'); !more {
			return i, out, inner, innerObject && ok, listed && ok, ok
		}
	}
}

// scanName validates the member name at b[i] and its colon, and returns
// the name (MemberName) and the index of the value.
func scanName(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	var key []byte
	if end, plain := plainNameEnd(b, i); plain {
		key, i = b[i+1:end-1], end // what MemberName gives it
	} else {
		k := i
		var ok bool
		if i, ok = jsonx.ScanString(b, i); !ok {
			return nil, i, false
		}
		key = MemberName(b[k:i])
	}
	if i = jsonx.SkipWS(b, i); i >= len(b) || b[i] != ':' {
		return nil, i, false
	}
	return key, jsonx.SkipWS(b, i+1), true
}

// plainNameEnd is the index just after the string at b[i] (a quote), and
// true, when its text has no backslash, control character or byte of 0x80
// or more: such a name is valid and is its own bytes (MemberName), found in
// one pass rather than in ScanString's and then plainName's. Eight bytes
// are tested at a time; the lowest flagged byte is exact.
func plainNameEnd(b []byte, i int) (int, bool) {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	for i++; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		quote, slash := x^(lsb*'"'), x^(lsb*'\\')
		if hit := ((quote-lsb)&^quote | (slash-lsb)&^slash | (x - lsb*0x20) | x) & msb; hit != 0 {
			i += bits.TrailingZeros64(hit) / 8
			return i + 1, b[i] == '"'
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' {
			return i + 1, true
		} else if c == '\\' || c < 0x20 || c >= 0x80 {
			return i, false
		}
	}
	return i, false
}

// nextMember steps over what follows a member's value (or an element's,
// closer ']'): more when a comma asks for the next one; else ok when the
// container closes.
func nextMember(b []byte, i int, closer byte) (next int, more, ok bool) {
	if i = jsonx.SkipWS(b, i); i < len(b) && b[i] == ',' {
		return jsonx.SkipWS(b, i+1), true, true
	}
	if i < len(b) && b[i] == closer {
		return i + 1, false, true
	}
	return i, false, false
}

// Extra is ExtraNamed of the members of a validated object (values
// compacted without another check), written from the list: the names not
// known, sorted, a repeated one with its last value (add last of all, so
// that it wins, as MergeExtra would; nil for none).
func (ms Members) Extra(add *Member, known ...string) *string {
	text, ok := ms.AppendExtra(nil, add, known...)
	if !ok {
		return nil
	}
	s := unsafe.String(unsafe.SliceData(text), len(text)) // text is not kept: no copy
	return &s
}

// AppendExtra appends the text of ms.Extra(add, known...) to dst, for a
// reader that keeps many extras in one block rather than allocating each
// (ok false, dst as it was, when there is none). dst grows once, to fit.
func (ms Members) AppendExtra(dst []byte, add *Member, known ...string) (text []byte, ok bool) {
	// The kept members by index (len(ms) for add): sorting indexes moved
	// less than sorting members, and a stack list of members (48 bytes
	// each, cleared on every call) cost more than the sort.
	var buf [16]int32
	keep := buf[:0]
	for i := range ms { // by index: a copy of each member showed
		if !isKnown(known, ms[i].Name) {
			keep = append(keep, int32(i))
		}
	}
	if add != nil {
		keep = append(keep, int32(len(ms)))
	}
	if len(keep) == 0 {
		return dst, false
	}
	member := func(k int32) *Member {
		if int(k) == len(ms) {
			return add
		}
		return &ms[k]
	}
	// A stable insertion sort: objects have a handful of members, and
	// slices.SortStableFunc moved keep (and its func) to the heap.
	for i := 1; i < len(keep); i++ {
		for j := i; j > 0 && string(member(keep[j]).Name) < string(member(keep[j-1]).Name); j-- {
			keep[j], keep[j-1] = keep[j-1], keep[j]
		}
	}
	size := 2
	for _, k := range keep {
		mb := member(k)
		size += len(mb.Name) + len(mb.Val) + 4
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	start := len(dst)
	dst = append(dst, '{')
	for i, k := range keep {
		mb := member(k)
		if i+1 < len(keep) && string(member(keep[i+1]).Name) == string(mb.Name) {
			continue // a later value of the same name replaces this one
		}
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst = jsonx.AppendQuoted(dst, string(mb.Name))
		dst = append(dst, ':')
		dst = jsonx.AppendCompactValid(dst, mb.Val)
	}
	return append(dst, '}'), true
}

func isKnown(known []string, name []byte) bool {
	for _, k := range known {
		if string(name) == k {
			return true
		}
	}
	return false
}

// List is an array's elements, with the members of each element that is
// an object: a message list split once, in the pass that validates its
// line (ScanMembersWithinList) or after (SplitList), and reused from one
// list to the next.
type List struct {
	Elems   [][]byte
	members Members
	spans   [][2]int // element k's members are members[spans[k][0]:spans[k][1]]; -1 when not an object
}

// Object is the members of element k, and whether it is an object.
func (l *List) Object(k int) (Members, bool) {
	s := l.spans[k]
	if s[0] < 0 {
		return nil, false
	}
	return l.members[s[0]:s[1]:s[1]], true
}

func (l *List) reset() {
	l.Elems, l.members, l.spans = l.Elems[:0], l.members[:0], l.spans[:0]
}

// SplitList splits the valid JSON value raw into l (reset first), as
// SplitArray and AppendMembers would, in one pass, and reports whether it
// is an array.
func SplitList(l *List, raw []byte) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		l.reset()
		return false
	}
	SplitListAt(l, raw, i)
	return true
}

// SplitListAt is SplitList of the valid JSON array at raw[i], for a
// WalkMembers reader: it returns the index just after the array.
func SplitListAt(l *List, raw []byte, i int) int {
	l.reset()
	add := func(key, val []byte) { l.members = append(l.members, Member{Name: MemberName(key), Val: val}) }
	return WalkElements(raw, i, func(v int) int {
		var end int
		if raw[v] == '{' {
			start := len(l.members)
			end = members(raw, v, add)
			l.spans = append(l.spans, [2]int{start, len(l.members)})
		} else {
			end = skipValue(raw, v)
			l.spans = append(l.spans, [2]int{-1, -1})
		}
		l.Elems = append(l.Elems, raw[v:end])
		return end
	})
}

// ScanList validates the array at b[i] (no leading space), inside open
// containers, as jsonx.ScanValue would, and splits it into l (reset first).
func ScanList(b []byte, i, open int, l *List) (int, bool) {
	l.reset()
	i = jsonx.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		v := i
		var ok bool
		if i < len(b) && b[i] == '{' {
			start := len(l.members)
			i, l.members, ok = ScanMembers(b, i, open+1, l.members)
			l.spans = append(l.spans, [2]int{start, len(l.members)})
		} else {
			i, ok = jsonx.ScanValue(b, i, open+1)
			l.spans = append(l.spans, [2]int{-1, -1})
		}
		if !ok {
			return i, false
		}
		l.Elems = append(l.Elems, b[v:i])
		var more bool
		if i, more, ok = nextMember(b, i, ']'); !more {
			return i, ok
		}
	}
}

// ScanMembersWithinList is ScanMembersWithin for a member whose value is
// an array (a chat record's messages): listed says whether the last member
// named name is one, then split into l by ScanList in the same pass.
func ScanMembersWithinList(b []byte, i, open int, out Members, name string, l *List) (end int, members Members, listed, ok bool) {
	i = jsonx.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, out, false, true
	}
	for {
		var key []byte
		if key, i, ok = scanName(b, i); !ok {
			return i, out, false, false
		}
		v := i
		if string(key) == name && i < len(b) && b[i] == '[' {
			i, ok = ScanList(b, i, open+1, l)
			listed = ok
		} else {
			if string(key) == name {
				listed = false // a repeated member keeps its last value
			}
			i, ok = jsonx.ScanValue(b, i, open+1)
		}
		if !ok {
			return i, out, false, false
		}
		out = append(out, Member{Name: key, Val: b[v:i]})
		var more bool
		if i, more, ok = nextMember(b, i, '}'); !more {
			return i, out, listed && ok, ok
		}
	}
}
