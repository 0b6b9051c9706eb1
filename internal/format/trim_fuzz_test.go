package format

import (
	"bytes"
	"testing"
)

// FuzzTrimSpace checks TrimSpace against bytes.TrimSpace: the same slice
// (start, length, capacity, nil or not).
func FuzzTrimSpace(f *testing.F) {
	for _, s := range []string{"", " ", `"a"`, ` "a" `, "{}", "[1]\n", "null", "\t1", "\xc2\x85x", "x\xc2\xa0", "\x7f", "!", "~", "\x00", "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, want := TrimSpace(raw), bytes.TrimSpace(raw)
		if (got == nil) != (want == nil) || len(got) != len(want) || cap(got) != cap(want) ||
			len(got) > 0 && &got[0] != &want[0] {
			t.Fatalf("TrimSpace(%q) = %q (cap %d), want %q (cap %d)", raw, got, cap(got), want, cap(want))
		}
	})
}
