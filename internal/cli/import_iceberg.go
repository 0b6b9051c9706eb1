package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/icebergcmd"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// icebergTokenEnv holds a REST catalog's bearer token: never in argv.
const icebergTokenEnv = "PCHRONICLE_ICEBERG_TOKEN"

// icebergOptions are the flags of an Iceberg destination (--to iceberg:...).
type icebergOptions struct {
	warehouse string
	namespace string
}

func (o *icebergOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.warehouse, "warehouse", "", "[--to iceberg:...] where the tables' files go: a directory, s3:// prefix or @pin (default: warehouse/ beside a SQLite catalog)")
	f.StringVar(&o.namespace, "namespace", icebergcmd.DefaultNamespace, "[--to iceberg:...] the Iceberg namespace holding runs, steps, tool_calls and events")
}

// unused refuses Iceberg flags given with another kind of destination,
// where they would silently do nothing.
func (o *icebergOptions) unused() error {
	if o.warehouse != "" || o.namespace != icebergcmd.DefaultNamespace {
		return errors.New("--warehouse and --namespace apply only to an Iceberg destination (--to iceberg:...)")
	}
	return nil
}

// runIcebergImport publishes the inputs as Iceberg tables: it normalizes
// the inputs the tables do not already hold at their current version into
// a local staging store, then commits each table (docs/scale-out.md).
func runIcebergImport(ctx context.Context, e *env, o *importOptions, ref string, inputs []importInput, failures []error) error {
	if o.mode != importAppend && o.modeSet {
		return fmt.Errorf("--mode %s: an Iceberg destination is shared by every shard, so each input replaces only its own rows (use the default)", o.mode)
	}
	t := icebergcmd.Target{Catalog: ref, Namespace: o.iceberg.namespace, Token: os.Getenv(icebergTokenEnv)}
	if o.iceberg.warehouse != "" {
		cfg, err := config.Load(o.config)
		if err != nil {
			return err
		}
		p, err := cfg.ResolvePin(o.iceberg.warehouse)
		if err != nil {
			return err
		}
		t.Warehouse, t.Store = p.URI, p.Store()
	}
	ids := make([]icebergcmd.Input, 0, len(inputs))
	byFile := map[string]importInput{}
	for _, in := range inputs {
		fi, err := os.Stat(in.path)
		if err != nil {
			return err
		}
		ids = append(ids, icebergcmd.Input{File: in.file, Identity: icebergcmd.Identity(model.SchemaVersion, fi)})
		byFile[in.file] = in
	}
	resp, err := icebergcmd.Call(ctx, icebergcmd.Request{Op: icebergcmd.OpPending, Target: t, Inputs: ids})
	if err != nil {
		return err
	}
	pending, ns := resp.Pending, resp.Namespace
	if len(pending) == 0 {
		fmt.Fprintf(e.stdout, "nothing to import: the %d input(s) are in %s at these versions\n", len(inputs), ns)
		return reportFailures(e, failures)
	}
	todo := make([]importInput, len(pending))
	for i, p := range pending {
		todo[i] = byFile[p.File]
	}

	tmp, err := os.MkdirTemp("", "pchronicle-import-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	st, err := storyline.Prepare(tmp)
	if err != nil {
		return err
	}
	w, err := st.NewGeneration()
	if err != nil {
		return err
	}
	g, results, err := buildGeneration(ctx, e, o, w, nil, todo)
	if err != nil {
		w.Abort()
		return err
	}
	var done []icebergcmd.Input
	for i, r := range results {
		if r.err != nil {
			failures = append(failures, r.err)
		} else {
			done = append(done, pending[i])
		}
	}
	resp, err = icebergcmd.Call(ctx, icebergcmd.Request{Op: icebergcmd.OpPublish, Target: t, Inputs: done, Generation: st.Dir()})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d file(s) into %s (%d already there):", len(done), ns, len(inputs)-len(pending))
	for _, c := range resp.Commits {
		if c.Snapshot == 0 {
			fmt.Fprintf(e.stdout, " %s unchanged;", c.Relation)
		} else {
			fmt.Fprintf(e.stdout, " %s snapshot %d (%d rows, %d attempt(s));", c.Relation, c.Snapshot, g.Manifest.Tables[c.Relation].Rows, c.Attempts)
		}
	}
	fmt.Fprintln(e.stdout)
	return reportFailures(e, failures)
}

// reportFailures lists the inputs that could not be imported (report mode).
func reportFailures(e *env, failures []error) error {
	for _, err := range failures {
		fmt.Fprintln(e.stderr, "error:", err)
	}
	if len(failures) > 0 {
		fmt.Fprintf(e.stderr, "%d input(s) could not be imported\n", len(failures))
	}
	return nil
}
