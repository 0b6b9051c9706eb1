package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/objstore"
)

// serveCatalogCommand is `serve catalog`: the editors of a Directory config
// (docs/directory.md). They only rewrite the file, atomically and under a
// lock, and never start a listener. Dataset edits take effect when serve
// restarts; user and grant edits within a few seconds of a running serve.
func serveCatalogCommand(e *env) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Edit a Directory config: datasets, user keys and grants (starts no server)",
		Long: `Edit the Directory config that "pchronicle serve --catalog-config FILE" serves:
register datasets with their backend keys, issue user keys, grant and revoke
datasets. A missing file is created with an empty [meta] table. Every write
replaces the file atomically; a failed write leaves the previous file as it was.`,
	}
	cmd.PersistentFlags().StringVar(&path, "catalog-config", "", "the Directory config file (TOML; created on the first write)")
	cmd.MarkPersistentFlagRequired("catalog-config")
	cmd.AddCommand(catalogDatasetCommand(e, &path), catalogIssueCommand(e, &path), catalogGrantCommand(e, &path, true), catalogGrantCommand(e, &path, false))
	return cmd
}

// editCatalog applies edit to the config at path and saves it, holding the
// config's lock so that concurrent edits cannot lose one another. An edit
// that returns changed == false writes nothing.
func editCatalog(ctx context.Context, path string, edit func(c *directory.Config) (changed bool, err error)) error {
	unlock, err := directory.LockFile(ctx, path)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := directory.LoadOrEmpty(path)
	if err != nil {
		return err
	}
	changed, err := edit(c)
	if err != nil || !changed {
		return err
	}
	return c.Save(path)
}

func catalogDatasetCommand(e *env, path *string) *cobra.Command {
	cmd := &cobra.Command{Use: "dataset", Short: "Register, remove and list the Directory's datasets"}

	var d directory.Dataset
	var secret string
	add := &cobra.Command{
		Use:   "add NAME --uri URI",
		Short: "Register a dataset (a local path, or s3:// with its backend keys); nothing is created in storage",
		Example: "  pchronicle serve catalog dataset add --catalog-config catalog.toml evals --uri /srv/evals\n" +
			"  pchronicle serve catalog dataset add --catalog-config catalog.toml prod --uri s3://bucket/prod \\\n" +
			"      --endpoint http://127.0.0.1:7070 --access-key BACKEND_AK --secret-key BACKEND_SK",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := directory.ValidName("dataset", name); err != nil {
				return err
			}
			d.SecretKey = objstore.Secret(secret)
			if !d.IsS3() {
				local, err := catalog.LocalPath(d.URI)
				if err != nil {
					return err
				}
				d.URI = local
			}
			err := editCatalog(cmd.Context(), *path, func(c *directory.Config) (bool, error) {
				if _, exists := c.Datasets[name]; exists {
					return false, fmt.Errorf("dataset %q is already registered; remove it first to change it", name)
				}
				if err := d.Validate("datasets." + name); err != nil {
					return false, err
				}
				if d.IsS3() {
					if err := sameBackend(c, d); err != nil {
						return false, err
					}
				}
				if c.Datasets == nil {
					c.Datasets = map[string]directory.Dataset{}
				}
				c.Datasets[name] = d
				return true, nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "registered dataset %s = %s (grant it to users; a running serve applies it after a restart)\n", name, d.URI)
			return nil
		},
	}
	af := add.Flags()
	af.StringVar(&d.URI, "uri", "", "the dataset's path: a local directory or s3://bucket/prefix")
	af.StringVar(&d.Endpoint, "endpoint", "", "S3-compatible endpoint URL of an s3:// dataset (path-style addressing is used with it)")
	af.StringVar(&d.Region, "region", "", "S3 signing region of an s3:// dataset")
	af.StringVar(&d.AccessKey, "access-key", "", "backend access key of an s3:// dataset (required for s3://)")
	af.StringVar(&secret, "secret-key", "", "backend secret key of an s3:// dataset (required for s3://); never printed")
	add.MarkFlagRequired("uri")

	remove := &cobra.Command{
		Use:   "remove NAME...",
		Short: "Unregister datasets and their grants; nothing is deleted in storage",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var dropped int
			err := editCatalog(cmd.Context(), *path, func(c *directory.Config) (bool, error) {
				for _, name := range args {
					if _, ok := c.Datasets[name]; !ok {
						return false, fmt.Errorf("no dataset %q in %s", name, *path)
					}
				}
				for _, name := range args {
					delete(c.Datasets, name)
				}
				kept := c.Grants[:0]
				for _, g := range c.Grants {
					if slices.Contains(args, g.Dataset) {
						dropped++
						continue
					}
					kept = append(kept, g)
				}
				c.Grants = kept
				return true, nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "removed %s and %d grant(s) of them (a running serve applies it after a restart)\n", strings.Join(args, ", "), dropped)
			return nil
		},
	}

	var listFormat string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the registered datasets and who may see them (never keys)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validFormat(listFormat); err != nil {
				return err
			}
			c, err := directory.LoadOrEmpty(*path)
			if err != nil {
				return err
			}
			users := map[string][]string{}
			for _, g := range c.Grants {
				users[g.Dataset] = append(users[g.Dataset], g.User)
			}
			rw := newRowWriter(e.stdout, listFormat, []string{"name", "uri", "endpoint", "region", "users"})
			for _, name := range slices.Sorted(maps.Keys(c.Datasets)) {
				ds := c.Datasets[name]
				if err := rw.Write([]any{name, ds.URI, ds.Endpoint, ds.Region, strings.Join(users[name], ",")}); err != nil {
					return err
				}
			}
			return rw.Close()
		},
	}
	list.Flags().StringVar(&listFormat, "format", fmtTable, "output format: table, csv, json or jsonl")
	cmd.AddCommand(add, remove, list)
	return cmd
}

