package cli_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestPinRefusals: pinning over a pin, a local path that does not exist
// and a reserved name are refused with what to do instead; --force
// replaces a pin, or pins a path before it exists.
func TestPinRefusals(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	atif := filepath.Join(testutil.SamplesDir(t), "atif")
	amp := filepath.Join(testutil.SamplesDir(t), "amp")
	pin := func(args ...string) (string, string, int) {
		return pc(t, append([]string{"dataset", "pin", "-c", cfg}, args...)...)
	}
	if _, stderr, code := pin("nightly", atif); code != 0 {
		t.Fatalf("first pin: exit %d, %s", code, stderr)
	}
	_, stderr, code := pin("nightly", amp)
	if code == 0 || !strings.Contains(stderr, "pin @nightly exists ("+atif+"); pass --force to replace it") {
		t.Fatalf("pin over a pin: exit %d, %s", code, stderr)
	}
	if out, _, _ := pc(t, "dataset", "show", "-c", cfg, "nightly"); !strings.Contains(out, "uri:    "+atif+"\n") {
		t.Fatalf("the refused pin changed the config:\n%s", out)
	}
	if _, stderr, code := pin("nightly", amp, "--force"); code != 0 {
		t.Fatalf("pin --force: exit %d, %s", code, stderr)
	}
	if out, _, _ := pc(t, "dataset", "show", "-c", cfg, "nightly"); !strings.Contains(out, "uri:    "+amp+"\n") {
		t.Fatalf("--force did not replace the pin:\n%s", out)
	}

	missing := filepath.Join(t.TempDir(), "no-such-dir")
	_, stderr, code = pin("typo", missing)
	if code == 0 || !strings.Contains(stderr, missing+" does not exist") || !strings.Contains(stderr, "--force") {
		t.Fatalf("pin of a missing path: exit %d, %s", code, stderr)
	}
	if _, stderr, code := pin("future", missing, "--force"); code != 0 {
		t.Fatalf("pin --force of a path to create: exit %d, %s", code, stderr)
	}

	for _, name := range []string{"main", "Public", "information_schema", "pg-catalog", "temp"} {
		_, stderr, code := pin(name, atif)
		if code == 0 || !strings.Contains(stderr, "pin name \""+name+"\" is reserved") {
			t.Errorf("pin %s: exit %d, %s", name, code, stderr)
		}
	}
	out, _, _ := pc(t, "dataset", "list", "-c", cfg, "--format", "csv")
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		names = append(names, strings.Split(line, ",")[0])
	}
	if !slices.Equal(names, []string{"future", "nightly"}) {
		t.Fatalf("pins after the refusals: %q", names)
	}
}

// complete runs cobra's completion of the last word of args through the
// real binary and returns the candidates.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, stderr, code := pc(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d, %s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[:len(lines)-1] // the last line is the directive
}

// TestShellCompletion: the completion script is generated, enumerated
// flags complete their values and Datasets complete the config's @pins.
func TestShellCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out, stderr, code := pc(t, "completion", shell); code != 0 || !strings.Contains(out, "pchronicle") {
			t.Fatalf("completion %s: exit %d, %s", shell, code, stderr)
		}
	}
	cfg := filepath.Join(t.TempDir(), "config.toml")
	dir := t.TempDir()
	for _, name := range []string{"nightly", "archive"} {
		if _, stderr, code := pc(t, "dataset", "pin", "-c", cfg, name, dir); code != 0 {
			t.Fatalf("pin: %s", stderr)
		}
	}
	rowFormats := []string{"table", "markdown", "csv", "json", "jsonl"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"query", "./runs", "--format", ""}, append(slices.Clone(rowFormats), "arrow", "parquet")},
		{[]string{"find", "--format", ""}, rowFormats},
		{[]string{"dataset", "list", "--format", ""}, rowFormats},
		{[]string{"export", "./runs", "--as", ""}, []string{"canonical", "atif", "openai"}},
		{[]string{"query", "--errors", ""}, []string{"strict", "report"}},
		{[]string{"import", "x", "--errors", ""}, []string{"strict", "report"}},
		{[]string{"query", "-c", cfg, "@"}, []string{"@archive", "@nightly"}},
		{[]string{"stats", "-c", cfg, "@n"}, []string{"@archive", "@nightly"}},
		{[]string{"query", "-c", cfg, "--mount", ""}, []string{"archive=@archive", "nightly=@nightly"}},
		{[]string{"import", "x", "-c", cfg, "--to", "@"}, []string{"@archive", "@nightly"}},
		{[]string{"dataset", "unpin", "-c", cfg, ""}, []string{"archive", "nightly"}},
	} {
		if got := complete(t, tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("complete %q = %q, want %q", tc.args, got, tc.want)
		}
	}
	// The values offered are exactly those the command accepts: its error
	// for a value it does not know lists them ("(want a, b or c)", "is not
	// a or b"), so a
	// value added to a command without its completion fails here.
	dataset := t.TempDir()
	for _, tc := range []struct{ cmd, flag string }{
		{"query", "format"}, {"find", "format"}, {"stats", "format"}, {"ls", "format"}, {"inspect", "format"},
		{"dataset list", "format"}, {"store show", "format"}, {"export", "as"},
		{"query", "errors"}, {"import", "errors"}, {"inspect", "errors"},
	} {
		args := strings.Fields(tc.cmd)
		run := append(slices.Clone(args), "--"+tc.flag, "bogus")
		switch tc.cmd {
		case "query":
			run = append(run, dataset, "SELECT 1")
		case "import":
			run = append(run, dataset, "--to", filepath.Join(t.TempDir(), "store"))
		case "dataset list":
		default:
			run = append(run, dataset)
		}
		_, stderr, _ := pc(t, run...)
		m := regexp.MustCompile(`--` + tc.flag + ` "bogus" (?:\(want ([^)]*)\)|is not ([^\n]*))`).FindStringSubmatch(stderr)
		if m == nil {
			t.Errorf("%s --%s bogus: %s", tc.cmd, tc.flag, stderr)
			continue
		}
		accepted := strings.FieldsFunc(strings.ReplaceAll(m[1]+m[2], " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
		if got := complete(t, append(args, "--"+tc.flag, "")...); !slices.Equal(got, accepted) {
			t.Errorf("%s --%s completes %q, the command accepts %q", tc.cmd, tc.flag, got, accepted)
		}
	}
}
