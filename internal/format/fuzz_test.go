package format

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzProbe: building a probe over any prefix must not panic, and every
// complete value it reports must be valid JSON.
func FuzzProbe(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "{\"a\":1}\n{\"b\":[1,2", `[{"messages":[{"role":"user"}]}]`, `{"x":"\u00e9\"`, "\xef\xbb\xbf{}", `[`, `{"a":{"b":`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, truncated bool) {
		p := NewProbe("f.jsonl", data, truncated)
		for _, o := range []*Obj{p.First, p.Second} {
			if o == nil {
				continue
			}
			for k, v := range o.Values {
				if !o.Truncated && !json.Valid(v) {
					t.Fatalf("key %q: invalid complete value %q", k, v)
				}
				o.Sub(k)
				o.FirstElem(k)
				o.Str(k)
			}
		}
	})
}

// FuzzValues: the lenient value helpers accept any bytes without panicking.
func FuzzValues(f *testing.F) {
	for _, s := range []string{`"2026-01-01T00:00:00Z"`, `1e300`, `[{"type":"text","text":"a"}]`, `{"data":"` + strings.Repeat("A", 300) + `"}`, `"\"{}\""`, `-0`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		Time(raw)
		Int(raw)
		Float(raw)
		Bool(raw)
		String(raw)
		Content(raw)
		ArgumentsText(raw)
		StripInlineData(raw)
		_ = EachLine(context.Background(), strings.NewReader(string(raw)), func(int64, []byte) error { return nil })
	})
}
