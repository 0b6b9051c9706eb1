package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Update rewrites golden files from the current output instead of comparing
// (go test ./... -run Golden -update); review the diff before committing.
var Update = flag.Bool("update", false, "rewrite golden files under testdata/ from the current output")

// Golden compares got with the golden file at path (relative to the test's
// package), or rewrites the file with -update. A difference fails the test
// with a unified diff from the golden file to the current output.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	got = append(bytes.TrimSpace(got), '\n')
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the current output (-%s, +current); if the change is intended, rerun with -update and review the diff:\n%s",
			path, filepath.Base(path), UnifiedDiff(string(want), string(got)))
	}
}

// GoldenStoryline is the golden-file form of one Storyline: its rows and
// warnings, as adapters' golden tests record them.
type GoldenStoryline struct {
	Run       model.Run        `json:"run"`
	Steps     []model.Step     `json:"steps"`
	ToolCalls []model.ToolCall `json:"tool_calls"`
	Warnings  []model.Warning  `json:"warnings"`
}

// NewGoldenStoryline returns sl's golden-file form.
func NewGoldenStoryline(sl *model.Storyline) GoldenStoryline {
	return GoldenStoryline{sl.Run, sl.Steps, sl.ToolCalls, sl.Warnings}
}

// MustNormalize detects data (named name) with adapter a and normalizes it,
// failing the test when a does not claim it or cannot read it.
func MustNormalize(t testing.TB, a format.Adapter, name string, data []byte) (layout string, sls []*model.Storyline) {
	t.Helper()
	layout, ok := a.Detect(format.NewProbe(name, data, false))
	if !ok {
		t.Fatalf("%s: not detected as %s", name, a.Name())
	}
	err := a.Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, layout,
		func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return layout, sls
}

// Fixture reads testdata/name of the test's package.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// GoldenFixtures normalizes each testdata fixture with adapter a and
// compares its Storylines with testdata/golden/<name>.golden.json (the
// fixture's name without .json/.jsonl).
func GoldenFixtures(t *testing.T, a format.Adapter, names ...string) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) { GoldenInput(t, a, name, Fixture(t, name)) })
	}
}

// GoldenSamples is GoldenFixtures for public samples: each named file of
// ../shared/samples/<family> is compared with testdata/golden/<name>.golden.json.
func GoldenSamples(t *testing.T, a format.Adapter, family string, names ...string) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) { GoldenInput(t, a, name, Sample(t, family+"/"+name)) })
	}
}

// GoldenInput normalizes data (a fixture or a sample, named name) with
// adapter a and compares its Storylines with
// testdata/golden/<name>.golden.json, where a JSON, JSONL or Markdown
// extension is dropped from name (other extensions, .traj or .eval, stay).
func GoldenInput(t *testing.T, a format.Adapter, name string, data []byte) {
	t.Helper()
	_, sls := MustNormalize(t, a, name, data)
	out := make([]GoldenStoryline, len(sls))
	for i, sl := range sls {
		out[i] = NewGoldenStoryline(sl)
	}
	got, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	base := name
	switch filepath.Ext(name) {
	case ".json", ".jsonl", ".ndjson", ".md":
		base = strings.TrimSuffix(name, filepath.Ext(name))
	}
	Golden(t, filepath.Join("testdata", "golden", base+".golden.json"), got)
}

// OrMinus1 is an optional count for comparisons in figure tests: -1 when
// absent, so that absent and 0 stay apart.
func OrMinus1(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// diffContext is the number of unchanged lines shown around a change, and
// maxDiffLines bounds a printed diff (a rewritten golden file would
// otherwise print thousands of lines).
const (
	diffContext  = 3
	maxDiffLines = 300
	// maxDiffCells bounds the line-matching table (middle lines of want ×
	// got, after the common head and tail are cut); beyond it the middle
	// is shown as replaced whole.
	maxDiffCells = 4 << 20
)

// UnifiedDiff returns the unified diff (as diff -u prints it, without file
// headers) that turns want into got.
func UnifiedDiff(want, got string) string {
	a, b := splitLines(want), splitLines(got)
	ops := diffLines(a, b)
	var out []string
	for start := 0; start < len(ops); {
		// A hunk: from diffContext lines before a change to diffContext
		// lines after the last change that is at most 2*diffContext equal
		// lines from the previous one.
		first := start
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		lo := max(first-diffContext, start)
		hi := first
		for i, equal := first, 0; i < len(ops); i++ {
			if ops[i].kind == ' ' {
				if equal++; equal > 2*diffContext {
					break
				}
				continue
			}
			equal, hi = 0, i+1
		}
		hi = min(hi+diffContext, len(ops))
		aStart, bStart, aLen, bLen := ops[lo].a, ops[lo].b, 0, 0
		var body []string
		for _, op := range ops[lo:hi] {
			body = append(body, string(op.kind)+op.text)
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		out = append(out, fmt.Sprintf("@@ -%s +%s @@", hunkRange(aStart, aLen), hunkRange(bStart, bLen)))
		out = append(out, body...)
		start = hi
	}
	if len(out) > maxDiffLines {
		out = append(out[:maxDiffLines], fmt.Sprintf("... %d more diff lines", len(out)-maxDiffLines))
	}
	return strings.Join(out, "\n")
}

// hunkRange formats a hunk's start (0-based index of its first line) and
// length as diff -u does: 1-based, and the line before an empty range.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if !strings.HasSuffix(l, "\n") {
			lines[i] = l + "\n\\ No newline at end of file\n"
		}
		lines[i] = strings.TrimSuffix(lines[i], "\n")
	}
	return lines
}

// diffOp is one line of an edit script: ' ' kept, '-' only in want, '+'
// only in got; a and b are the indexes the line has (or would have) in
// want and got.
type diffOp struct {
	kind byte
	text string
	a, b int
}

// diffLines returns an edit script from a to b: the common head and tail
// are kept, and the lines between are matched by a longest common
// subsequence.
func diffLines(a, b []string) []diffOp {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var ops []diffOp
	for i := range head {
		ops = append(ops, diffOp{' ', a[i], i, i})
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	ops = append(ops, middleOps(ma, mb, head)...)
	for i := range tail {
		ia, ib := len(a)-tail+i, len(b)-tail+i
		ops = append(ops, diffOp{' ', a[ia], ia, ib})
	}
	return ops
}

// middleOps diffs the lines between the common head (of length off) and
// tail.
func middleOps(a, b []string, off int) []diffOp {
	n, m := len(a), len(b)
	var ops []diffOp
	if n*m > maxDiffCells {
		for i := range a {
			ops = append(ops, diffOp{'-', a[i], off + i, off})
		}
		for j := range b {
			ops = append(ops, diffOp{'+', b[j], off + n, off + j})
		}
		return ops
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], off + i, off + j})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i], off + i, off + j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], off + i, off + j})
			j++
		}
	}
	return ops
}
