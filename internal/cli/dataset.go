package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/config"
)

func init() { register(newDatasetCmd) }

func newDatasetCmd(e *env) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Manage named Dataset pins in the config file",
		Long: `Pins give Datasets names: "pchronicle dataset pin nightly ./runs/nightly" lets
every command take @nightly (or @nightly/sub/dir) where it takes a Dataset, and
--mount NAME=@nightly. Pins live in the config file as [pins.<name>] tables
(default: $XDG_CONFIG_HOME/pchronicle/config.toml; -c FILE to choose another).`,
	}
	cmd.PersistentFlags().StringVarP(&cfgPath, "config", "c", config.DefaultPath(), "config file")

	var format string
	pin := &cobra.Command{
		Use:     "pin NAME PATH",
		Short:   "Name a Dataset",
		Example: "  pchronicle dataset pin nightly /srv/evals/nightly\n  pchronicle dataset pin captures ./captures --format atif",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := pinName(args[0])
			if err != nil {
				return err
			}
			path, err := catalog.LocalPath(args[1])
			if err != nil {
				return err
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			cfg.Pins[name] = config.Pin{URI: path, Format: format}
			if err := cfg.Save(cfgPath); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "pinned @%s = %s\n", name, path)
			return nil
		},
	}
	pin.Flags().StringVar(&format, "format", "", "format hint recorded with the pin (atif, openai, actf, canonical)")

	var listFormat string
	list := &cobra.Command{
		Use:   "list",
		Short: "List pinned Datasets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validFormat(listFormat); err != nil {
				return err
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			rw := newRowWriter(e.stdout, listFormat, []string{"name", "uri", "format"})
			for _, n := range cfg.Names() {
				p := cfg.Pins[n]
				if err := rw.Write([]any{n, catalog.RedactURI(p.URI), p.Format}); err != nil {
					return err
				}
			}
			return rw.Close()
		},
	}
	list.Flags().StringVar(&listFormat, "format", fmtTable, "output format: table, csv, json or jsonl")

	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one pinned Dataset",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			p, ok := cfg.Pins[args[0]]
			if !ok {
				return fmt.Errorf("unknown pin %q", args[0])
			}
			fmt.Fprintf(e.stdout, "name:   %s\nuri:    %s\nformat: %s\n", args[0], catalog.RedactURI(p.URI), p.Format)
			return nil
		},
	}

	unpin := &cobra.Command{
		Use:   "unpin NAME",
		Short: "Remove a pin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			if _, ok := cfg.Pins[args[0]]; !ok {
				return fmt.Errorf("unknown pin %q", args[0])
			}
			delete(cfg.Pins, args[0])
			return cfg.Save(cfgPath)
		},
	}
	cmd.AddCommand(pin, list, show, unpin)
	return cmd
}

// pinName checks a pin name: it is used in @name references and TOML keys.
func pinName(n string) (string, error) {
	ns, err := catalog.ParseNamespace(n)
	if err != nil || len(ns) != 1 {
		return "", fmt.Errorf("invalid pin name %q: use letters, digits, _, - and .", n)
	}
	return n, nil
}
