package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/engine"
)

// datasetFlags are the flags every command that opens Datasets shares:
// mounts, the config file with pins, the error policy and every catalog
// option (generated from catalog.Describe, so a new option gets its flag and
// help automatically).
type datasetFlags struct {
	cmd     *cobra.Command // for its stderr: discovery progress, on a terminal only
	mounts  []string
	config  string
	include []string // globs applied to every mount, after a pin's own
	exclude []string
	options map[string]*string
}

func (d *datasetFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&d.mounts, "mount", nil, "mount a Dataset as NAME=URI (repeatable; excludes a positional Dataset)")
	fs.StringVarP(&d.config, "config", "c", config.DefaultPath(), "config file with [pins.<name>] Datasets, referenced as @name or @name/sub/path")
	fs.StringArrayVar(&d.include, "include", nil, "keep only sources whose _file_ matches this glob (repeatable; ** matches any number of path segments): decided from names, nothing is read")
	fs.StringArrayVar(&d.exclude, "exclude", nil, "leave out sources, and whole directories, whose path matches this glob (repeatable)")
	d.options = map[string]*string{}
	for _, s := range catalog.Describe() {
		name, def := strings.ReplaceAll(s.Name, "_", "-"), s.Default
		if s.Name == "cache_dir" {
			def = defaultCacheDir() // the library keeps no cache unless told; the CLI keeps one
		}
		if !s.Switch {
			d.options[s.Name] = fs.String(name, def, s.Help)
			continue
		}
		v := def
		d.options[s.Name] = &v
		fs.Var(switchFlag{&v}, name, s.Help)
		fs.Lookup(name).NoOptDefVal = "true" // --no-cache, not --no-cache=true
	}
}

// switchFlag is a true/false option as a flag that takes no value; its
// text is checked with the other options (catalogOptions).
type switchFlag struct{ v *string }

func (f switchFlag) String() string     { return *f.v }
func (f switchFlag) Set(v string) error { *f.v = v; return nil }
func (f switchFlag) Type() string       { return "bool" }

// catalogOptions returns the catalog options from the flags; a bad value is
// reported with its flag's name, before anything is opened.
func (d *datasetFlags) catalogOptions() (catalog.Options, error) {
	o := catalog.DefaultOptions()
	for _, s := range catalog.Describe() {
		if err := o.Set(s.Name, *d.options[s.Name]); err != nil {
			var oe *catalog.OptionError
			if errors.As(err, &oe) {
				return o, fmt.Errorf("%s %q %s", oe.Flag(), oe.Value, oe.Reason)
			}
			return o, err
		}
	}
	return o, nil
}

// mountList turns either a positional Dataset or --mount flags into mounts.
// A positional Dataset is always the schema "dataset"; with only mounts there
// is no default schema. A Directory pin (@team/NAME) is resolved by ticket
// exchange here, within the command's context.
func (d *datasetFlags) mountList(positional string) (mounts []catalog.DatasetMount, isPositional bool, err error) {
	if positional != "" && len(d.mounts) > 0 {
		return nil, false, fmt.Errorf("a positional Dataset and --mount are mutually exclusive; mount it as --mount NAME=%s instead", positional)
	}
	cfg, err := config.Load(d.config)
	if err != nil {
		return nil, false, err
	}
	ctx := d.cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if positional != "" {
		p, err := cfg.ResolvePinContext(ctx, positional)
		if err != nil {
			return nil, false, err
		}
		return []catalog.DatasetMount{{Namespace: []string{catalog.DefaultAlias}, Alias: catalog.DefaultAlias, URI: p.URI, FormatHint: p.Format, Config: p.Store(),
			Filter: d.filter(p), Unrecognized: p.Unrecognized}}, true, nil
	}
	if len(d.mounts) == 0 {
		return nil, false, fmt.Errorf("no Dataset: give a path or @pin, or --mount NAME=URI")
	}
	for _, spec := range d.mounts {
		m, err := catalog.ParseMount(spec)
		if err != nil {
			return nil, false, err
		}
		p, err := cfg.ResolvePinContext(ctx, m.URI) // a pin brings its object-store settings
		if err != nil {
			return nil, false, err
		}
		m.URI, m.FormatHint, m.Config, m.Filter, m.Unrecognized = p.URI, p.Format, p.Store(), d.filter(p), p.Unrecognized
		mounts = append(mounts, m)
	}
	return mounts, false, nil
}

// filter is a mount's path filter: the pin's globs, then the command's.
func (d *datasetFlags) filter(p config.Pin) catalog.PathFilter {
	return catalog.PathFilter{Include: append(slices.Clip(p.Include), d.include...), Exclude: append(slices.Clip(p.Exclude), d.exclude...)}
}

// open builds the Snapshot for a command.
func (d *datasetFlags) open(ctx context.Context, positional string) (*catalog.Snapshot, bool, error) {
	opts, err := d.catalogOptions()
	if err != nil {
		return nil, false, err
	}
	return d.build(ctx, opts, positional)
}

// build builds the Snapshot for a command with the given options.
func (d *datasetFlags) build(ctx context.Context, opts catalog.Options, positional string) (*catalog.Snapshot, bool, error) {
	mounts, isPositional, err := d.mountList(positional)
	if err != nil {
		return nil, false, err
	}
	bar := newProgress(d.cmd.ErrOrStderr(), -1, "discovering sources", false)
	snap, err := catalog.Build(ctx, mounts, opts, catalog.WithProgress(func(n int) { bar.set(int64(n)) }))
	bar.finish()
	if err == nil && snap.CacheError() != nil {
		fmt.Fprintf(d.cmd.ErrOrStderr(), "pchronicle: %v; running without it (--no-cache turns it off)\n", snap.CacheError())
	}
	return snap, isPositional, err
}

// addDatasetFlags registers the shared flags on cmd.
func addDatasetFlags(cmd *cobra.Command) *datasetFlags {
	d := &datasetFlags{cmd: cmd}
	d.register(cmd.Flags())
	return d
}

// openEngine builds the Snapshot for a command and a query engine over it;
// close releases both.
func (d *datasetFlags) openEngine(ctx context.Context, positional string) (*catalog.Snapshot, *engine.Engine, func(), error) {
	// The first query's worker starts while the Snapshot is discovered: its
	// DuckDB open is most of a short query's time. The engine has no parser
	// of its own: it parses on that worker's instance, so the command's own
	// process never opens DuckDB.
	opts, err := d.catalogOptions()
	if err != nil {
		return nil, nil, nil, err
	}
	worker := engine.StartWorker(engine.LimitsFrom(opts))
	snap, isPositional, err := d.build(ctx, opts, positional)
	if err != nil {
		worker.Close()
		return nil, nil, nil, err
	}
	eng := engine.New(snap, nil, engine.Config{Positional: isPositional, Limits: engine.LimitsFrom(snap.Options), Worker: worker})
	return snap, eng, func() { eng.Close(); snap.Close() }, nil
}
