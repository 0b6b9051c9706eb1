package engine

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/uncompressed"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
)

// open returns an instance sandboxed for one query: it can read only the
// Snapshot's pinned data (and spill), its relations are views over exactly
// the query's resolved sources, and its configuration is locked. This is
// the second wall behind SQL validation.
func (e *Engine) open(ctx context.Context, p *plan, limits Limits) (*instance, error) {
	inst, err := e.fresh(ctx, p.views, limits)
	if err != nil {
		return nil, err
	}
	if err := e.point(ctx, inst, p); err != nil {
		e.release(inst, false)
		return nil, err
	}
	return inst, nil
}

// point finishes an instance's set-up for a plan: the schemas it has not
// made yet, then every view that differs and the metadata tables the query
// reads.
func (e *Engine) point(ctx context.Context, inst *instance, p *plan) error {
	if err := inst.finish(ctx); err != nil {
		return err
	}
	var setup []string
	views := p.views
	for _, k := range sortedRelKeys(views) {
		if inst.views[k] != views[k] {
			setup = append(setup, viewDDL(k, views[k])...)
			inst.views[k] = views[k]
		}
	}
	var files []string
	defer func() {
		for _, f := range files {
			os.Remove(f)
		}
	}()
	for _, d := range e.snap.Datasets {
		stmts, written, err := e.metadataDDL(d, p)
		files = append(files, written...)
		if err != nil {
			return err
		}
		setup = append(setup, stmts...)
	}
	return inst.exec(ctx, setup) // the tables hold the rows then: the files can go
}

// schemaDDL creates one Dataset's schema with its six relations and their
// fixed schemas: sources and projections as empty tables, the row relations
// as views with the given bodies.
func schemaDDL(alias string, views map[relKey]string) []string {
	schema := Ident(alias)
	stmts := []string{"CREATE SCHEMA " + schema, tableDDL(schema, model.RelSources), tableDDL(schema, model.RelProjections)}
	for _, rel := range rowRelations {
		k := relKey{alias, rel}
		stmts = append(stmts, viewDDL(k, views[k])...)
	}
	return stmts
}

// viewDDL makes a row relation a view over a table macro that holds its
// body. Any query can read a view's definition in
// information_schema.views, and the body names files in the Snapshot's
// temp directory, which no answer may show (docs/storage.md, "What can
// leak"); a macro's definition is listed nowhere a query may read, and no
// query can call it (the analyzer allows no table function).
func viewDDL(k relKey, body string) []string {
	scan := Ident(k.dataset) + "." + Ident(k.relation+" scan")
	return []string{
		fmt.Sprintf("CREATE OR REPLACE MACRO %s() AS TABLE %s", scan, body),
		fmt.Sprintf("CREATE OR REPLACE VIEW %s.%s AS SELECT * FROM %s()", Ident(k.dataset), Ident(k.relation), scan),
	}
}

// views returns the body of every row relation's view for a query: a scan
// of exactly the resolved sources (one: a plain scan; more: UNION ALL), or
// an empty typed scan.
func (e *Engine) views(p *plan) map[relKey]string {
	out := map[relKey]string{}
	for _, d := range e.snap.Datasets {
		for _, rel := range rowRelations {
			k := relKey{d.Mount.Alias, rel}
			out[k] = emptyScan(rel)
			if scans := scans(rel, p.rels[k]); len(scans) > 0 {
				out[k] = strings.Join(scans, "\nUNION ALL\n")
			}
		}
	}
	return out
}

// metadataDDL fills a Dataset's sources and projections tables when the
// query references them, so a Dataset of 10,000 sources costs nothing to a
// query that does not ask. The rows go to the instance through Parquet files
// in the Snapshot's temp directory (returned, for removal once the
// statements ran): as INSERT statements, 50,000 sources were 16 MB of SQL
// that took the worker seconds to parse.
func (e *Engine) metadataDDL(d *catalog.Dataset, p *plan) (stmts, files []string, err error) {
	schema := Ident(d.Mount.Alias)
	// A reused instance may hold an earlier query's rows, and sources.format
	// fills in as files are read: the tables are refilled for each query.
	if p.meta[relKey{d.Mount.Alias, model.RelSources}] {
		stmts, files, err = fillTable(stmts, files, e.snap.TempDir, schema, model.RelSources, d.SourceRows())
		if err != nil {
			return stmts, files, err
		}
	}
	if p.meta[relKey{d.Mount.Alias, model.RelProjections}] {
		stmts, files, err = fillTable(stmts, files, e.snap.TempDir, schema, model.RelProjections, d.ProjectionRows())
	}
	return stmts, files, err
}

