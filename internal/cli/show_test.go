//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// show prints one Storyline for a person: header, every step with its
// reasoning, tool calls and results, tokens and the outcome. Plain text on
// a pipe; coloured and paged on a terminal; never a raw control character
// from the trajectory.
func TestShowStoryline(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	out, stderr, code := testutil.Run(t, "show", ex, "--session", "example-fix-failing-test")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Storyline example-agent · example-fix-failing-test",
		"dataset · atif/fix-failing-test.trajectory.json (atif/1.6)",
		"tokens  2,272 in, 164 out, 1,536 cached tokens",
		"── 1 · user",
		"  The test test_parse_date fails. Please fix it.",
		"412 in, 38 out, 0 cached tokens",
		"  thinking: Reproduce before changing anything.",
		`  → bash({"cmd":"pytest -q tests/test_dates.py::test_parse_date"})`,
		"    ← FAILED tests/test_dates.py::test_parse_date - ValueError: month must be in 1..12",
		"    ← 3 passed in 0.04s",
		"outcome: status unknown",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("colour on a pipe:\n%q", out)
	}

	// A result carried by a later step (OpenAI tool messages) is printed
	// under its call's name, once.
	out, _, code = testutil.Run(t, "show", ex, "--session", "line-1", "--source", "openai/support-chats.jsonl")
	if code != 0 || !strings.Contains(out, "result of lookup_order\n    ← {\"status\": \"shipped\"") || strings.Count(out, `"carrier": "DHL"`) != 1 {
		t.Fatalf("exit %d:\n%s", code, out)
	}

	_, stderr, code = testutil.Run(t, "show", testutil.SamplesDir(t), "--session", "1/epoch-1")
	if code == 0 || !strings.Contains(stderr, `Storylines have session_id "1/epoch-1"`) || !strings.Contains(stderr, "--source") {
		t.Fatalf("several sources: exit %d, %q", code, stderr)
	}
	_, stderr, code = testutil.Run(t, "show", ex, "--session", "nope")
	if code == 0 || !strings.Contains(stderr, `no Storyline has session_id "nope"`) {
		t.Fatalf("missing: exit %d, %q", code, stderr)
	}

	dir := t.TempDir()
	hostile := `{"messages": [{"role": "user", "content": "hi \u001b]0;owned\u0007 \u001b[2J there"}, {"role": "assistant", "content": "ok"}]}` + "\n"
	os.WriteFile(filepath.Join(dir, "h.jsonl"), []byte(hostile), 0o644)
	out, _, code = testutil.Run(t, "show", dir, "--session", "line-1")
	if code != 0 || !strings.Contains(out, `hi \x1b]0;owned\x07 \x1b[2J there`) || strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("control characters must be escaped: exit %d:\n%q", code, out)
	}

	// Longer than the terminal: through $PAGER, coloured.
	paged := filepath.Join(t.TempDir(), "paged")
	screen, code := runOnTerminal(t, false, 10, 100, []string{"PAGER=cat > " + paged}, "show", ex, "--session", "example-fix-failing-test")
	got, _ := os.ReadFile(paged)
	if code != 0 || !strings.Contains(string(got), "\x1b[1mStoryline") || !strings.Contains(string(got), "3 passed in 0.04s") || strings.Contains(screen, "3 passed") {
		t.Fatalf("exit %d; paged:\n%q\nscreen:\n%q", code, got, screen)
	}
}
