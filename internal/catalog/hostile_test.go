package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

func queryRows(t *testing.T, snap *catalog.Snapshot, sql string) (string, error) {
	t.Helper()
	parser, err := query.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer parser.Close()
	eng := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)})
	defer eng.Close()
	res, err := eng.Query(context.Background(), sql, engine.QueryOptions{})
	if err != nil {
		return "", err
	}
	return fmt.Sprint(res.Rows), nil
}

// TestNonUTF8NamesAreEscaped: a file (or directory) name that is not valid
// UTF-8 gets an escaped, valid _file_ (docs/query-model.md, Identity), so
// queries reading _file_ work; DuckDB rejects invalid UTF-8 strings.
func TestNonUTF8NamesAreEscaped(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"a.jsonl":             chat("a"),
		"b\xff.jsonl":         chat("b"),
		"d\xfe\\/c.jsonl":     chat("c"), // a directory: invalid byte and a backslash
		"ok\\name/\xc3.jsonl": chat("d"), // a valid component keeps its backslash
	})
	snap := build(t, catalog.DatasetMount{Alias: "dataset", URI: root}, catalog.DefaultOptions())
	got, err := queryRows(t, snap, `SELECT _file_, session_id FROM runs ORDER BY _file_`)
	if err != nil {
		t.Fatal(err)
	}
	want := `[[a.jsonl s-a] [b\xff.jsonl s-b] [d\xfe\\/c.jsonl s-c] [ok\name/\xc3.jsonl s-d]]`
	if got != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}
	// The escaped name is what predicates and pruning see.
	if got, err := queryRows(t, snap, `SELECT session_id FROM runs WHERE _file_ = 'b\xff.jsonl'`); err != nil || got != "[[s-b]]" {
		t.Fatalf("point lookup by escaped _file_: %s %v", got, err)
	}
}

// TestNonUTF8KeysAreEscaped: object keys get the same _file_ as local names
// (the local backend lists such names; cloud stores require UTF-8 keys).
func TestNonUTF8KeysAreEscaped(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"ds/a.jsonl": "{}", "ds/b\xff/c.jsonl": "{}"})
	b, err := objstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	found, err := catalog.DiscoverRemote(context.Background(), b, "ds/", catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range found {
		got = append(got, d.File)
	}
	if fmt.Sprint(got) != `[a.jsonl b\xff/c.jsonl]` {
		t.Fatalf("files %q", got)
	}
}

// TestEscapedNameCollisionIsAnError: escaping must not give two sources one
// _file_; the escaped one is the bad candidate.
func TestEscapedNameCollisionIsAnError(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"x\xff.jsonl": chat("raw"), `x\xff.jsonl`: chat("literal")})
	if snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "d", URI: root}}, catalog.DefaultOptions()); err == nil {
		snap.Close()
		t.Fatal("strict build accepted two sources with one _file_")
	} else if !strings.Contains(err.Error(), "equals another source's _file_") {
		t.Fatalf("strict: %v", err)
	}
	opts := catalog.DefaultOptions()
	opts.Errors = catalog.ErrorsReport
	snap := build(t, catalog.DatasetMount{Alias: "dataset", URI: root}, opts)
	var status []string
	for _, s := range snap.Datasets[0].Sources {
		status = append(status, s.File+":"+s.Status())
	}
	if fmt.Sprint(status) != `[x\xff.jsonl:ready x\xff.jsonl:error]` {
		t.Fatalf("sources %v (the literal name is ready, the escaped one an error)", status)
	}
	if got, err := queryRows(t, snap, `SELECT session_id FROM runs`); err != nil || got != "[[s-literal]]" {
		t.Fatalf("rows %s %v", got, err)
	}
}

// TestStoreSymlinksAreNeverFollowed: a store whose generation directory or
// segments directory is a symbolic link to outside the Dataset is a bad
// candidate; its linked files are never read.
func TestStoreSymlinksAreNeverFollowed(t *testing.T) {
	for _, tc := range []struct{ name, store, link string }{
		{"storyline generation", "stores/live", "gen-"},
		{"events segments", "agents/run-1/events.lance", "segments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := mixedDataset(t), t.TempDir()
			dir := filepath.Join(root, filepath.FromSlash(tc.store))
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			moved := ""
			for _, e := range entries {
				if e.IsDir() && strings.HasPrefix(e.Name(), tc.link) {
					moved = e.Name()
				}
			}
			if moved == "" {
				t.Fatalf("no %s* in %s", tc.link, dir)
			}
			if err := os.Rename(filepath.Join(dir, moved), filepath.Join(outside, moved)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, moved), filepath.Join(dir, moved)); err != nil {
				t.Fatal(err)
			}
			_, err = catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "d", URI: root}}, catalog.DefaultOptions())
			if err == nil || !strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), tc.store) {
				t.Fatalf("strict build: %v", err)
			}
			opts := catalog.DefaultOptions()
			opts.Errors = catalog.ErrorsReport
			snap := build(t, catalog.DatasetMount{Alias: "dataset", URI: root}, opts)
			for _, s := range snap.Datasets[0].Sources {
				if (s.File == tc.store) != (s.Err != nil) {
					t.Errorf("%s: %v", s.File, s.Err)
				}
			}
			for _, d := range snap.ReadableDirs() {
				if strings.HasPrefix(d, filepath.Join(root, filepath.FromSlash(tc.store))) {
					t.Errorf("the sandbox may read %s", d)
				}
			}
		})
	}
}
