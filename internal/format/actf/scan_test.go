package actf

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// FuzzScanLine checks the one-pass scanner against the general path: a
// line it accepts is one splitLine accepts, with the same members, and
// scanning an object is jsonx.Valid (and encoding/json's Valid). subFields
// is format.Fields for valid JSON.
func FuzzScanLine(f *testing.F) {
	in, _ := loadInputs()
	for _, data := range in {
		for _, line := range bytes.Split(data, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, s := range []string{`{"kind":"x","data":{"a":1,"a":[1,{"b":"\u00e9\n"}],"c":-0.5e+3},"data":null}`,
		`{"k\u0069nd":"scope"}`, `{"kind":1,"kind":"mark","x":[],"y":{},"z":""}`, " {\"kind\" : \"x\" , \"input\" : { \"a\" : [ 1 , 2 ] } } ",
		"{\"kind\":\"\xff\",\"\xfe\":\"\x01\"}", "{\"d\xffata\":1}", `{"a":"\ud800"}`, `[{"kind":"x"}]`, `{} `, `{}x`, `null`, `{"\u0063ontent":1,"role":2,"role":3}`, ` { "role" : [ ] , "a":{"b":"\"}"} } `,
		`{"data":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
		`{"data":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got, want lineMembers
		raw := bytes.Clone(line)
		ok := scanLine(raw, &got)
		wantRaw := splitLine(line, &want)
		if jsonx.Valid(line) {
			keys := append([]string{"kind", "data", "a"}, outputKeys...)
			got, want := make([][]byte, len(keys)), make([][]byte, len(keys))
			if isObj, wantObj := subFields(line, keys, got), format.Fields(line, keys, want); isObj != wantObj || !reflect.DeepEqual(got, want) {
				t.Fatalf("subFields %v %q, want %v %q", isObj, got, wantObj, want)
			}
		}
		if valid := jsonx.Valid(line); ok && (!valid || !json.Valid(line)) {
			t.Fatalf("scanned a line the codecs reject (jsonx %v)", valid)
		}
		if !ok {
			if wantRaw != nil && !bytes.Contains(line, []byte(`\`)) {
				t.Fatalf("gave up on a valid object without escapes")
			}
			return
		}
		if wantRaw == nil {
			t.Fatalf("scanned a line splitLine rejects")
		}
		if got.rest != want.rest || got.dataRest != want.dataRest {
			t.Fatalf("rest %v %v, want %v %v", got.rest, got.dataRest, want.rest, want.dataRest)
		}
		for i := range got.vals {
			if !bytes.Equal(got.vals[i], want.vals[i]) || (got.vals[i] == nil) != (want.vals[i] == nil) {
				t.Fatalf("field %d = %q, want %q", i, got.vals[i], want.vals[i])
			}
		}
	})
}

// FuzzMessages checks the payload reads that decode a message from members
// found in another pass (an input list's check, an llm output's shape)
// against decoding the message on its own.
func FuzzMessages(f *testing.F) {
	in, _ := loadInputs()
	for _, data := range in {
		for _, line := range bytes.Split(data, []byte("\n")) {
			var m [3][]byte
			if format.Fields(line, []string{"input", "output", "data"}, m[:]) {
				for _, v := range m {
					if v != nil {
						f.Add(v)
					}
				}
			}
		}
	}
	for _, s := range []string{`{"content":"a","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{}"}}],"usage":{"prompt_tokens":1}}`,
		`{"messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"name":"g","arguments":{"x":1}}]},{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"b"}]}],"system":"s"}`,
		`{"contents":[{"role":"user","parts":[{"text":"a"}]}],"systemInstruction":{"parts":[{"text":"s"}]}}`,
		`{"r\u006fle":"user","content":"a","content":"b","reasoning":"r"}`, `[{"parts":null,"role":"x"}]`} {
		f.Add([]byte(s))
	}
	clean := func(m message) message {
		m.raw, m.fields, m.pending, m.fingerprint, m.fingerprinted = nil, messageFields{}, false, nil, false
		return m
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !jsonx.Valid(raw) {
			return
		}
		if msgs, ok := inputMessages(raw); ok {
			for i := range msgs {
				if !msgs[i].pending {
					continue // a system prompt kept apart
				}
				msgs[i].decode()
				if got, want := clean(msgs[i]), decodeMessage(msgs[i].raw); !reflect.DeepEqual(got, want) {
					t.Fatalf("input message %d = %+v, want %+v", i, got, want)
				}
			}
		}
		var f [5][]byte
		if !subFields(raw, []string{"choices", "candidates", "message", "content", "tool_calls"}, f[:]) ||
			f[0] != nil || f[1] != nil || isObject(f[2]) || f[3] == nil && f[4] == nil {
			return
		}
		if got, _, ok := agentOutput(raw); !ok || !reflect.DeepEqual(got, decodeMessage(raw)) {
			t.Fatalf("output message = %+v %v, want %+v", got, ok, decodeMessage(raw))
		}
	})
}
