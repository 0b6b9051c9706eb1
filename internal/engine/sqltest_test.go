package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// SQL test files (testdata/sql/*.sqltest) check results, not just analysis:
// each file mounts fixture Datasets built here through the Go API and runs
// its records, in order, on one engine. The format (docs/testing.md):
//
//	# comment
//	dataset FIXTURE             the positional form (schema "dataset")
//	mount NAME FIXTURE          or one or more named mounts
//	option NAME VALUE           a catalog option (memory_limit, errors, ...)
//
//	query                       a record: the SQL up to "----", then the
//	SQL ...                     expected rows, one per line, cells separated
//	----                        by a tab (NULL for NULL, (empty) for ''),
//	a.jsonl	2                   in the order the query returns them
//	---- resolved               optional: per referenced relation, exactly
//	dataset.runs a.jsonl        the sources the query resolved
//
//	query error SUBSTRING       a record whose SQL must fail with an error
//	SQL ...                     containing SUBSTRING (and at most 4 KiB long)
//
// A blank line ends a record. A regression file is named after what broke.
//
// Every file runs on an engine with a shared parser (a server's) and on one
// that parses each query on its own instance (a one-shot command's): the
// two must accept, reject and answer alike.
func TestSQLFiles(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "sql", "*.sqltest"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no SQL test files: %v", err)
	}
	for _, path := range paths {
		for _, p := range []struct {
			name   string
			parser *query.Parser
		}{{"shared-parser", parser}, {"parse-on-instance", nil}} {
			t.Run(strings.TrimSuffix(filepath.Base(path), ".sqltest")+"/"+p.name, func(t *testing.T) {
				f := parseSQLFile(t, path)
				e := f.engine(t, p.parser)
				for _, r := range f.records {
					r.run(t, e)
				}
			})
		}
	}
}

// maxErrorBytes bounds every expected error: users read them on a terminal.
const maxErrorBytes = 4096

// sqlFixtures build the Datasets test files mount, by name.
var sqlFixtures = map[string]func(t *testing.T) string{
	// chats: three OpenAI chat JSONL files whose Storylines have the same
	// positional session ids in every file, so a join that ignores _file_
	// pairs rows of different sources.
	// broken-files: 150 chat files whose second line is cut off and then
	// ended (damaged, not still being written: see docs/formats.md, "Files
	// being written"), and one good chat. Each broken one fails the query;
	// the error must stay short.
	"broken-files": func(t *testing.T) string {
		files := map[string]string{"ok.jsonl": chatLine("ok", 1)}
		for i := range 150 {
			files[fmt.Sprintf("e%03d.jsonl", i)] = chatLine("x", 1) + `{"messages":[{"role":"user","content":"cut` + "\n"
		}
		root := t.TempDir()
		testutil.WriteFiles(t, root, files)
		return root
	},
	"chats": func(t *testing.T) string {
		root := t.TempDir()
		testutil.WriteFiles(t, root, map[string]string{
			"a.jsonl":     chatLine("a1", 0) + chatLine("a2", 2),
			"b.jsonl":     chatLine("b1", 1) + chatLine("b2", 3),
			"sub/c.jsonl": chatLine("c1", 1),
		})
		return root
	},
}

type sqlFile struct {
	path       string
	positional string // fixture of the positional Dataset
	mounts     [][2]string
	options    [][2]string
	records    []sqlRecord
}

type sqlRecord struct {
	where    string // file:line, for failures
	sql      string
	err      string   // expected error substring; "" for a result
	rows     []string // expected rows, cells tab-separated
	resolved []string // expected "dataset.relation file..." lines; nil: not checked
}

