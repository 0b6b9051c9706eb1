package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// FuzzScanRolloutLine checks the one-pass scanner against the general path:
// jsonx.IsValid is jsonx.Valid and encoding/json's Valid, and a line the
// scanner accepts is valid JSON whose envelope and payload members are what
// decodeEnvelope and SplitObject give, with format.ExtraNamed and the
// member list's get and extra (with a flag merged) what the map gives.
// ArgumentsText's validity is encoding/json's, and symbol is Symbol.
func FuzzScanRolloutLine(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		for _, line := range bytes.Split(s, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, s := range []string{`"response_item"`, `"user"`, `{"type":"x","payload":{"a":1,"a":[1,{"b":"\u00e9\n"}],"c":-0.5e+3}}`,
		`{"type":"x","payload":[],"payload":{"k":true}}`, `{"type":"x","payload":{"k":null},"payload":7}`,
		`{"type":"x","p\u0061yload":{}}`, `{"type":1}`, `{"type":"a","type":"b"}`, " {\"type\" : \"x\" , \"payload\" : { \"a\" : [ 1 , 2 ] } } ",
		"{\"type\":\"\xff\",\"payload\":{\"\xfe\":\"\x01\"}}", `{"type":"x","payload":{"a":"\ud800"}}`, `[{"type":"x"}]`,
		`{"type":"x","payload":{"a":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}}`,
		`{"type":"x","payload":{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if v, valid, std := jsonx.IsValid(line), jsonx.Valid(line), json.Valid(line); v != valid || v != std || jsonx.IsValid(string(line)) != v {
			t.Fatalf("jsonx.IsValid %v, jsonx.Valid %v, json.Valid %v", v, valid, std)
		}
		if got, want := symbol(line), format.Symbol(line); got != want {
			t.Fatalf("symbol %q, want %q", got, want)
		}
		if text, valid := format.ArgumentsText(line); text != nil && valid != json.Valid([]byte(*text)) {
			t.Fatalf("ArgumentsText %q says valid %v", *text, valid)
		}
		line = bytes.TrimSpace(line)
		env, members, isObject, ok := scanRolloutLine(line, nil)
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
		if isObject != (split != nil) {
			t.Fatalf("payload object %v, SplitObject %v", isObject, split != nil)
		}
		got := map[string]jsonx.RawMessage{}
		var names []string
		for _, m := range members {
			got[string(m.Name)] = m.Val
			names = append(names, string(m.Name))
		}
		o := object{members: members}
		flag := &format.Member{Name: []byte("b"), Val: []byte("true")}
		for _, known := range [][]string{nil, {"type", "output"}, {"a", "b"}} {
			want := format.Extra(got, known...)
			if e := format.ExtraNamed(got, names, known); !reflect.DeepEqual(e, want) {
				t.Fatalf("ExtraNamed %v, want %v", model.Deref(e), model.Deref(want))
			}
			if e := o.extra(nil, known...); !reflect.DeepEqual(e, want) {
				t.Fatalf("members extra %v, want %v", model.Deref(e), model.Deref(want))
			}
			want = format.MergeExtra(want, "b", flag.Val)
			if e := o.extra(flag, known...); !reflect.DeepEqual(e, want) {
				t.Fatalf("members extra with b %v, want %v", model.Deref(e), model.Deref(want))
			}
		}
		for k, v := range got {
			if !bytes.Equal(o.get(k), v) {
				t.Fatalf("get(%q) = %q, want %q", k, o.get(k), v)
			}
		}
		if isObject && len(got) != len(split) {
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

// FuzzChatRecord checks the chat record scan (scanChatRecord, the messages
// split in the same pass, tool calls into reused member lists) against the general path: a
// record decoded into a map by decodeObject gives the same Storyline and
// id, and a record it rejects fails with its error.
func FuzzChatRecord(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		for _, line := range bytes.Split(s, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, s := range []string{`{}`, `{"messages":[]}`, `{"messages":[1,{"role":"user","content":"x"},null]}`, `{"id":"a","id":"b","messages":{}}`,
		` { "messages" : [ { "role" : "assistant" , "tool_calls" : [ { "id" : "c" , "type" : "function" , "function" : { "name" : "f" , "arguments" : "{}" } } ] } ] } `,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f"}},1]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"type":"custom","custom":{"name":"f","input":"x"},"custom":7}]}],"m\u006fdel":"m"}`,
		`{"messages":[{"role":"\u0075ser","content":[{"type":"text","text":"a"}],"extra":{"cost":1,"response":{"model":"m"}}}]}`,
		`{"messages":[{"role":"assistant","content":"x"}],"x":1,}`, `[{"messages":[]}]`, "{\"messages\":[{\"role\":\"\xff\"}]}"} {
		f.Add([]byte(s))
	}
	src := format.Source{Path: "f", File: "f"}
	f.Fuzz(func(t *testing.T, line []byte) {
		c := &chatRecords{layout: layoutChatJSONL}
		l := loc{line: 3}
		sl, id, err := c.record(src, l, line)
		m, wantErr := decodeObject(line)
		if wantErr != nil {
			if want := elementError(src, l, wantErr); err == nil || err.Error() != want.Error() {
				t.Fatalf("error %v, want %v", err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("scan failed: %v", err)
		}
		want, wantID, _ := c.build(src, l, mapObject(m), new(scratch), false)
		if id != wantID || !reflect.DeepEqual(sl, want) {
			t.Fatalf("scanned %q %+v\nwant %q %+v", id, sl, wantID, want)
		}
	})
}
