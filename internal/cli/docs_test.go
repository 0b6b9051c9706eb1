package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// TestEveryFlagDocumented fails when a command, one of its flags, or a
// catalog option is missing from docs/: the docs are part of the interface.
func TestEveryFlagDocumented(t *testing.T) {
	text := checkDocumented(t, NewRoot(&env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}))
	for _, s := range catalog.Describe() {
		if !strings.Contains(text, "--"+strings.ReplaceAll(s.Name, "_", "-")) {
			t.Errorf("option %s is not documented in docs/", s.Name)
		}
	}
}

// checkDocumented fails t for every visible command under root, or flag of
// one, that docs/ does not mention, and returns the docs' text.
func checkDocumented(t *testing.T, root *cobra.Command) string {
	t.Helper()
	var docs bytes.Buffer
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	text := docs.String()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			path := strings.TrimPrefix(sub.CommandPath(), "pchronicle ")
			if !strings.Contains(text, "pchronicle "+path) && !strings.Contains(text, "## "+path) {
				t.Errorf("command %q is not documented in docs/", path)
			}
			sub.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "help" {
					return
				}
				if !strings.Contains(text, "--"+f.Name) {
					t.Errorf("flag --%s of %q is not documented in docs/", f.Name, path)
				}
			})
			walk(sub)
		}
	}
	walk(root)
	return text
}