// sameBackend enforces that the CLI appends s3:// datasets of one backend
// only: a worker holds one backend's keys, and a hand-written config with
// several backends makes every request name its dataset.
func sameBackend(c *directory.Config, d directory.Dataset) error {
	want := d.Backend()
	for _, name := range slices.Sorted(maps.Keys(c.Datasets)) {
		other := c.Datasets[name]
		if !other.IsS3() || other.Backend() == want {
			continue
		}
		var differ []string
		for _, f := range []struct {
			field string
			same  bool
		}{
			{"--endpoint", other.Endpoint == d.Endpoint}, {"--region", other.Region == d.Region},
			{"--access-key", other.AccessKey == d.AccessKey}, {"--secret-key", other.SecretKey == d.SecretKey},
		} {
			if !f.same {
				differ = append(differ, f.field)
			}
		}
		return fmt.Errorf("s3:// datasets added here must use the backend of dataset %q, and %s differ; "+
			"several backends can only be written by hand (see docs/directory.md)", name, strings.Join(differ, ", "))
	}
	return nil
}

func catalogIssueCommand(e *env, path *string) *cobra.Command {
	var rotate bool
	cmd := &cobra.Command{
		Use:   "issue NAME",
		Short: "Create a user and print its keys once (grants nothing); --rotate replaces an existing user's keys",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := directory.ValidName("user", name); err != nil {
				return err
			}
			ak, sk := directory.NewUserKeys()
			err := editCatalog(cmd.Context(), *path, func(c *directory.Config) (bool, error) {
				_, exists := c.Users[name]
				switch {
				case exists && !rotate:
					return false, fmt.Errorf("user %q exists; use issue --rotate to replace its keys", name)
				case !exists && rotate:
					return false, fmt.Errorf("no user %q to rotate; issue without --rotate creates it", name)
				}
				if c.Users == nil {
					c.Users = map[string]directory.User{}
				}
				c.Users[name] = directory.User{AccessKey: ak, SecretKey: sk}
				return true, nil
			})
			if err != nil {
				return err
			}
			// Printed only once the file holds the keys.
			fmt.Fprintf(e.stdout, "access_key: %s\nsecret_key: %s\n", ak, sk.Reveal())
			what := "issued keys for " + name + "; it has no grants yet"
			if rotate {
				what = "replaced the keys of " + name + "; its old keys stop working when serve reloads"
			}
			fmt.Fprintf(e.stderr, "%s. The secret key is shown only this once.\n", what)
			return nil
		},
	}
	cmd.Flags().BoolVar(&rotate, "rotate", false, "replace the keys of an existing user (its grants stay)")
	return cmd
}

