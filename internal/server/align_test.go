package server

import (
	"fmt"
	"strings"
	"testing"
)

// render shows an alignment as one token per row: "x" both sides, "-x"
// only in a, "+x" only in b.
func render(ps []pair, a, b []string) string {
	var out []string
	for _, p := range ps {
		switch {
		case p.a >= 0 && p.b >= 0:
			out = append(out, a[p.a])
		case p.a >= 0:
			out = append(out, "-"+a[p.a])
		default:
			out = append(out, "+"+b[p.b])
		}
	}
	return strings.Join(out, " ")
}

func TestAlign(t *testing.T) {
	for _, tc := range []struct{ name, a, b, want string }{
		{"equal", "u a t a", "u a t a", "u a t a"},
		{"empty a", "", "u a", "+u +a"},
		{"empty b", "u a", "", "-u -a"},
		{"inserted step", "u a t a", "u a x t a", "u a +x t a"},
		{"deleted step", "u a x t a", "u a t a", "u a -x t a"},
		{"replaced middle", "u a b c", "u a d c", "u a -b +d c"},
		{"retry loop", "u run fail run fail run ok", "u run ok", "u run -fail -run -fail -run ok"},
		{"disjoint", "a b", "c d", "-a -b +c +d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := strings.Fields(tc.a), strings.Fields(tc.b)
			got := render(align(a, b), a, b)
			if got != tc.want {
				t.Errorf("align(%q, %q)\n got: %s\nwant: %s", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// TestAlignLongUsesAnchors aligns stretches too long for the exact table:
// unique steps anchor the alignment, repeated ones align between them.
func TestAlignLongUsesAnchors(t *testing.T) {
	n := 3000 // 3000 × 3001 cells > alignCells
	var a, b []string
	for i := range n {
		a = append(a, fmt.Sprintf("s%d", i), "repeat")
		if i%500 == 7 {
			b = append(b, "inserted")
		}
		if i%700 != 3 {
			b = append(b, fmt.Sprintf("s%d", i))
		}
		b = append(b, "repeat")
	}
	if len(a)*len(b) <= alignCells {
		t.Fatalf("test input too small to need anchors: %d cells", len(a)*len(b))
	}
	ps := align(a, b)
	checkAlignment(t, ps, len(a), len(b))
	var matched, onlyA, onlyB int
	for _, p := range ps {
		switch {
		case p.a >= 0 && p.b >= 0:
			if a[p.a] != b[p.b] {
				t.Fatalf("paired %q with %q", a[p.a], b[p.b])
			}
			matched++
		case p.a >= 0:
			onlyA++
		default:
			onlyB++
		}
	}
	// 5 steps s3, s703, ... are missing from b; 6 "inserted" steps are new.
	if onlyA != 5 || onlyB != 6 || matched != len(a)-5 {
		t.Errorf("matched %d, a only %d, b only %d; want %d, 5, 6", matched, onlyA, onlyB, len(a)-5)
	}
}

// checkAlignment asserts every index of both sides appears once, in order.
func checkAlignment(t *testing.T, ps []pair, na, nb int) {
	t.Helper()
	ia, ib := 0, 0
	for _, p := range ps {
		if p.a >= 0 {
			if p.a != ia {
				t.Fatalf("a index %d out of order (want %d)", p.a, ia)
			}
			ia++
		}
		if p.b >= 0 {
			if p.b != ib {
				t.Fatalf("b index %d out of order (want %d)", p.b, ib)
			}
			ib++
		}
	}
	if ia != na || ib != nb {
		t.Fatalf("alignment covers %d of %d a rows and %d of %d b rows", ia, na, ib, nb)
	}
}

func TestRefinePairsSameToolOtherArguments(t *testing.T) {
	keys := func(specs ...string) []stepKeys {
		out := make([]stepKeys, len(specs))
		for i, s := range specs {
			weak, _, _ := strings.Cut(s, "(")
			out[i] = stepKeys{strong: s, weak: weak}
		}
		return out
	}
	a := keys("user", "bash(ls)", "bash(cat x)", "agent")
	b := keys("user", "bash(ls -la)", "edit(x)", "agent")
	strong := func(ks []stepKeys) []string {
		s := make([]string, len(ks))
		for i, k := range ks {
			s[i] = k.strong
		}
		return s
	}
	ps := refine(align(strong(a), strong(b)), a, b)
	checkAlignment(t, ps, len(a), len(b))
	want := []pair{{0, 0}, {1, 1}, {2, -1}, {-1, 2}, {3, 3}}
	if fmt.Sprint(ps) != fmt.Sprint(want) {
		t.Errorf("refine = %v, want %v", ps, want)
	}
}

// FuzzAlign checks the alignment of any two sequences: every row of each
// side once and in order, and only equal keys paired.
func FuzzAlign(f *testing.F) {
	f.Add("u a t a", "u a x t a")
	f.Add("a b a b a", "b a b")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, x, y string) {
		a, b := strings.Fields(x), strings.Fields(y)
		ps := align(a, b)
		checkAlignment(t, ps, len(a), len(b))
		for _, p := range ps {
			if p.a >= 0 && p.b >= 0 && a[p.a] != b[p.b] {
				t.Fatalf("paired %q with %q", a[p.a], b[p.b])
			}
		}
	})
}
