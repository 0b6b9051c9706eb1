package openai

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// FuzzScanRolloutLine checks the one-pass scanner against the general path:
// a line it accepts is valid JSON whose envelope and payload members are
// what decodeEnvelope and SplitObject give, and scanValue agrees with
// jsonx.Valid on any value that is not deeply nested.
func FuzzScanRolloutLine(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		for _, line := range bytes.Split(s, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, s := range []string{`{"type":"x","payload":{"a":1,"a":[1,{"b":"\u00e9\n"}],"c":-0.5e+3}}`,
		`{"type":"x","payload":[],"payload":{"k":true}}`, `{"type":"x","payload":{"k":null},"payload":7}`,
		`{"type":"x","p\u0061yload":{}}`, `{"type":1}`, `{"type":"a","type":"b"}`, " {\"type\" : \"x\" , \"payload\" : { \"a\" : [ 1 , 2 ] } } ",
		"{\"type\":\"\xff\",\"payload\":{\"\xfe\":\"\x01\"}}", `{"type":"x","payload":{"a":"\ud800"}}`, `[{"type":"x"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		end, ok := scanValue(line, skipWS(line, 0))
		scanned := ok && skipWS(line, end) == len(line)
		if valid := jsonx.Valid(line); scanned && !valid || !scanned && valid && depth(line) < maxScanDepth {
			t.Fatalf("scanValue %v, jsonx.Valid %v", scanned, valid)
		}
		env, members, object, ok := scanRolloutLine(line, nil)
		if !ok {
			return
		}
		want, err := decodeEnvelope(line)
		if err != nil || !jsonx.Valid(line) {
			t.Fatalf("scanned a line the codec rejects: %v", err)
		}
		if !bytes.Equal(env.Timestamp, want.Timestamp) || env.Type != want.Type || !bytes.Equal(env.Payload, want.Payload) {
			t.Fatalf("envelope %q %q %q, want %q %q %q", env.Timestamp, env.Type, env.Payload, want.Timestamp, want.Type, want.Payload)
		}
		split := format.SplitObject(want.Payload)
		if object != (split != nil) {
			t.Fatalf("payload object %v, SplitObject %v", object, split != nil)
		}
		got := map[string]jsonx.RawMessage{}
		for _, m := range members {
			got[format.Symbol(m.key)] = m.val
		}
		if object && len(got) != len(split) {
			t.Fatalf("members %q, want %q", got, split)
		}
		for k, v := range split {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("member %q = %q, want %q", k, got[k], v)
			}
		}
	})
}

// depth bounds the nesting of data by its count of openers.
func depth(data []byte) int {
	return strings.Count(string(data), "[") + strings.Count(string(data), "{")
}
