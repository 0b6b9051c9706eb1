package jsonx

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var seeds = []string{
	`{"a": 1, "b" : [1, 2, {"c": "} \" "}],` + "\n\t" + `"d":"x\"y"}`,
	`{"a\"b":"x\\","c":[1,{"d":"]"}],"e":null}`,
	` [ "\\\"", {} , [ ] ,-1e5,true ] `,
	`"caf\u00e9 "`, `{"k":"line\nbreak"}`, `{"x": "a\\"}  `, `{"a":`, `[1,,2]`, "\"\xff\"", `"a b"`, ` "a b"`, `"a b" `, `-1.5e3`, "true\n", `null`,
}

func TestCompactMatchesEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		checkCompact(t, []byte(s))
	}
}

func TestAppendQuotedMatchesMarshal(t *testing.T) {
	for _, s := range []string{"plain_key", "with \"quote\"", `back\slash`, "tab\there", "café", "<&>", "\u2028", "\xff", ""} {
		checkQuoted(t, s)
	}
}

func TestSpacesEnd(t *testing.T) {
	for _, c := range []struct {
		s     string
		i, at int
	}{{"", 0, 0}, {"x", 0, 0}, {"  x", 0, 2}, {"\n" + strings.Repeat(" ", 19) + "}", 1, 20}, {strings.Repeat(" ", 16), 3, 16}, {" \t ", 0, 1}} {
		if got := SpacesEnd([]byte(c.s), c.i); got != c.at {
			t.Errorf("SpacesEnd(%q, %d) = %d, want %d", c.s, c.i, got, c.at)
		}
	}
}

func FuzzCompact(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCompact(t, data)
		checkQuoted(t, string(data))
	})
}

// checkCompact: Compact agrees with encoding/json on validity and, for
// valid input, on the bytes.
func checkCompact(t *testing.T, data []byte) {
	t.Helper()
	var want bytes.Buffer
	wantErr := json.Compact(&want, data)
	got, ok := Compact(data)
	if ok != (wantErr == nil) {
		t.Fatalf("Compact(%q) ok=%v, encoding/json err=%v", data, ok, wantErr)
	}
	if ok && !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("Compact(%q) = %q, encoding/json %q", data, got, want.Bytes())
	}
	if appended := AppendCompactValid([]byte("x"), data); ok && !bytes.Equal(appended, append([]byte("x"), want.Bytes()...)) {
		t.Fatalf("AppendCompactValid(%q) = %q, encoding/json %q", data, appended[1:], want.Bytes())
	}
}

func checkQuoted(t *testing.T, s string) {
	t.Helper()
	want, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendQuoted([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("AppendQuoted(%q) = %q, Marshal %q", s, got[1:], want)
	}
}

// FuzzIsValid: the one-pass scanner accepts exactly what Valid and
// encoding/json accept, from bytes and from a string alike.
func FuzzIsValid(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"a":[1,-0.5e+3,true,null,"\u00e9\n"]}`, `[1,]`, `01`, `"\x01"`, `{"a" 1}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := IsValid(b), json.Valid(b)
		if got != want || Valid(b) != want || IsValid(string(b)) != want {
			t.Fatalf("IsValid %v, Valid %v, encoding/json %v", got, Valid(b), want)
		}
	})
}

// FuzzStringEnd: StringEnd, which tests a string's first bytes eight at a
// time, ends every string where the general path (stringEnd, which
// counts the backslashes before each quote) ends it.
func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"abcdefgh"`, `"abcdefg\"h"`, `"\\"`, `"abcdefgh\\\\\"ij"`, `"é€😀 text and \"quotes\" past the first words"`,
		`"0123456789abcdefghijklmnopqrstuvwxyz"`, `"unterminated \`, `"` + "\x80\xff\"" + `"`, `"short`} {
		f.Add([]byte(s), 0)
		f.Add([]byte(`{"k":`+s+`}`), 5)
	}
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i >= len(b) || b[i] != '"' {
			return
		}
		if got, want := StringEnd(b, i), stringEnd(b, i); got != want {
			t.Fatalf("StringEnd(%q, %d) = %d, the general path %d", b, i, got, want)
		}
	})
}

func TestDecodeStrict(t *testing.T) {
	type doc struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	for _, c := range []struct {
		in, err string
		want    doc
	}{
		{in: `{"a":1,"b":"x"}`, want: doc{A: 1, B: "x"}},
		{in: "{\"a\":1}\n", want: doc{A: 1}},
		{in: `{"a":1,"a":2}`, want: doc{A: 2}},
		{in: `{"a":1,"c":2}`, err: `json: unknown field "c"`},
		{in: `{"a":1} {"a":2}`, err: "trailing data after the JSON value"},
		{in: `{"a":1} x`, err: "trailing data after the JSON value"},
		{in: `{"a":1`, err: "unexpected EOF"},
		{in: ``, err: "EOF"},
		{in: `{"a":"1"}`, err: "json: cannot unmarshal string into Go struct field doc.a of type int"},
		{in: `[1]`, err: "json: cannot unmarshal array into Go value of type jsonx.doc"},
	} {
		var got doc
		err := DecodeStrict([]byte(c.in), &got)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}
