package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// docsText is every page of docs/ concatenated.
func docsText(t *testing.T) string {
	t.Helper()
	var docs bytes.Buffer
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if len(files) == 0 {
		t.Fatal("no docs/*.md found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	return docs.String()
}

// flagPattern finds whole flags: --out in "--out FILE", not in "--output".
var flagPattern = regexp.MustCompile(`--[a-z0-9][a-z0-9-]*`)

// documentedFlags is the set of whole flags named in text.
func documentedFlags(text string) map[string]bool {
	flags := map[string]bool{}
	for _, f := range flagPattern.FindAllString(text, -1) {
		flags[f] = true
	}
	return flags
}

// mentionsCommand reports whether text names `pchronicle PATH` as a whole
// command (followed by a space, punctuation or the end, not by more
// letters of a longer name) or has a section "## PATH".
func mentionsCommand(text, path string) bool {
	re := regexp.MustCompile(`(pchronicle |## )` + regexp.QuoteMeta(path) + `([^a-z0-9-]|$)`)
	return re.MatchString(text)
}

// walkCommands calls fn for every command of the tree below root, at any
// depth, except cobra's own help command.
func walkCommands(root *cobra.Command, fn func(c *cobra.Command)) {
	for _, sub := range root.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		fn(sub)
		walkCommands(sub, fn)
	}
}

func newTestRoot() *cobra.Command {
	return NewRoot(&env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
}

// TestEveryFlagDocumented fails when a command, one of its flags, or a
// catalog option is missing from docs/: the docs are part of the interface.
func TestEveryFlagDocumented(t *testing.T) {
	text := docsText(t)
	flags := documentedFlags(text)
	walkCommands(newTestRoot(), func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "pchronicle ")
		if !mentionsCommand(text, path) {
			t.Errorf("command %q is not documented in docs/", path)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !flags["--"+f.Name] {
				t.Errorf("flag --%s of %q is not documented in docs/", f.Name, path)
			}
		})
	})
	for _, s := range catalog.Describe() {
		if flag := "--" + strings.ReplaceAll(s.Name, "_", "-"); !flags[flag] {
			t.Errorf("option %s (%s) is not documented in docs/", s.Name, flag)
		}
	}
}

func TestDocumentationMatchesWholeNames(t *testing.T) {
	text := "use --output FILE with `pchronicle events append`; see ## store gc"
	flags := documentedFlags(text)
	if flags["--out"] || !flags["--output"] {
		t.Errorf("flags %v: --out must not be found inside --output", flags)
	}
	for path, want := range map[string]bool{"events append": true, "events": true, "event": false, "store gc": true, "store g": false} {
		if got := mentionsCommand(text, path); got != want {
			t.Errorf("mentionsCommand(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestEveryCommandHasHelp runs --help of every command and subcommand of
// the tree: each prints its usage with its own description, and a command
// with subcommands lists them all.
func TestEveryCommandHasHelp(t *testing.T) {
	root := newTestRoot()
	var paths [][]string
	walkCommands(root, func(c *cobra.Command) {
		paths = append(paths, strings.Fields(strings.TrimPrefix(c.CommandPath(), "pchronicle ")))
	})
	if len(paths) <= len(root.Commands()) {
		t.Fatalf("the walk did not reach the subcommands: %v", paths)
	}
	for _, path := range paths {
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			// The tree is built afresh for each run, as a process would.
			c, _, err := newTestRoot().Find(path)
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := Execute(context.Background(), append(append([]string{}, path...), "--help"), strings.NewReader(""), &out, &errb)
			help := out.String()
			if code != 0 || errb.Len() > 0 {
				t.Fatalf("exit %d, stderr %q", code, errb.String())
			}
			if !strings.Contains(help, "Usage:") || !strings.Contains(help, c.UseLine()) {
				t.Fatalf("no usage line %q in:\n%s", c.UseLine(), help)
			}
			if c.Short == "" {
				t.Fatal("no short description")
			}
			desc := c.Long
			if desc == "" {
				desc = c.Short
			}
			if !strings.Contains(help, strings.TrimSpace(desc)) {
				t.Fatalf("help lacks the command's description %q", desc)
			}
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && !strings.Contains(help, sub.Name()) {
					t.Errorf("help does not list subcommand %s", sub.Name())
				}
			}
			if c.Runnable() && c.HasAvailableLocalFlags() && !strings.Contains(help, "Flags:") {
				t.Error("help lists no flags")
			}
		})
	}
}

// TestEveryFuzzTargetIsInTheTestingGuide: docs/testing.md lists each fuzz
// target in a row of its package, with how long it has run, so that a new
// parser's target is not left out of the record.
func TestEveryFuzzTargetIsInTheTestingGuide(t *testing.T) {
	root := filepath.Join("..", "..")
	guide, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // package directory → its rows
	for _, line := range strings.Split(string(guide), "\n") {
		if m := regexp.MustCompile("^\\| `([a-z0-9_/]+)` \\|").FindStringSubmatch(line); m != nil {
			rows[m[1]] += line
		}
	}
	target := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	found := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range target.FindAllStringSubmatch(string(b), -1) {
			found++
			if !strings.Contains(rows[filepath.ToSlash(pkg)], "`"+m[1]+"`") {
				t.Errorf("%s: %s is not in a row of `%s` in docs/testing.md (Fuzzing)", path, m[1], filepath.ToSlash(pkg))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no fuzz targets found: the walk is broken")
	}
}
