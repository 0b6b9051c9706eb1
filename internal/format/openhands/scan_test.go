package openhands

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// FuzzScanRecord checks the one-pass scanner against the general path: it
// accepts a line exactly when jsonx.Valid does and the line is an object
// (and never one encoding/json rejects), with the members format.SplitObject
// gives, and the history's elements and their members as format.SplitArray
// and format.SplitObject give them.
func FuzzScanRecord(f *testing.F) {
	for _, data := range [][]byte{testutil.Fixture(f, "output.jsonl"), sample(f, "openhands-sdk_v1_goal_events.jsonl"),
		sample(f, "openhands_resolver_mock_output.jsonl"), sample(f, "openhands-benchmarks_openagentsafety_v1-sdk_output.jsonl")} {
		for _, line := range bytes.Split(data, []byte("\n")) {
			f.Add(line)
		}
	}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, s := range []string{`{"history":[{"id":1,"a":{"b":[1,"\u00e9"]}},null,2,"x",[],{}],"history":[{"x":1}]}`,
		`{"history":[{"x":1}],"history":null}`, `{"hist\u006fry":[{"a":1,"a":2}]}`, ` { "history" : [ { "a" : 1 } , 3 ] , "b" : { } } `,
		`{"history":[]}`, `{"history":{}}`, `{}`, `{} x`, `[{"a":1}]`, `null`, `{"history":[{"a":1},]}`, `{"history":[{"a" 1}]}`,
		"{\"history\":[{\"\xff\":\"\x01\"}]}", `{"a":"\ud800","history":[{"b":"\"}"}]}`,
		`{"history":[` + deep(9998) + `]}`, `{"history":[` + deep(9999) + `]}`,
		`{"history":[{"a":` + deep(9997) + `}]}`, `{"history":[{"a":` + deep(9998) + `}]}`,
		`{"history":[` + strings.Repeat(`{"a":1},7,`, presplitEvents/2) + `{"b":2},{"c":` + deep(9998) + `}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var hist history
		obj, ok := scanRecord(bytes.Clone(line), &hist)
		valid := jsonx.Valid(line)
		var want map[string]jsonx.RawMessage
		if valid {
			want = format.SplitObject(line)
		}
		if ok != (want != nil) {
			t.Fatalf("scanned %v; jsonx.Valid %v, an object %v", ok, valid, want != nil)
		}
		if !ok {
			return
		}
		if !json.Valid(line) {
			t.Fatal("scanned a line encoding/json rejects")
		}
		if !reflect.DeepEqual(obj, want) {
			t.Fatalf("members %q, want %q", obj, want)
		}
		wantHist := splitHistory(want)
		if hist.isArray != wantHist.isArray || !reflect.DeepEqual(hist.elems, wantHist.elems) {
			t.Fatalf("history %v %q, want %v %q", hist.isArray, hist.elems, wantHist.isArray, wantHist.elems)
		}
		if len(hist.events) != min(len(hist.elems), presplitEvents) {
			t.Fatalf("%d events split for %d elements", len(hist.events), len(hist.elems))
		}
		for i, ev := range hist.events {
			if wantEv := format.SplitObject(wantHist.elems[i]); !reflect.DeepEqual(ev, wantEv) {
				t.Fatalf("event %d members %q, want %q", i, ev, wantEv)
			}
		}
		if ev, ok := scanRecord(line, nil); !ok || !reflect.DeepEqual(ev, want) {
			t.Fatalf("without a history: %v %q", ok, ev)
		}
	})
}

// FuzzNonZeroExit checks nonZeroExit, and exitNonZero of a split object,
// against their definition on the object's members split into maps.
func FuzzNonZeroExit(f *testing.F) {
	for _, s := range []string{`{"exit_code":1}`, `{"exit_code":0,"metadata":{"exit_code":1}}`, `{"exit_code":null,"metadata":{"exit_code":-1}}`,
		`{"metadata":{"exit_code":"2"},"exit_code":3,"exit_code":null}`, `{"exit_c\u006fde":"1.5"}`, `{"metadata":5}`, `[1]`, `null`, `{"output":"x\ny","exit_code":127}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !jsonx.Valid(raw) {
			return
		}
		ex := format.SplitObject(raw)
		want := false
		if ex != nil {
			code := ex["exit_code"]
			if format.IsNull(code) {
				code = format.SplitObject(ex["metadata"])["exit_code"]
			}
			v, ok := format.Float(code)
			want = ok && v != 0
		}
		if got := nonZeroExit(raw); got != want {
			t.Fatalf("nonZeroExit %v, want %v", got, want)
		}
		if got := exitNonZero(ex["exit_code"], ex["metadata"]); got != want {
			t.Fatalf("exitNonZero %v, want %v", got, want)
		}
	})
}

// TestLongHistory checks that a history longer than presplitEvents, whose
// later events are split as they are mapped, gives the Storyline that
// splitting every event as it is mapped gives.
func TestLongHistory(t *testing.T) {
	line := bytes.TrimSpace(bytes.SplitN(sample(t, "openhands-benchmarks_openagentsafety_v1-sdk_output.jsonl"), []byte("\n"), 2)[0])
	top := format.SplitObject(line)
	elems, _ := format.SplitArray(top["history"])
	var many [][]byte
	for len(many) < presplitEvents+len(elems) {
		many = append(many, elems...)
	}
	long := []byte(`{"instance_id":"long","history":` + string(format.JoinArray(many)) + `}`)
	src := format.Source{Path: "output.jsonl", File: "output.jsonl"}
	var hist history
	obj, ok := scanRecord(long, &hist)
	if !ok || len(hist.events) != presplitEvents || len(hist.elems) != len(many) {
		t.Fatalf("scanned %v, %d events split of %d", ok, len(hist.events), len(hist.elems))
	}
	b := newBuilder(src, LayoutJSONL, loc{line: 1})
	b.record(obj, hist, "line-1")
	got := storylineJSON(t, b.finish())
	obj = format.SplitObject(long)
	b = newBuilder(src, LayoutJSONL, loc{line: 1})
	b.record(obj, splitHistory(obj), "line-1")
	if want := storylineJSON(t, b.finish()); got != want {
		t.Fatalf("Storylines differ:\nscanned: %.300s\nsplit:   %.300s", got, want)
	}
}
