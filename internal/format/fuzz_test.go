package format

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// FuzzProbe: building a probe over any prefix must not panic, and every
// complete value it reports must be valid JSON.
func FuzzProbe(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "{\"a\":1}\n{\"b\":[1,2", `[{"messages":[{"role":"user"}]}]`, `{"x":"\u00e9\"`, "\xef\xbb\xbf{}", `[`, `{"a":{"b":`, "{\n \"a\": [1,\n 2]\n}\n", `{"a":1,}`, "{\"a\":1} x",
		"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x06\x00\x00\x00a.json{}",
		"{\n \"a\\\\\" : 1,\n \"b\\\"\":\"x\\\\\",\"\\u00e9\\\\\\\"\" :{\"k\":[\"\\\"\"]},\"\\ud800\":2, \"a\\\\\":3,\"\xff\":4}\n"} {
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
		// Valid lets a document adapter skip its own validation: it must
		// hold exactly when that validation would pass on a whole object.
		doc := NewProbe("f.json", data, truncated)
		body := bytes.Trim(doc.Prefix, " \t\r\n") // JSON's spaces only: "\f{}" is not a document
		want := !truncated && len(body) > 0 && body[0] == '{' && jsonx.Valid(body)
		if doc.Valid != want {
			t.Fatalf("Valid %v for %q (truncated %v), want %v", doc.Valid, data, truncated, want)
		}
		// A validated document of several lines is split in the
		// validating pass: as splitting it after validation did.
		if doc.Valid && bytes.IndexByte(body, '\n') >= 0 {
			keys, values := splitAfterValidation(body)
			if !slices.Equal(doc.First.Keys, keys) || !maps.EqualFunc(doc.First.Values, values, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("probe split %q %q, want %q %q", doc.First.Keys, doc.First.Values, keys, values)
			}
		}
	})
}

// splitAfterValidation is the probe's split of a whole valid object as it
// was before scanComplete split it in the validating pass.
func splitAfterValidation(doc []byte) ([]string, map[string]json.RawMessage) {
	var keys []string
	values := map[string]json.RawMessage{}
	eachMember(doc, func(raw, val []byte) {
		key := string(raw[1 : len(raw)-1])
		if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			json.Unmarshal(raw, &key)
		}
		keys = append(keys, key)
		values[key] = val
	})
	return keys, values
}