// fillTable appends the statements that replace a metadata table's rows
// with rows, written to a new Parquet file in dir (appended to files).
func fillTable[T any](stmts, files []string, dir, schema, rel string, rows []T) ([]string, []string, error) {
	table := schema + "." + Ident(rel)
	stmts = append(stmts, "DELETE FROM "+table)
	if len(rows) == 0 {
		return stmts, files, nil
	}
	f, err := os.CreateTemp(dir, rel+"-*.parquet")
	if err != nil {
		return stmts, files, fmt.Errorf("writing the %s table: %w", rel, err)
	}
	files = append(files, f.Name())
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&uncompressed.Codec{}))
	_, err = w.Write(rows)
	if err == nil {
		err = w.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return stmts, files, fmt.Errorf("writing the %s table: %w", rel, err)
	}
	return append(stmts, fmt.Sprintf("INSERT INTO %s BY NAME SELECT * FROM read_parquet(%s)", table, sqlString(f.Name()))), files, nil
}

// scans returns the scans that make up one relation's view. Normalized file
// sources already carry their own _file_ in every row, so one read_parquet
// reads all of them; each store source gets its own scan with its constant
// _file_ (a store's rows may carry import provenance there, but the
// Dataset identity is the store's path). One hit is thus always a plain
// scan.
//
// Normalized files may be shared by many sources (Snapshot.ResolveFiles),
// and a set shared with sources the query does not read, or whose rows a
// later generation took from elsewhere, must be filtered to the hits it
// was resolved for: each such set gets its own filtered scan.
func scans(rel string, rp *relPlan) []string {
	if rp == nil {
		return nil
	}
	type fileSet struct {
		files  []string
		owners []string // nil: the set holds only its one source's rows
		hits   []string
	}
	var sets []*fileSet
	byFirst := map[string]*fileSet{}
	var stores []string
	for i, src := range rp.sources {
		res := rp.resolved[i]
		files := res.Files[rel]
		switch {
		case len(files) == 0:
		case src.Kind == catalog.KindFile:
			fs := byFirst[files[0]]
			if fs == nil {
				fs = &fileSet{files: files, owners: res.Owners}
				byFirst[files[0]] = fs
				sets = append(sets, fs)
			}
			fs.hits = append(fs.hits, src.File)
		default:
			stores = append(stores, scan(rel, src.File, files, res))
		}
	}
	var whole []string // files of sets the query reads entirely
	var out []string
	for _, fs := range sets {
		if covers(fs.hits, fs.owners) {
			whole = append(whole, fs.files...)
			continue
		}
		out = append(out, scan(rel, "", fs.files, nil)+" WHERE "+fileFilter(fs.hits, fs.owners))
	}
	if len(whole) > 0 {
		out = append([]string{scan(rel, "", whole, nil)}, out...) // normalized by this build
	}
	return append(out, stores...)
}

// fileFilter keeps the hits' rows of a shared file set: `_file_ IN (hits)`,
// or, when most owners are hits (a refresh carried the set over and a few
// of its sources changed), the shorter `_file_ NOT IN (the others)`.
func fileFilter(hits, owners []string) string {
	in := make(map[string]bool, len(hits))
	for _, h := range hits {
		in[h] = true
	}
	var others []string
	for _, o := range owners {
		if !in[o] {
			others = append(others, o)
		}
	}
	if len(others) < len(hits) {
		sort.Strings(others)
		return "_file_ NOT IN (" + quoteList(others) + ")"
	}
	sorted := append([]string(nil), hits...)
	sort.Strings(sorted)
	return "_file_ IN (" + quoteList(sorted) + ")"
}

// covers reports whether the hits include every owner of a shared file
// set, so its scan needs no _file_ filter.
func covers(hits, owners []string) bool {
	if len(owners) == 0 {
		return true
	}
	set := make(map[string]bool, len(hits))
	for _, h := range hits {
		set[h] = true
	}
	for _, o := range owners {
		if !set[o] {
			return false
		}
	}
	return true
}

// scan reads Parquet files for a relation; a non-empty file replaces the
// stored _file_ with that constant. res says which columns the files lack
// (written at an older schema version; nil: none).
func scan(rel, file string, files []string, res *catalog.Resolved) string {
	cols := model.Schemas[rel]
	sel := make([]string, len(cols))
	for i, c := range cols {
		if c.Name == "_file_" && file != "" {
			sel[i] = quote(file) + "::VARCHAR AS _file_"
		} else {
			sel[i] = column(res, c)
		}
	}
	return fmt.Sprintf("SELECT %s FROM read_parquet([%s])", strings.Join(sel, ", "), quoteList(files))
}

// column is the select-list item of c in a scan of res's files: the column
// itself, or a typed NULL when the files predate it.
func column(res *catalog.Resolved, c model.Column) string {
	if res.Lacks(c) {
		return "CAST(NULL AS " + c.SQLType + ") AS " + Ident(c.Name)
	}
	return Ident(c.Name)
}

func emptyScan(rel string) string {
	cols := model.Schemas[rel]
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", c.SQLType, Ident(c.Name))
	}
	return "SELECT " + strings.Join(sel, ", ") + " WHERE false"
}

// tableDDL creates an empty metadata table with its fixed schema.
func tableDDL(schema, rel string) string {
	cols := model.Schemas[rel]
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = Ident(c.Name) + " " + c.SQLType
	}
	return fmt.Sprintf("CREATE TABLE %s.%s (%s)", schema, Ident(rel), strings.Join(defs, ", "))
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
