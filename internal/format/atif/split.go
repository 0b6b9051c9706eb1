package atif

import (
	"errors"

	"github.com/pchronicle/pchronicle/internal/jsonx"

	"github.com/pchronicle/pchronicle/internal/format"
)

// A document (or JSONL line) is validated once, then split in place: its
// members and theirs alias its bytes. Decoding every level into maps of
// copies validated the same bytes again at each level, about half of the
// adapter's time (docs/performance.md, "Real producer formats").

// objectOf splits a value of a validated document as decoding it into an
// object would: its members for an object, nil for null or absent, and
// ok false for any other value.
func objectOf(raw []byte) (m object, ok bool) {
	if m = format.SplitObject(raw); m != nil {
		return m, true
	}
	return nil, format.IsNull(raw)
}

// objectsOf is objectOf for an array of objects: ok false unless raw is an
// array (or null) whose elements are objects or null (a nil object).
func objectsOf(raw []byte) ([]object, bool) { return format.SplitObjects(raw) }

// extra is format.Extra for an object split from a validated document: its
// values need no second validation.
func extra(o object) *string {
	var buf [16]string // most objects fit: the names stay off the heap
	names := buf[:0]
	for k := range o {
		names = append(names, k)
	}
	return format.ExtraNamed(o, names, nil)
}

// errInvalid stands for the decoder's error on input the decoder accepts
// but the validator does not.
var errInvalid = errors.New("invalid JSON")

// decodeError is the decoder's error for a document that is not valid JSON
// or not an object, as decoding it used to report.
func decodeError(data []byte) error {
	var m object
	if err := jsonx.Unmarshal(data, &m); err != nil {
		return err
	}
	return errInvalid
}
