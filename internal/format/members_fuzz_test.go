package format

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// FuzzMembers checks the member lists against the maps they replace: what
// ScanMembersWithin accepts is a valid object (and every valid object is
// accepted), its members and its inner object's are what SplitObject gives,
// AppendMembers lists the same, and Get, Has, Delete, Set, Extra and
// AppendExtra answer as the map and format.Extra / MergeExtra do.
// ScanMembersWithinList accepts the same objects with the same members,
// and the list it splits in that pass is SplitList's of the member
// (checkList); so does
// ScanMembersWithinListed, splitting the inner object's member of the same
// name as SplitList does.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, ` { "a" : 1 , "m" : { "b" : [ 1 , { "c" : null } ] } } `, `{"m":1,"m":{"x":true}}`, `{"m":{"x":1},"m":"s"}`,
		`{"a":1,"a":2,"b\u0061":3,"m":{"t":"\u00e9","t":-1.5e3}}`, "{\"\xff\":1,\"m\":{\"\xfe\":\"\x01\"}}", `{"m":{"a":"\ud800"}}`, `[{"m":{}}]`,
		`{"a":1,}`, `{"m":{"a":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}}`,
		`{"m":{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}}`, `{"type":"user","message":{"role":"user","content":"x"},"uuid":"u"}`,
		`{"m":[]}`, ` { "m" : [ 1 , { "a" : [ { } ] } , null , { } ] , "b" : 2 } `, `{"m":[{"a":1}],"m":{}}`, `{"m":{},"m":[{"a":1,"a":2}]}`,
		`{"m":[{"a":1},]}`, `{"m":[{"a":1}}`, `{"eightxxx":1,"sixteen_bytes_xx":{"seventeen_bytes_x":2,"\u0041bcdefghij":3}}`,
		"{\"name_with_\xc3\xa9_after_eight\":1,\"m\":{\"fifteen_bytes_\x01\":2}}", `{"unclosed_name_longer_than_eight`, "{\"m\":[{\"\xff\":\"\x01\"}]}",
		`{"m":[` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `]}`, `{"m":[` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `]}`,
		`{"m":[{"a":` + strings.Repeat("[", 9996) + strings.Repeat("]", 9996) + `}]}`, `{"m":[{"a":` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `}]}`,
		`{"m":{"m":[{"a":1},2,{}],"m":[{"b":[]}]},"x":0}`, `{"m":{"m":[1]},"m":{"m":2}}`, `{"m":{"m":[1]},"m":3}`, `{"m":{"m":[{"a":}]}}`} {
		f.Add([]byte(s), "m")
	}
	f.Fuzz(func(t *testing.T, raw []byte, inner string) {
		i := jsonx.SkipWS(raw, 0)
		var members, innerMembers Members
		var innerObject, ok bool
		if i < len(raw) && raw[i] == '{' {
			var end int
			end, members, innerMembers, innerObject, ok = ScanMembersWithin(raw, i, 0, nil, inner, nil)
			ok = ok && jsonx.SkipWS(raw, end) == len(raw)
		}
		want := map[string]jsonx.RawMessage(nil)
		if jsonx.Valid(raw) {
			want = SplitObject(raw)
		}
		if ok != (want != nil) {
			t.Fatalf("scanned %v, valid object %v", ok, want != nil)
		}
		checkList(t, raw, inner, members, want)
		checkListed(t, raw, inner, ok, members, innerMembers, innerObject)
		if !ok {
			return
		}
		split, _ := AppendMembers(nil, raw)
		if !reflect.DeepEqual(split, members) {
			t.Fatalf("AppendMembers %q, scanned %q", split, members)
		}
		wantInner := SplitObject(want[inner])
		if _, has := want[inner]; inner == "" || !has {
			wantInner = nil
		}
		checkMembers(t, members, want)
		if innerObject != (wantInner != nil) {
			t.Fatalf("inner object %v, SplitObject %v", innerObject, wantInner != nil)
		}
		if innerObject {
			checkMembers(t, innerMembers, wantInner)
		}
	})
}

// checkListed checks ScanMembersWithinListed of raw, its inner object and
// that object's list both named name, against what ScanMembersWithin gave
// (ok, members, innerMembers, innerObject) and SplitList of the list.
func checkListed(t *testing.T, raw []byte, name string, ok bool, members, innerMembers Members, innerObject bool) {
	t.Helper()
	var list List
	var gotMembers, gotInner Members
	var gotInnerObject, listed, gotOK bool
	if i := jsonx.SkipWS(raw, 0); i < len(raw) && raw[i] == '{' {
		var end int
		end, gotMembers, gotInner, gotInnerObject, listed, gotOK = ScanMembersWithinListed(raw, i, 0, nil, name, nil, name, &list)
		gotOK = gotOK && jsonx.SkipWS(raw, end) == len(raw)
	}
	if gotOK != ok || ok && (!reflect.DeepEqual(gotMembers, members) || gotInnerObject != innerObject || innerObject && !reflect.DeepEqual(gotInner, innerMembers)) {
		t.Fatalf("ScanMembersWithinListed %v %q %q %v, ScanMembersWithin %v %q %q %v", gotOK, gotMembers, gotInner, gotInnerObject, ok, members, innerMembers, innerObject)
	}
	if !ok {
		return
	}
	var split List
	isArray := innerObject && name != "" && SplitList(&split, innerMembers.Get(name))
	if listed != isArray || listed && !reflect.DeepEqual(list.Elems, split.Elems) {
		t.Fatalf("listed %v %q, SplitList %v %q", listed, list.Elems, isArray, split.Elems)
	}
	for k := range split.Elems {
		want, wantObject := split.Object(k)
		if got, isObject := list.Object(k); listed && (isObject != wantObject || len(got)+len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("element %d: %q %v, SplitList %q %v", k, got, isObject, want, wantObject)
		}
	}
}

