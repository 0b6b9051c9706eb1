package inspect

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// attachments are a sample's extracted texts. Inspect replaces long strings
// (and images) by "attachment://<key>" and stores the text once per sample:
// keyed by content hash in a sample's "attachments" object, or by position
// in a chunked sample's attachments sequence. Values are raw JSON string
// literals, so resolving a reference is a splice of bytes.
type attachments struct {
	byHash  map[string]jsonx.RawMessage
	byIndex [][]byte
}

func (a *attachments) lookup(key []byte) ([]byte, bool) {
	if a.byIndex != nil {
		i, err := strconv.Atoi(string(key))
		if err != nil || i < 0 || i >= len(a.byIndex) {
			return nil, false
		}
		return a.byIndex[i], true
	}
	v, ok := a.byHash[string(key)]
	return v, ok
}

// refSchemes are the reference prefixes Inspect resolves: attachment://,
// and tc:// of logs written before it was renamed.
var refSchemes = []string{"attachment", "tc"}

// resolve returns raw (valid JSON) with every string whose whole value is
// an attachment reference replaced by the attachment's text, as Inspect
// resolves them; a string that only contains a reference is left alone.
// missing counts references to attachments the sample does not have.
func (a *attachments) resolve(raw []byte) (out []byte, missing int) {
	last := 0
	for i := 0; ; {
		k := bytes.Index(raw[i:], []byte("://"))
		if k < 0 {
			break
		}
		sep := i + k
		i = sep + 3
		open := refOpen(raw, sep)
		if open < 0 {
			continue
		}
		n := bytes.IndexByte(raw[i:], '"')
		if n < 0 {
			break
		}
		key := raw[i : i+n]
		if bytes.IndexByte(key, '\\') >= 0 {
			continue
		}
		val, ok := a.lookup(key)
		if !ok {
			missing++
			continue
		}
		out = append(append(out, raw[last:open]...), val...)
		last = i + n + 1
		i = last
	}
	if out == nil {
		return raw, missing
	}
	return append(out, raw[last:]...), missing
}

// refOpen returns the position of the quote that opens a reference whose
// "://" is at sep, or -1. In valid JSON an unescaped quote followed by a
// scheme can only open a string.
func refOpen(raw []byte, sep int) int {
	for _, scheme := range refSchemes {
		q := sep - len(scheme) - 1
		if q >= 0 && raw[q] == '"' && string(raw[q+1:sep]) == scheme && format.TrailingBackslashes(raw[:q])%2 == 0 {
			return q
		}
	}
	return -1
}

// nonFinite replaces the NaN, Infinity and -Infinity constants that
// Inspect writes for non-finite numbers (an unscored sample's score is
// NaN) with null, which is all JSON can say. ok is false when data has
// none, so that the caller reports its real syntax error.
func nonFinite(data []byte) (out []byte, ok bool) {
	last := 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		var n int
		switch {
		case c == '"':
			inString = true
		case c == 'N' && bytes.HasPrefix(data[i:], []byte("NaN")):
			n = 3
		case c == 'I' && bytes.HasPrefix(data[i:], []byte("Infinity")):
			n = 8
		case c == '-' && bytes.HasPrefix(data[i:], []byte("-Infinity")):
			n = 9
		}
		if n > 0 {
			out = append(append(out, data[last:i]...), "null"...)
			last = i + n
			i += n - 1
		}
	}
	if out == nil {
		return data, false
	}
	return append(out, data[last:]...), true
}

// messageContent is a message's content mapped to step columns.
type messageContent struct {
	text      *string
	kind      string
	reasoning *string
	// redacted counts reasoning parts whose text is encrypted and that
	// carry no summary.
	redacted int
}

// Message kinds this adapter adds to format.KindText/KindMultimodal.
const (
	kindToolCallsOnly = "tool_calls_only"
	kindRefusal       = "refusal"
	kindReasoning     = "reasoning"
)

// readContent maps Inspect content: a string, or a list of parts where
// reasoning parts give the reasoning, text parts the text (joined with
// newlines), and any other part (image, audio, video, document, tool_use,
// data) makes the text the parts' JSON (kind multimodal, inline data
// replaced by digests).
func readContent(raw jsonx.RawMessage) messageContent {
	c := messageContent{kind: format.KindText}
	parts, isList := format.SplitArray(raw)
	if !isList {
		if text, kind, ok := format.Content(raw); ok {
			c.text, c.kind = &text, kind
		}
		return c
	}
	var texts, reasoning []string
	var rest [][]byte
	other, refusal := false, false
	for _, p := range parts {
		part := format.SplitObject(p)
		switch format.String(part["type"]) {
		case "reasoning":
			if redacted, _ := format.Bool(part["redacted"]); !redacted {
				reasoning = append(reasoning, format.String(part["reasoning"]))
			} else if s := format.String(part["summary"]); s != "" {
				reasoning = append(reasoning, s)
			} else {
				c.redacted++
			}
			continue
		case "text":
			texts = append(texts, format.String(part["text"]))
			if r, _ := format.Bool(part["refusal"]); r {
				refusal = true
			}
		default:
			other = true
		}
		rest = append(rest, p)
	}
	if len(reasoning) > 0 {
		r := strings.Join(reasoning, "\n")
		c.reasoning = &r
	}
	switch {
	case other:
		text, kind, _ := format.Content(format.JoinArray(rest))
		c.text, c.kind = &text, kind
	case len(texts) > 0:
		text := strings.Join(texts, "\n")
		c.text = &text
		if refusal {
			c.kind = kindRefusal
		}
	}
	return c
}
