package openhands

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// This file validates an output line and splits it, its history and the
// history's events in one pass. Validating the line (jsonx.Valid), then
// splitting the record, then its history, then each event read the bytes
// of every event four times, which showed in the adapter's profile. The
// scanner accepts what jsonx.Valid accepts and splits as format.SplitObject
// and format.SplitArray do (FuzzScanRecord checks both); a line it gives
// up on takes lineObject's path, so that errors are that path's whatever
// the input.

// history is a record's event list split: the elements of its history
// (the last one, when repeated) and the members of the first ones
// (presplitEvents at most, nil for an element that is not an object).
// isArray is false when the history is absent or not an array.
type history struct {
	elems   [][]byte
	events  []map[string]jsonx.RawMessage
	isArray bool
}

// presplitEvents bounds the events whose members are split while the line
// is scanned, all held until the record is mapped: beyond it, as for a
// history that did not come from a line, each event is split as it is
// mapped, so that a history of many small events cannot hold a map per
// element at once.
const presplitEvents = 4096

// member is one member of an object: its name as written (a JSON string)
// and its value.
type member struct{ name, val []byte }

// scanRecord validates line and returns its members, with its history
// split into hist when hist is not nil. ok is false when line is not a
// valid JSON object.
func scanRecord(line []byte, hist *history) (obj map[string]jsonx.RawMessage, ok bool) {
	i := jsonx.SkipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil, false
	}
	obj, i, ok = scanObject(line, i, 0, hist)
	if !ok || jsonx.SkipWS(line, i) != len(line) {
		return nil, false
	}
	return obj, true
}

// scanObject validates the object at b[i], inside open containers, and
// returns its members and the index just after it. With hist, the value
// of a member named history that is an array is split into it.
func scanObject(b []byte, i, open int, hist *history) (map[string]jsonx.RawMessage, int, bool) {
	var buf [24]member // an event has about 15: the list stays off the heap
	members := buf[:0]
	i = jsonx.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return map[string]jsonx.RawMessage{}, i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, i, false
		}
		start := i
		var ok bool
		if i, ok = jsonx.ScanString(b, i); !ok {
			return nil, i, false
		}
		name := b[start:i]
		if i = jsonx.SkipWS(b, i); i >= len(b) || b[i] != ':' {
			return nil, i, false
		}
		i = jsonx.SkipWS(b, i+1)
		vstart := i
		if hist != nil && string(format.MemberName(name)) == "history" {
			*hist = history{} // a repeated member keeps its last value, as decoders do
			if i < len(b) && b[i] == '[' {
				i, ok = scanHistory(b, i, open+1, hist)
			} else {
				i, ok = jsonx.ScanValue(b, i, open+1)
			}
		} else {
			i, ok = jsonx.ScanValue(b, i, open+1)
		}
		if !ok {
			return nil, i, false
		}
		members = append(members, member{name, b[vstart:i]})
		if i = jsonx.SkipWS(b, i); i < len(b) && b[i] == ',' {
			i = jsonx.SkipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			i++
			break
		}
		return nil, i, false
	}
	obj := make(map[string]jsonx.RawMessage, len(members))
	for _, m := range members {
		obj[format.Symbol(m.name)] = m.val // the name as SplitObject decodes it
	}
	return obj, i, true
}

// scanHistory validates the array at b[i], inside open containers, and
// splits its elements, and the members of those that are objects, into
// hist.
func scanHistory(b []byte, i, open int, hist *history) (int, bool) {
	hist.isArray = true
	i = jsonx.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		start := i
		var ev map[string]jsonx.RawMessage
		var ok bool
		presplit := len(hist.elems) < presplitEvents
		if presplit && i < len(b) && b[i] == '{' {
			ev, i, ok = scanObject(b, i, open+1, nil)
		} else {
			i, ok = jsonx.ScanValue(b, i, open+1)
		}
		if !ok {
			return i, false
		}
		hist.elems = append(hist.elems, b[start:i])
		if presplit {
			hist.events = append(hist.events, ev)
		}
		if i = jsonx.SkipWS(b, i); i < len(b) && b[i] == ',' {
			i = jsonx.SkipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		return i, false
	}
}