// checkList checks ScanMembersWithinList of raw against want (its map when
// it is a valid object, else nil) and members (what ScanMembersWithin
// lists): it accepts the same objects with the same members, and the list
// split of member name is what SplitList gives of it when it is an array,
// its elements SplitArray's and each object element's members
// SplitObject's.
func checkList(t *testing.T, raw []byte, name string, members Members, want map[string]jsonx.RawMessage) {
	t.Helper()
	var list List
	var listMembers Members
	var listed, ok bool
	if i := jsonx.SkipWS(raw, 0); i < len(raw) && raw[i] == '{' {
		var end int
		end, listMembers, listed, ok = ScanMembersWithinList(raw, i, 0, nil, name, &list)
		ok = ok && jsonx.SkipWS(raw, end) == len(raw)
	}
	if ok != (want != nil) {
		t.Fatalf("ScanMembersWithinList %v, valid object %v", ok, want != nil)
	}
	if !ok {
		return
	}
	if !reflect.DeepEqual(listMembers, members) {
		t.Fatalf("ScanMembersWithinList members %q, want %q", listMembers, members)
	}
	elems, isArray := SplitArray(want[name])
	if _, has := want[name]; !has {
		isArray = false
	}
	if listed != isArray {
		t.Fatalf("listed %v, SplitArray %v", listed, isArray)
	}
	if !listed {
		return
	}
	var split List
	if !SplitList(&split, want[name]) || len(split.Elems) != len(elems) || len(list.Elems) != len(elems) {
		t.Fatalf("SplitList %d elements, scanned %d, SplitArray %d", len(split.Elems), len(list.Elems), len(elems))
	}
	for k, e := range elems {
		got, isObject := list.Object(k)
		other, otherObject := split.Object(k)
		wantObject := SplitObject(e)
		if !bytes.Equal(list.Elems[k], e) || !bytes.Equal(split.Elems[k], e) || isObject != (wantObject != nil) || otherObject != isObject {
			t.Fatalf("element %d: scanned %q (object %v), split %q (object %v), want %q", k, list.Elems[k], isObject, split.Elems[k], otherObject, e)
		}
		if !reflect.DeepEqual(got, other) {
			t.Fatalf("element %d: scanned members %q, split %q", k, got, other)
		}
		if isObject {
			checkMembers(t, got, wantObject)
		}
	}
}

// checkMembers checks ms against m, its map, then again after Delete and
// Set of a name.
func checkMembers(t *testing.T, ms Members, m map[string]jsonx.RawMessage) {
	t.Helper()
	for round := range 2 {
		if got := ms.Map(); !reflect.DeepEqual(got, m) && (len(got) > 0 || len(m) > 0) {
			t.Fatalf("round %d: members %q, map %q", round, got, m)
		}
		for k, v := range m {
			if !bytes.Equal(ms.Get(k), v) || !ms.Has(k) {
				t.Fatalf("round %d: Get(%q) = %q, want %q", round, k, ms.Get(k), v)
			}
		}
		if ms.Has("\x00absent") || ms.Get("\x00absent") != nil {
			t.Fatal("an absent name is found")
		}
		add := &Member{Name: []byte("b"), Val: []byte("true")}
		for _, known := range [][]string{nil, {"type", "message"}, {"a", "b"}} {
			want := Extra(m, known...)
			if e := ms.Extra(nil, known...); !reflect.DeepEqual(e, want) {
				t.Fatalf("round %d: Extra %v, want %v", round, model.Deref(e), model.Deref(want))
			}
			want = MergeExtra(want, "b", add.Val)
			if e := ms.Extra(add, known...); !reflect.DeepEqual(e, want) {
				t.Fatalf("round %d: Extra with b %v, want %v", round, model.Deref(e), model.Deref(want))
			}
			// Appended after other text, in a block that is too small or
			// large enough: the text is Extra's, what was there stays.
			for _, room := range []int{0, 1 << 12} {
				block := append(make([]byte, 0, 3+room), "pre"...)
				text, ok := ms.AppendExtra(block, add, known...)
				if ok != (want != nil) || string(text[:3]) != "pre" || ok && string(text[3:]) != *want {
					t.Fatalf("round %d: AppendExtra %q %v, want pre+%v", round, text, ok, model.Deref(want))
				}
			}
		}
		// Delete the first name, set another; the map the same way.
		ms = append(Members(nil), ms...)
		if len(ms) > 0 {
			name := string(ms[0].Name)
			ms.Delete(name)
			delete(m, name)
		}
		ms.Set("set", []byte(`[1]`))
		m["set"] = []byte(`[1]`)
	}
}

// FuzzMemberName checks MemberName (a name tested eight bytes at a time)
// against decoding the name.
func FuzzMemberName(f *testing.F) {
	for _, s := range []string{``, `a`, `type`, `payload`, `call_id`, `timestamp`, `arguments`, `a\\b`, `\u0061`, "\xe9t\xc3\xa9", "abcdefg\xff",
		`abcdefgh\"`, "\x7f\x80", `encrypted_content`, `0123456789abcde\\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		key := append(append([]byte{'"'}, body...), '"')
		if !jsonx.IsValid(key) {
			return
		}
		if got, want := MemberName(key), String(key); string(got) != want {
			t.Fatalf("MemberName %q, decoded %q", got, want)
		}
		plain := bytes.IndexByte(body, '\\') < 0 && bytes.IndexFunc(body, func(r rune) bool { return r >= utf8.RuneSelf }) < 0
		if plainName(body) != plain {
			t.Fatalf("plainName %v, byte at a time %v", !plain, plain)
		}
	})
}
