package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/objstore"
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
(default: $XDG_CONFIG_HOME/pchronicle/config.toml; -c FILE to choose another).
A pin of a Directory (catalog://127.0.0.1:PORT with your user keys) opens its
datasets as @NAME/DATASET (docs/directory.md).`,
	}
	cmd.PersistentFlags().StringVarP(&cfgPath, "config", "c", config.DefaultPath(), "config file")

	var p config.Pin
	var force bool
	pin := &cobra.Command{
		Use:   "pin NAME URI",
		Short: "Name a Dataset (a local path or an s3://, az://, gs:// prefix with its settings) or a Directory (catalog://)",
		Example: "  pchronicle dataset pin nightly /srv/evals/nightly\n  pchronicle dataset pin captures ./captures --format atif\n" +
			"  pchronicle dataset pin archive s3://evals/archive/ --endpoint http://127.0.0.1:7070 --path-style --ak KEY --sk SECRET\n" +
			"  pchronicle dataset pin team catalog://127.0.0.1:8081 --ak USER_AK --sk USER_SK   # then @team/prod",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := pinName(args[0])
			if err != nil {
				return err
			}
			if p.URI = args[1]; p.IsCatalog() {
				p, err = config.NormalizeCatalogPin(p)
			} else {
				p.URI, err = pinURI(args[1], p)
			}
			if err != nil {
				return err
			}
			if err := pinTargetExists(p, force); err != nil {
				return err
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			if old, ok := cfg.Pins[name]; ok && !force {
				return fmt.Errorf("pin @%s exists (%s); pass --force to replace it", name, catalog.RedactURI(old.URI))
			}
			cfg.Pins[name] = p
			if err := cfg.Save(cfgPath); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "pinned @%s = %s\n", name, catalog.RedactURI(p.URI))
			return nil
		},
	}
	pf := pin.Flags()
	pf.BoolVar(&force, "force", false, "replace an existing pin of that name, or pin a local path that does not exist yet")
	pf.StringVar(&p.Format, "format", "", "format hint recorded with the pin (atif, openai, actf, canonical)")
	pf.StringVar(&p.Endpoint, "endpoint", "", "object-store endpoint URL (S3-compatible server, Azurite, fake-gcs)")
	pf.StringVar(&p.Region, "region", "", "S3 signing region")
	pf.BoolVar(&p.PathStyle, "path-style", false, "S3 path-style addressing (most S3-compatible servers need it)")
	pf.StringVar(&p.AccessKey, "ak", "", "access key id (S3), the account name (Azure, when --account is not given), or a Directory user's access key (catalog://)")
	pf.StringVar(&p.SecretKey, "sk", "", "secret key (S3), shared account key (Azure) or Directory user secret (catalog://); stored in the 0600 config file, never printed")
	pf.StringVar(&p.Account, "account", "", "Azure storage account")
	pf.StringArrayVar(&p.Include, "include", nil, "keep only sources whose _file_ matches this glob (repeatable; ** matches any number of path segments)")
	pf.StringArrayVar(&p.Exclude, "exclude", nil, "leave out sources (and whole directories) whose path matches this glob (repeatable)")
	pf.StringVar(&p.Unrecognized, "unrecognized", "", "this Dataset's policy for files no adapter recognizes: warn or error (default: the command's --unrecognized)")

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
			rw := newRowWriter(e.stdout, listFormat, []string{"name", "uri", "format", "endpoint"})
			for _, n := range cfg.Names() {
				p := cfg.Pins[n]
				if err := rw.Write([]any{n, catalog.RedactURI(p.URI), p.Format, catalog.RedactURI(p.Endpoint)}); err != nil {
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
			showPin(e.stdout, args[0], p)
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

// pinURI checks a pin's URI: an object-store URI is kept as given (the
// settings travel with the pin, never in the URI), a local one made
// absolute. Object-store settings on a local pin are refused rather than
// silently ignored.
func pinURI(uri string, p config.Pin) (string, error) {
	if loc, err := objstore.ParseURI(uri); err == nil && loc.Scheme != "file" {
		return uri, nil
	} else if err != nil && strings.Contains(uri, "://") {
		return "", err
	}
	if p.Store() != (objstore.Config{}) {
		return "", fmt.Errorf("--endpoint, --region, --path-style, --ak, --sk and --account apply to s3://, az:// and gs:// Datasets only")
	}
	return catalog.LocalPath(uri)
}

// showPin prints one pin; a secret key is only ever shown as "(set)", and
// so is a Directory pin's access key: both are that user's credentials.
func showPin(w io.Writer, name string, p config.Pin) {
	fmt.Fprintf(w, "name:   %s\nuri:    %s\nformat: %s\n", name, catalog.RedactURI(p.URI), p.Format)
	accessKey := p.AccessKey
	if p.IsCatalog() && accessKey != "" {
		accessKey = "(set)"
	}
	for _, kv := range [][2]string{{"endpoint", catalog.RedactURI(p.Endpoint)}, {"region", p.Region}, {"access_key", accessKey}, {"account", p.Account}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "%s: %s\n", kv[0], kv[1])
		}
	}
	if p.PathStyle {
		fmt.Fprintln(w, "path_style: true")
	}
	if p.SecretKey != "" {
		fmt.Fprintln(w, "secret_key: (set)")
	}
}

// pinName checks a pin name: it is used in @name references and TOML keys,
// and as a mount name (--mount NAME=@NAME), so a name whose SQL alias is
// reserved is refused now rather than at every mount.
func pinName(n string) (string, error) {
	ns, err := catalog.ParseNamespace(n)
	if err != nil || len(ns) != 1 {
		return "", fmt.Errorf("invalid pin name %q: use letters, digits, _, - and .", n)
	}
	if alias := strings.NewReplacer("-", "_", ".", "_").Replace(n); catalog.ReservedAlias(alias) {
		return "", fmt.Errorf("pin name %q is reserved: DuckDB has a schema or catalog named %q, so --mount %s=@%s could not mount it; choose another name",
			n, strings.ToLower(alias), n, n)
	}
	return n, nil
}

// pinTargetExists refuses a pin of a local path that does not exist (a
// typo would otherwise surface only when the pin is first used), unless
// force: a store that an import will create may be pinned first.
func pinTargetExists(p config.Pin, force bool) error {
	if force || !filepath.IsAbs(p.URI) { // pinURI made a local path absolute; URIs are not
		return nil
	}
	if _, err := os.Stat(p.URI); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s does not exist; pin an existing file or directory, or pass --force to pin it before it is created", p.URI)
		}
		return err
	}
	return nil
}
