package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name, want, got, diff string
	}{
		{"one changed line with context",
			numbered(1, 10), strings.Replace(numbered(1, 10), "line 5\n", "line five\n", 1),
			"@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8"},
		{"two distant changes are two hunks",
			numbered(1, 20), strings.Replace(strings.Replace(numbered(1, 20), "line 2\n", "two\n", 1), "line 19\n", "nineteen\n", 1),
			"@@ -1,5 +1,5 @@\n line 1\n-line 2\n+two\n line 3\n line 4\n line 5\n@@ -16,5 +16,5 @@\n line 16\n line 17\n line 18\n-line 19\n+nineteen\n line 20"},
		{"insertion at the start", "b\nc\n", "a\nb\nc\n", "@@ -1,2 +1,3 @@\n+a\n b\n c"},
		{"deletion at the end", "a\nb\nc\n", "a\nb\n", "@@ -1,3 +1,2 @@\n a\n b\n-c"},
		{"missing final newline", "a\nb\n", "a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file"},
		{"empty want", "", "a\n", "@@ -0,0 +1 @@\n+a"},
		{"equal", "a\n", "a\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnifiedDiff(tt.want, tt.got); got != tt.diff {
				t.Fatalf("diff:\n%s\nwant:\n%s", got, tt.diff)
			}
		})
	}
}

// The diff agrees with diff -u on a larger edit (when diff is installed).
func TestUnifiedDiffMatchesDiffU(t *testing.T) {
	diff, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("no diff(1)")
	}
	a := numbered(1, 200)
	b := strings.NewReplacer("line 7\n", "", "line 50\n", "line 50\nextra\n", "line 120\n", "changed\n", "line 121\n", "").Replace(a) + "tail\n"
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte(a), 0o644)
	os.WriteFile(filepath.Join(dir, "b"), []byte(b), 0o644)
	out, _ := exec.Command(diff, "-u", filepath.Join(dir, "a"), filepath.Join(dir, "b")).Output()
	lines := strings.SplitN(string(out), "\n", 3) // drop the --- and +++ headers
	if got := UnifiedDiff(a, b); got+"\n" != lines[2] {
		t.Fatalf("diff:\n%s\ndiff -u:\n%s", got, lines[2])
	}
}

// recorder captures what Golden reports instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestGoldenPrintsDiff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden.json")
	os.WriteFile(path, []byte("{\n \"a\": 1,\n \"b\": 2\n}\n"), 0o644)
	r := &recorder{TB: t}
	Golden(r, path, []byte("{\n \"a\": 1,\n \"b\": 3\n}"))
	if len(r.errors) != 1 {
		t.Fatalf("reported %v, want one difference", r.errors)
	}
	for _, want := range []string{path, "-update", "@@ -1,4 +1,4 @@\n {\n  \"a\": 1,\n- \"b\": 2\n+ \"b\": 3\n }"} {
		if !strings.Contains(r.errors[0], want) {
			t.Errorf("report lacks %q:\n%s", want, r.errors[0])
		}
	}
	r.errors = nil
	Golden(r, path, []byte("{\n \"a\": 1,\n \"b\": 2\n}"))
	if len(r.errors) != 0 {
		t.Fatalf("equal output reported %v", r.errors)
	}
}
