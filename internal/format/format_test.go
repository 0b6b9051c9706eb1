package format

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestProbeShapes(t *testing.T) {
	tests := []struct {
		name, file, data string
		truncated        bool
		shape            Shape
		firstKeys        string
		second           bool
	}{
		{"object", "a.json", `{"schema_version":"ATIF-v1.6","agent":{},"steps":[]}`, false, ShapeObject, "schema_version,agent,steps", false},
		{"lines", "a.json", "{\"a\":1}\n{\"b\":2}\n", false, ShapeLines, "a", true},
		{"single line jsonl", "a.jsonl", "{\"a\":1}\n", false, ShapeLines, "a", false},
		{"array", "a.json", `[{"messages":[]},{"messages":[]}]`, false, ShapeArray, "messages", true},
		{"bom and space", "a.json", "\xef\xbb\xbf  {\"k\":\"v\"}", false, ShapeObject, "k", false},
		{"cut inside value", "a.json", `{"schema_version":"ATIF-v1.5","steps":[{"step_id":1,"mess`, true, ShapeObject, "schema_version,steps", false},
		{"cut jsonl hint", "a.jsonl", `{"type":"session_meta","payload":{"id":`, true, ShapeLines, "type,payload", false},
		{"not json", "a.json", `hello`, false, ShapeUnknown, "", false},
		{"empty", "a.json", "  \n", false, ShapeUnknown, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewProbe(tt.file, []byte(tt.data), tt.truncated)
			if p.Shape != tt.shape {
				t.Fatalf("shape = %v, want %v (note %q)", p.Shape, tt.shape, p.Note)
			}
			var keys string
			if p.First != nil {
				keys = strings.Join(p.First.Keys, ",")
			}
			if keys != tt.firstKeys {
				t.Fatalf("first keys = %q, want %q", keys, tt.firstKeys)
			}
			if (p.Second != nil) != tt.second {
				t.Fatalf("second = %v, want %v", p.Second != nil, tt.second)
			}
			if tt.shape == ShapeUnknown && p.Note == "" {
				t.Fatal("unknown shape must explain itself")
			}
		})
	}
}

func TestProbeLooksInsideCutValues(t *testing.T) {
	p := NewProbe("a.json", []byte(`{"agent":{"name":"x"},"steps":[{"step_id":1,"source":"user","message":"hel`), true)
	if got := p.First.Sub("agent").Str("name"); got != "x" {
		t.Fatalf("agent.name = %q", got)
	}
	if e := p.First.FirstElem("steps"); e == nil || !e.Has("source") {
		t.Fatalf("first step not visible: %+v", e)
	}
}

func TestTime(t *testing.T) {
	want := time.Date(2026, 3, 2, 10, 0, 1, 0, time.UTC)
	for _, in := range []string{`"2026-03-02T10:00:01Z"`, `"2026-03-02T11:00:01+01:00"`, `"2026-03-02T10:00:01"`,
		`"2026-03-02 10:00:01"`, `1772445601`, `1772445601000`, `1772445601000000`, `"1772445601"`} {
		got, ok := Time(json.RawMessage(in))
		if !ok || !got.Equal(want) {
			t.Errorf("Time(%s) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{`null`, `""`, `"yesterday"`, `true`, `-5`} {
		if _, ok := Time(json.RawMessage(in)); ok {
			t.Errorf("Time(%s) accepted", in)
		}
	}
}

func TestContent(t *testing.T) {
	long := strings.Repeat("QUFB", 200)
	tests := []struct{ in, text, kind string }{
		{`"hi"`, "hi", KindText},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "a\nb", KindText},
		{`[{"type":"input_text","text":"a"}]`, "a", KindText},
		{`[{"type":"image","source":{"media_type":"image/png","path":"images/x.png"}}]`,
			`[{"type":"image","source":{"media_type":"image/png","path":"images/x.png"}}]`, KindMultimodal},
		{`{"stdout":"x"}`, `{"stdout":"x"}`, KindText},
	}
	for _, tt := range tests {
		text, kind, ok := Content(json.RawMessage(tt.in))
		if !ok || text != tt.text || kind != tt.kind {
			t.Errorf("Content(%s) = %q, %q, %v", tt.in, text, kind, ok)
		}
	}
	text, kind, _ := Content(json.RawMessage(`[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + long + `"}}]`))
	if kind != KindMultimodal || strings.Contains(text, long) || !strings.Contains(text, "sha256:") {
		t.Errorf("base64 not stripped: %s", text)
	}
	if _, _, ok := Content(json.RawMessage(`null`)); ok {
		t.Error("null content reported present")
	}
}

func TestExtraKeepsUnknownKeysSorted(t *testing.T) {
	obj := map[string]json.RawMessage{"known": json.RawMessage(`1`), "z": json.RawMessage(`{"a": 1}`), "b": json.RawMessage(`"x"`)}
	if got := *Extra(obj, "known"); got != `{"b":"x","z":{"a":1}}` {
		t.Fatalf("Extra = %s", got)
	}
	if Extra(obj, "known", "z", "b") != nil {
		t.Fatal("Extra of nothing must be nil")
	}
}

func TestEachLineLongLinesAndNumbers(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	in := "{\"a\":1}\n\n  \n{\"b\":\"" + long + "\"}\r\n{\"c\":3}"
	var got []int64
	var lens []int
	err := EachLine(context.Background(), strings.NewReader(in), func(n int64, line []byte) error {
		got = append(got, n)
		lens = append(lens, len(line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 5 || lens[1] != len(long)+8 {
		t.Fatalf("lines = %v, lens = %v", got, lens)
	}
}

func TestArgumentsText(t *testing.T) {
	for _, tt := range []struct {
		in, text string
		valid    bool
	}{
		{`{"a": 1}`, `{"a":1}`, true},
		{`"{\"a\": 1}"`, `{"a": 1}`, true},
		{`"{\"a\": 1"`, `{"a": 1`, false},
		{`"\"{\\\"a\\\": 1}\""`, `"{\"a\": 1}"`, true},
	} {
		text, valid := ArgumentsText(json.RawMessage(tt.in))
		if text == nil || *text != tt.text || valid != tt.valid {
			t.Errorf("ArgumentsText(%s) = %v, %v", tt.in, text, valid)
		}
	}
}

func TestDocumentErrorLocatesTheProblem(t *testing.T) {
	src := Source{Path: "t.json"}
	for _, tt := range []struct {
		doc, want string
	}{
		{"{\"a\": 1,\n\"b\": [1, 2,,]}", "t.json:2: x: invalid JSON at column 12"},
		{"{\"a\": 1,\n\"b\": [1, 2", "t.json:2: x: invalid JSON: the document ends early"},
	} {
		err := DocumentError(src, []byte(tt.doc), "x", errors.New("cause"))
		if !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), "cause") {
			t.Errorf("%q: %v", tt.doc, err)
		}
	}
}