func parseSQLFile(t *testing.T, path string) *sqlFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &sqlFile{path: path}
	var cur *sqlRecord
	section := "" // sql, rows or resolved inside a record
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		where := fmt.Sprintf("%s:%d", path, n)
		if cur != nil {
			switch {
			case line == "":
				f.records = append(f.records, *cur)
				cur = nil
			case line == "----" && section == "sql" && cur.err == "":
				section = "rows"
			case line == "---- resolved" && section == "rows":
				section, cur.resolved = "resolved", []string{}
			case section == "sql":
				cur.sql += line + "\n"
			case section == "rows":
				cur.rows = append(cur.rows, line)
			default:
				cur.resolved = append(cur.resolved, line)
			}
			continue
		}
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0 || strings.HasPrefix(line, "#"):
		case fields[0] == "dataset" && len(fields) == 2:
			f.positional = fields[1]
		case fields[0] == "mount" && len(fields) == 3:
			f.mounts = append(f.mounts, [2]string{fields[1], fields[2]})
		case fields[0] == "option" && len(fields) == 3:
			f.options = append(f.options, [2]string{fields[1], fields[2]})
		case line == "query":
			cur, section = &sqlRecord{where: where}, "sql"
		case strings.HasPrefix(line, "query error "):
			cur, section = &sqlRecord{where: where, err: strings.TrimPrefix(line, "query error ")}, "sql"
		default:
			t.Fatalf("%s: unexpected line %q", where, line)
		}
	}
	if cur != nil {
		f.records = append(f.records, *cur)
	}
	return f
}

// engine builds the file's Snapshot and an engine over it.
func (f *sqlFile) engine(t *testing.T, parser *query.Parser) *Engine {
	t.Helper()
	opts := catalog.DefaultOptions()
	for _, o := range f.options {
		if err := opts.Set(o[0], o[1]); err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
	}
	var mounts []catalog.DatasetMount
	fixture := func(name string) string {
		build, ok := sqlFixtures[name]
		if !ok {
			t.Fatalf("%s: unknown fixture %q", f.path, name)
		}
		return build(t)
	}
	if f.positional != "" {
		mounts = append(mounts, catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: fixture(f.positional)})
	}
	for _, m := range f.mounts {
		mounts = append(mounts, catalog.DatasetMount{Alias: m[0], URI: fixture(m[1])})
	}
	snap, err := catalog.Build(context.Background(), mounts, opts)
	if err != nil {
		t.Fatalf("%s: %v", f.path, err)
	}
	e := New(snap, parser, Config{Positional: f.positional != "", Limits: LimitsFrom(opts)})
	t.Cleanup(func() { e.Close(); snap.Close() })
	return e
}

func (r sqlRecord) run(t *testing.T, e *Engine) {
	t.Helper()
	res, err := e.Query(context.Background(), r.sql, QueryOptions{})
	if r.err != "" {
		if err == nil || !strings.Contains(err.Error(), r.err) {
			t.Errorf("%s: %s\ngot error %v, want one containing %q", r.where, r.sql, err, r.err)
		} else if len(err.Error()) > maxErrorBytes {
			t.Errorf("%s: %s\nthe error is %d bytes, more than %d", r.where, r.sql, len(err.Error()), maxErrorBytes)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %s\n%v", r.where, r.sql, err)
		return
	}
	if got := resultLines(res); strings.Join(got, "\n") != strings.Join(r.rows, "\n") {
		t.Errorf("%s: %s\ngot rows:\n%s\nwant:\n%s", r.where, r.sql, strings.Join(got, "\n"), strings.Join(r.rows, "\n"))
	}
	if r.resolved != nil {
		var got []string
		for _, p := range res.Pruning {
			got = append(got, strings.TrimSpace(p.Dataset+"."+p.Relation+" "+strings.Join(p.Resolved, " ")))
		}
		if strings.Join(got, "\n") != strings.Join(r.resolved, "\n") {
			t.Errorf("%s: %s\nresolved:\n%s\nwant:\n%s", r.where, r.sql, strings.Join(got, "\n"), strings.Join(r.resolved, "\n"))
		}
	}
}

// resultLines renders rows as the test files write them.
func resultLines(res *Result) []string {
	lines := make([]string, len(res.Rows))
	for i, row := range res.Rows {
		cells := make([]string, len(row))
		for j, v := range row {
			switch {
			case v == nil:
				cells[j] = "NULL"
			case v == "":
				cells[j] = "(empty)"
			default:
				cells[j] = fmt.Sprint(v)
			}
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return lines
}
