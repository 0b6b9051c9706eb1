package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/export"
)

// Shell completion: cobra's `pchronicle completion bash|zsh|fish|powershell`
// prints the script (docs/cli.md, "Shell completion"); the functions here
// give it the values of the enumerated flags and the config file's @pins.

// flagValues are the enumerated flags' values, by flag name. --format is
// completed only where it chooses a row format (its default is table): the
// --format of `dataset pin` is a trajectory format hint.
var flagValues = map[string][]string{
	"errors": {errorsStrict, errorsReport},
	"as":     export.Formats,
	"format": rowFormats,
}

// registerCompletions walks the command tree and registers the completion
// of enumerated flag values, of @pins where a command takes a Dataset (a
// positional DATASET, --mount NAME=@pin, import --to), and of pin names
// where it takes one.
func registerCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, values := range flagValues {
			f := c.Flags().Lookup(name)
			if f == nil || (name == "format" && f.DefValue != fmtTable) {
				continue
			}
			if name == "format" && c.Name() == "query" {
				values = queryFormats
			}
			c.RegisterFlagCompletionFunc(name, fixedValues(values))
		}
		if c.Flags().Lookup("mount") != nil { // the shared Dataset flags
			c.ValidArgsFunction = completeDataset
			c.RegisterFlagCompletionFunc("mount", completeMount)
		}
		if c.Flags().Lookup("to") != nil {
			c.RegisterFlagCompletionFunc("to", completeDataset)
		}
		if c.Parent() != nil && c.Parent().Name() == "dataset" && (c.Name() == "show" || c.Name() == "unpin") {
			c.ValidArgsFunction = completePinNames
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func fixedValues(values []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// pinNames reads the pin names of the config file the command would use
// (-c, --config); a config that cannot be read completes nothing.
func pinNames(cmd *cobra.Command) []string {
	path := config.DefaultPath()
	if f := cmd.Flags().Lookup("config"); f != nil {
		path = f.Value.String()
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil
	}
	return cfg.Names()
}

// completeDataset completes @pins for a word that starts with @, and
// leaves any other word to the shell's file completion.
func completeDataset(cmd *cobra.Command, _ []string, word string) ([]string, cobra.ShellCompDirective) {
	if !strings.HasPrefix(word, "@") {
		return nil, cobra.ShellCompDirectiveDefault
	}
	var out []string
	for _, n := range pinNames(cmd) {
		out = append(out, "@"+n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeMount completes NAME=@pin for --mount: a pin mounted under its
// own name.
func completeMount(cmd *cobra.Command, _ []string, word string) ([]string, cobra.ShellCompDirective) {
	if name, value, ok := strings.Cut(word, "="); ok {
		if !strings.HasPrefix(value, "@") {
			return nil, cobra.ShellCompDirectiveDefault
		}
		var out []string
		for _, n := range pinNames(cmd) {
			out = append(out, name+"=@"+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	var out []string
	for _, n := range pinNames(cmd) {
		out = append(out, n+"=@"+n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

func completePinNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return pinNames(cmd), cobra.ShellCompDirectiveNoFileComp
}
