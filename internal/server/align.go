package server

// Step alignment for Compare: a diff of two sequences of step keys, as a
// text diff aligns lines. The longest common subsequence is exact where it
// is affordable (a table of at most alignCells cells); longer stretches are
// first cut at anchors — keys that occur exactly once on each side, kept in
// an increasing order (patience diff) — and the pieces aligned in turn.

// alignCells bounds the LCS table of one stretch (4M cells, 16 MB).
const alignCells = 4 << 20

// pair is one row of an alignment: indexes into a and b, -1 for a gap.
type pair struct{ a, b int }

// align returns the alignment of a and b: every index of each appears once,
// in order; equal keys are paired where they form a common subsequence.
func align(a, b []string) []pair {
	out := make([]pair, 0, max(len(a), len(b)))
	return alignInto(out, a, b, 0, 0)
}

func alignInto(out []pair, a, b []string, ao, bo int) []pair {
	// Common prefix and suffix cost nothing to align.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		out = append(out, pair{ao + pre, bo + pre})
		pre++
	}
	a, b, ao, bo = a[pre:], b[pre:], ao+pre, bo+pre
	suf := 0
	for suf < len(a) && suf < len(b) && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[:len(a)-suf], b[:len(b)-suf]
	switch {
	case len(ma) == 0 || len(mb) == 0:
		out = gaps(out, ao, len(ma), bo, len(mb))
	case len(ma)*len(mb) <= alignCells:
		out = lcs(out, ma, mb, ao, bo)
	default:
		out = patience(out, ma, mb, ao, bo)
	}
	for i := 0; i < suf; i++ {
		out = append(out, pair{ao + len(ma) + i, bo + len(mb) + i})
	}
	return out
}

// gaps emits the unmatched rows of both sides: a's first, then b's.
func gaps(out []pair, ao, na, bo, nb int) []pair {
	for i := 0; i < na; i++ {
		out = append(out, pair{ao + i, -1})
	}
	for j := 0; j < nb; j++ {
		out = append(out, pair{-1, bo + j})
	}
	return out
}

// lcs aligns a and b exactly with the classic dynamic program, walking
// back from the end of the suffix table.
func lcs(out []pair, a, b []string, ao, bo int) []pair {
	n, m := len(a), len(b)
	w := m + 1
	t := make([]int32, (n+1)*w) // t[i*w+j] = LCS length of a[i:], b[j:]
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, pair{ao + i, bo + j})
			i, j = i+1, j+1
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			out = append(out, pair{ao + i, -1})
			i++
		default:
			out = append(out, pair{-1, bo + j})
			j++
		}
	}
	return gaps(out, ao+i, n-i, bo+j, m-j)
}

// patience cuts a long stretch at its unique common keys and aligns the
// pieces between them; without any, the stretch stays unmatched.
func patience(out []pair, a, b []string, ao, bo int) []pair {
	anchors := uniqueAnchors(a, b)
	if len(anchors) == 0 {
		return gaps(out, ao, len(a), bo, len(b))
	}
	pa, pb := 0, 0
	for _, an := range anchors {
		out = alignInto(out, a[pa:an.a], b[pb:an.b], ao+pa, bo+pb)
		out = append(out, pair{ao + an.a, bo + an.b})
		pa, pb = an.a+1, an.b+1
	}
	return alignInto(out, a[pa:], b[pb:], ao+pa, bo+pb)
}

// uniqueAnchors returns the keys that occur once in a and once in b, as
// the longest chain increasing on both sides.
func uniqueAnchors(a, b []string) []pair {
	type seen struct{ na, nb, ia, ib int }
	count := map[string]*seen{}
	for i, k := range a {
		s := count[k]
		if s == nil {
			s = &seen{}
			count[k] = s
		}
		s.na++
		s.ia = i
	}
	for j, k := range b {
		if s := count[k]; s != nil {
			s.nb++
			s.ib = j
		}
	}
	var cand []pair // in a's order
	for i, k := range a {
		if s := count[k]; s.na == 1 && s.nb == 1 && s.ia == i {
			cand = append(cand, pair{i, s.ib})
		}
	}
	return longestIncreasing(cand)
}

// longestIncreasing returns the longest subsequence of ps whose b indexes
// increase (ps is ordered by a), by patience sorting.
func longestIncreasing(ps []pair) []pair {
	var tops []int // tops[k]: index into ps of the smallest tail of a chain of length k+1
	prev := make([]int, len(ps))
	for i, p := range ps {
		lo, hi := 0, len(tops)
		for lo < hi {
			mid := (lo + hi) / 2
			if ps[tops[mid]].b < p.b {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		prev[i] = -1
		if lo > 0 {
			prev[i] = tops[lo-1]
		}
		if lo == len(tops) {
			tops = append(tops, i)
		} else {
			tops[lo] = i
		}
	}
	if len(tops) == 0 {
		return nil
	}
	out := make([]pair, len(tops))
	for k, i := len(tops)-1, tops[len(tops)-1]; k >= 0; k, i = k-1, prev[i] {
		out[k] = ps[i]
	}
	return out
}