// FuzzValues: the lenient value helpers accept any bytes without panicking,
// Symbol is String (twice, for the cached answer), and ValidContent is
// Content for valid JSON.
func FuzzValues(f *testing.F) {
	for _, s := range []string{`"2026-01-01T00:00:00Z"`, `1e300`, `[{"type":"text","text":"a"}]`, `[{"text":"a\nb","type":"output_text"},{"text":1},{"t\u0065xt":"c"}]`, `[null]`, `[]`, `[{"type":"text","text":"a","text":"b"}]`, `{"data":"` + strings.Repeat("A", 300) + `"}`, `"\"{}\""`, `-0`, "\"\xff\"", `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		Time(raw)
		Int(raw)
		Float(raw)
		Bool(raw)
		for range 2 {
			if got, want := Symbol(raw), String(raw); got != want {
				t.Fatalf("Symbol(%q) = %q, String %q", raw, got, want)
			}
		}
		text, kind, ok := Content(raw)
		if jsonx.IsValid(raw) && bytes.Equal(bytes.TrimSpace(raw), raw) {
			if vt, vk, vok := ValidContent(raw); vt != text || vk != kind || vok != ok {
				t.Fatalf("ValidContent %q %q %v, Content %q %q %v", vt, vk, vok, text, kind, ok)
			}
		}
		if text, ok := TextArray(raw); ok {
			if want, ok := decodedTextArray(raw); !ok || text != want {
				t.Fatalf("TextArray %q, decoded %q %v", text, want, ok)
			}
		}
		ArgumentsText(raw)
		StripInlineData(raw)
		_ = EachLine(context.Background(), strings.NewReader(string(raw)), func(int64, []byte) error { return nil })
	})
}

// FuzzSplit checks the structural splitter against the codec: on valid
// JSON, SplitObject (and Fields) and SplitArray see exactly the members
// and elements that a full decode sees, and String decodes strings identically.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,2,{"c":"}"}],"d":"x\"y"}`, `{"a\"b":"x\\","c":[1,{"d":"]"}],"e":null,"a\"b":2}`,
		` [ "\\\"", {} , [ ] ,-1e5,true ] `, `"caf\u00e9"`, `{"messages":[{"role":"user","content":"hi"}]}`, "{\"\x80\":[]}", ` [ {"a" : [1, {"b":[]}] } , null,{}, {"c":"]"} ] `, `[{"a":1},2]`,
		`{"ids": [100, 101, 102, 103, 104, 105, 106, 107, 108, 109],"lp":[-0.1,-0.30000000000000004,{"k":[1,2]},"]"],` + "\n        " + `"x": [1,[2,[3]],{"y":{}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var wantObj map[string]json.RawMessage
		if json.Unmarshal(data, &wantObj) == nil && wantObj != nil {
			got := SplitObject(data)
			if len(got) != len(wantObj) {
				t.Fatalf("split %d members, codec %d", len(got), len(wantObj))
			}
			for k, v := range wantObj {
				if !bytes.Equal(compactJSON(t, got[k]), compactJSON(t, v)) {
					t.Fatalf("member %q: split %s, codec %s", k, got[k], v)
				}
			}
			keys := append(slices.Collect(maps.Keys(wantObj)), "\x00absent")
			vals := make([][]byte, len(keys))
			if !Fields(data, keys, vals) {
				t.Fatalf("Fields: not an object")
			}
			for i, k := range keys[:len(keys)-1] {
				if !bytes.Equal(compactJSON(t, vals[i]), compactJSON(t, wantObj[k])) {
					t.Fatalf("field %q: %s, codec %s", k, vals[i], wantObj[k])
				}
			}
			if vals[len(keys)-1] != nil {
				t.Fatalf("absent field: %s", vals[len(keys)-1])
			}
		}
		var wantArr []json.RawMessage
		if json.Unmarshal(data, &wantArr) == nil && wantArr != nil {
			got, ok := SplitArray(data)
			if !ok || len(got) != len(wantArr) {
				t.Fatalf("split %d elements, codec %d", len(got), len(wantArr))
			}
			for i := range got {
				if !bytes.Equal(compactJSON(t, got[i]), compactJSON(t, wantArr[i])) {
					t.Fatalf("element %d: split %s, codec %s", i, got[i], wantArr[i])
				}
			}
		}
		var wantObjs []map[string]json.RawMessage
		wantOK := json.Unmarshal(data, &wantObjs) == nil
		gotObjs, ok := SplitObjects(data)
		if ok != wantOK || ok && len(gotObjs) != len(wantObjs) {
			t.Fatalf("SplitObjects: %d objects, %v; codec %d, %v", len(gotObjs), ok, len(wantObjs), wantOK)
		}
		for i, want := range wantObjs {
			if !ok {
				break
			}
			if got := gotObjs[i]; (got == nil) != (want == nil) || len(got) != len(want) {
				t.Fatalf("SplitObjects element %d: %q, codec %q", i, got, want)
			}
			for k, v := range want {
				if !bytes.Equal(compactJSON(t, gotObjs[i][k]), compactJSON(t, v)) {
					t.Fatalf("SplitObjects element %d member %q: %s, codec %s", i, k, gotObjs[i][k], v)
				}
			}
		}
		var s string
		if json.Unmarshal(data, &s) == nil && String(bytes.TrimSpace(data)) != s {
			t.Fatalf("String(%s) = %q, codec %q", data, String(data), s)
		}
	})
}

func compactJSON(t *testing.T, raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.Bytes()
}

// FuzzString checks String's own unescaping against the codec: a string
// the scanner accepts decodes as jsonx.Unmarshal and encoding/json decode
// it (when unescape takes it), String is the codec's answer whatever the
// input, and ValidString is String for valid JSON.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a\nb"`, `"\"q\" \\ \/ \b\f\r\t"`, `"\u00e9\u20ac\u0000x"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\\n\"", `"a\"`, `"\x"`, `"\u12"`, `"é\n"`, "\"\x01\\n\"", `"a"b\n"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		codecErr := jsonx.Unmarshal(raw, &want)
		if n := len(raw); n >= 2 && raw[0] == '"' {
			if end, ok := jsonx.ScanString(raw, 0); ok && end == n {
				if got, ok := unescape(raw[1 : n-1]); ok {
					var std string
					if codecErr != nil || got != want || json.Unmarshal(raw, &std) != nil || got != std {
						t.Fatalf("unescape %q, codec %q (%v), encoding/json %q", got, want, codecErr, std)
					}
				}
			}
		}
		if got := String(raw); codecErr == nil && bytes.Equal(bytes.TrimSpace(raw), raw) && len(raw) > 0 && raw[0] == '"' && got != want {
			t.Fatalf("String %q, codec %q", got, want)
		}
		if jsonx.IsValid(raw) && bytes.Equal(bytes.TrimSpace(raw), raw) {
			if got, str := ValidString(raw), String(raw); got != str {
				t.Fatalf("ValidString %q, String %q", got, str)
			}
		}
	})
}

// FuzzStripInlineData: the one-pass StripInlineData writes exactly what
// decoding, stripping and encoding wrote — sorted members, the last of a
// repeated name, encoding/json's escaping, numbers as written, inline data
// replaced by its reference.
func FuzzStripInlineData(f *testing.F) {
	long := strings.Repeat("QUJD", 80)
	for _, s := range []string{
		`{"data":"` + long + `","b":1,"a":[1.50,-0,2e3,true,null]}`,
		`{"z":{"file_data":"` + long + `"},"image":"data:image/png;base64,` + long + `"}`,
		`{"b64_json":["` + long + `","short"],"data":{"data":"` + long + `"}}`,
		` {"data" : "short", "data":"` + long + `", "x":"\u00e9\n\"\\/\u2028 <&>"} `,
		`{"k\u0061y":"data:` + long + `","data":"\ud800 lone","bad":"` + "\xff\xfe" + `"}`,
		`{"data":"` + long + `"} trailing`, `{"data":`, `[{"data":"` + long + `"},{"data":1}]`, `"base64"`,
		"{\"data\":\"\u2029" + long + "\"}", `{"a":{},"b":[],"c":[[]],"data":{}}`,
		`{"data":{"a":1,"b":{"y":2,"x":"\u0041"}},"e":"ok"}`, `{"a":1,"a":2,"data":{"b":true}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := raw
		if mayHoldInlineData(raw) {
			want = stripDecoded(raw)
		}
		got := StripInlineData(raw)
		if !bytes.Equal(got, want) {
			t.Fatalf("StripInlineData(%q)\n = %q\nwant %q", raw, got, want)
		}
	})
}

// usageByDecoding is ParseUsage as it was written before UsageOfValid: the
// object and its details decoded into maps (here by encoding/json).
func usageByDecoding(raw []byte) Usage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return Usage{}
	}
	details := func(keys ...string) map[string]json.RawMessage {
		var d map[string]json.RawMessage
		for _, k := range keys {
			if !IsNull(m[k]) {
				_ = json.Unmarshal(m[k], &d)
				break
			}
		}
		return d
	}
	prompt, completion := details("prompt_tokens_details", "input_tokens_details"), details("completion_tokens_details", "output_tokens_details")
	u := Usage{
		Prompt:     IntOf(m["prompt_tokens"], m["input_tokens"]),
		Completion: IntOf(m["completion_tokens"], m["output_tokens"]),
		Cached:     IntOf(prompt["cached_tokens"], m["cached_input_tokens"], m["prompt_cache_hit_tokens"]),
		Reasoning:  IntOf(completion["reasoning_tokens"], m["reasoning_output_tokens"]),
	}
	if c, ok := Float(m["cost"]); ok {
		u.Cost = &c
	}
	return u
}

// FuzzParseUsage checks ParseUsage (members found in one pass) against
// decoding the object and its details into maps.
func FuzzParseUsage(f *testing.F) {
	for _, s := range []string{
		`{"input_tokens":17102,"cached_input_tokens":3456,"output_tokens":281,"reasoning_output_tokens":141,"total_tokens":17383}`,
		`{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":2},"cost":0.25}`,
		`{"input_tokens":"7","output_tokens":2.0,"input_tokens_details":null,"prompt_tokens_details":{"cached_tokens":1},"output_tokens_details":{"reasoning_tokens":4}}`,
		`{"prompt_tokens":1,"prompt_tokens":2,"prompt_tokens_details":[1],"completion_tokens_details":5,"prompt_cache_hit_tokens":9}`,
		` { "prompt\u005ftokens" : 3 , "cost" : "1.5" } `, `null`, `[]`, `{}`, `{"prompt_tokens":1`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := ParseUsage(raw), usageByDecoding(raw); !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseUsage %+v, decoding %+v", got, want)
		}
	})
}