// catalogGrantCommand is `grant` or `revoke` (named grants; NAME * means
// every current user, not the public user = "*" grant).
func catalogGrantCommand(e *env, path *string, isGrant bool) *cobra.Command {
	use, short := "grant NAME DATASET...", "Let a user (or *, every current user) see datasets"
	if !isGrant {
		use, short = "revoke NAME DATASET...", "Take datasets back from a user (or *, every current user)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var notes []string
			err := editCatalog(cmd.Context(), *path, func(c *directory.Config) (bool, error) {
				users := []string{args[0]}
				if args[0] == directory.Public {
					users = slices.Sorted(maps.Keys(c.Users))
					if len(users) == 0 {
						return false, fmt.Errorf("there are no users yet (pchronicle serve catalog issue NAME)")
					}
				} else if _, ok := c.Users[args[0]]; !ok {
					return false, fmt.Errorf("no user %q in %s", args[0], *path)
				}
				for _, ds := range args[1:] {
					if _, ok := c.Datasets[ds]; !ok {
						return false, fmt.Errorf("no dataset %q in %s", ds, *path)
					}
				}
				var changed bool
				if isGrant {
					changed, notes = addGrants(c, users, args[1:])
				} else {
					changed, notes = removeGrants(c, users, args[1:])
				}
				return changed, nil
			})
			if err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintln(e.stderr, n)
			}
			return nil
		},
	}
}

func addGrants(c *directory.Config, users, datasets []string) (changed bool, notes []string) {
	has := grantIndex(c)
	for _, u := range users {
		for _, ds := range datasets {
			switch {
			case has[[2]string{directory.Public, ds}]:
				notes = append(notes, fmt.Sprintf("%s already sees %s: it is public (user = \"*\")", u, ds))
			case has[[2]string{u, ds}]:
				notes = append(notes, fmt.Sprintf("%s already had %s", u, ds))
			default:
				c.Grants = append(c.Grants, directory.Grant{User: u, Dataset: ds})
				has[[2]string{u, ds}] = true
				changed = true
				notes = append(notes, fmt.Sprintf("granted %s to %s", ds, u))
			}
		}
	}
	return changed, notes
}

func removeGrants(c *directory.Config, users, datasets []string) (changed bool, notes []string) {
	drop := map[[2]string]bool{}
	for _, u := range users {
		for _, ds := range datasets {
			drop[[2]string{u, ds}] = true
		}
	}
	has := grantIndex(c)
	kept := c.Grants[:0]
	for _, g := range c.Grants {
		if drop[[2]string{g.User, g.Dataset}] {
			changed = true
			notes = append(notes, fmt.Sprintf("revoked %s from %s", g.Dataset, g.User))
			continue
		}
		kept = append(kept, g)
	}
	c.Grants = kept
	for _, u := range users {
		for _, ds := range datasets {
			if !has[[2]string{u, ds}] {
				notes = append(notes, fmt.Sprintf("%s had no grant of %s", u, ds))
			}
			if has[[2]string{directory.Public, ds}] {
				notes = append(notes, fmt.Sprintf("%s still sees %s: it is public (user = \"*\"; edit the file to change that)", u, ds))
			}
		}
	}
	return changed, notes
}

// grantIndex is the set of (user, dataset) pairs written in [[grants]].
func grantIndex(c *directory.Config) map[[2]string]bool {
	has := map[[2]string]bool{}
	for _, g := range c.Grants {
		has[[2]string{g.User, g.Dataset}] = true
	}
	return has
}
