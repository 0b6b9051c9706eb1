package inspect

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// scoreColumns are the Score members runs.scores keeps per scorer; the
// others (metadata, a non-empty edit history) go to runs.extra.score_details.
var scoreColumns = []string{"value", "answer", "explanation"}

// scoreSet is a sample's scores ({scorer name: Score}) mapped to runs
// columns.
type scoreSet struct {
	scores  *string          // runs.scores: {name: {value, answer, explanation}}, in document order
	details jsonx.RawMessage // {name: {other members}}, or nil
	reward  *float64         // the first scorer's value as a number (see scoreValue)
	first   string           // the first scorer's name
	// converted is false when the first value is a string Inspect cannot
	// convert (reward is then 0, as Inspect counts it).
	converted bool
}

func readScores(raw jsonx.RawMessage) scoreSet {
	set := scoreSet{converted: true}
	var cols, details bytes.Buffer
	n, nd := 0, 0
	format.EachMember(raw, func(name string, val []byte) {
		score := format.SplitObject(val)
		if score == nil {
			return
		}
		if n == 0 {
			set.first = name
			set.reward, set.converted = scoreValue(score["value"])
		}
		kept := map[string]jsonx.RawMessage{}
		for _, k := range scoreColumns {
			if v, ok := score[k]; ok {
				kept[k] = v
				delete(score, k)
			}
		}
		if h, ok := format.SplitArray(score["history"]); ok && len(h) == 0 {
			delete(score, "history")
		}
		appendMember(&cols, &n, name, rawExtra(kept))
		if len(score) > 0 {
			appendMember(&details, &nd, name, rawExtra(score))
		}
	})
	if n > 0 {
		s := cols.String() + "}"
		set.scores = &s
	}
	if nd > 0 {
		set.details = jsonx.RawMessage(details.String() + "}")
	}
	return set
}

// appendMember writes name: val into the object being built in b.
func appendMember(b *bytes.Buffer, n *int, name string, val []byte) {
	if *n == 0 {
		b.WriteByte('{')
	} else {
		b.WriteByte(',')
	}
	*n++
	b.Write(mustJSON(name))
	b.WriteByte(':')
	b.Write(val)
}

// scoreValue converts a score value to a number the way Inspect's
// value_to_float does: numbers and booleans as they are; "C" (correct) 1,
// "P" (partial) 0.5, "I" (incorrect) and "N" (no answer) 0; otherwise, in
// lower case, yes/true 1, no/false 0, a finite number written as text its
// value. A string none of these match gives 0, as in Inspect, with ok =
// false so the caller can warn as Inspect does. null (Inspect's NaN
// "unscored" value, see nonFinite), objects and lists give no number.
func scoreValue(raw jsonx.RawMessage) (v *float64, ok bool) {
	raw = bytes.TrimSpace(raw)
	if format.IsNull(raw) {
		return nil, true
	}
	num := func(f float64) (*float64, bool) { return &f, true }
	switch raw[0] {
	case '{', '[':
		return nil, true
	case 't', 'f':
		b, _ := format.Bool(raw)
		if b {
			return num(1)
		}
		return num(0)
	case '"':
	default:
		if f, ok := format.Float(raw); ok {
			return num(f)
		}
		return nil, true
	}
	s := format.String(raw)
	switch s {
	case "C":
		return num(1)
	case "P":
		return num(0.5)
	case "I", "N":
		return num(0)
	}
	switch strings.ToLower(s) {
	case "yes", "true":
		return num(1)
	case "no", "false":
		return num(0)
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return num(f)
	}
	zero := 0.0
	return &zero, false
}
