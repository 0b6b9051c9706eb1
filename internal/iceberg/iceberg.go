// Package iceberg publishes the relations of an import as Apache Iceberg v2
// tables (runs, steps, tool_calls, events) that Trino, Spark, DuckDB and
// this program read, through a SQL catalog on a local SQLite file or a REST
// catalog, with the warehouse on a local path or s3://.
//
// Commits are per input: every snapshot records, in its summary, the
// identity (size and modification time) of each input whose rows it wrote,
// under "pchronicle.input.<_file_>". An input whose identity the table
// already records is skipped, so re-importing the same inputs commits
// nothing; a changed input's rows are replaced by a copy-on-write overwrite
// filtered on its _file_ (no delete files). Concurrent writers commit
// optimistically: a commit that lost the race reloads the table, plans
// again and retries, a bounded number of times. docs/scale-out.md
// documents the layout and why.
package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// warehouses
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // the embedded SQL catalog, without cgo

	"github.com/pchronicle/pchronicle/internal/icebergcmd"
	"github.com/pchronicle/pchronicle/internal/objstore"
)

// The types shared with pchronicle, which does not link this package
// (internal/icebergcmd).
type (
	Target = icebergcmd.Target
	Input  = icebergcmd.Input
	Commit = icebergcmd.Commit
)

// DefaultNamespace holds the tables when no namespace is given.
const DefaultNamespace = icebergcmd.DefaultNamespace

// InputPrefix starts the snapshot summary keys recording input identities.
const InputPrefix = "pchronicle.input."

// maxCommitAttempts bounds the optimistic commit loop of one table.
const maxCommitAttempts = 20

// ErrConflict is returned when a commit still conflicts after
// maxCommitAttempts attempts.
var ErrConflict = errors.New("iceberg: commit kept conflicting with concurrent writers")

// isREST reports whether a catalog reference is a REST endpoint.
func isREST(ref string) bool {
	return strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://")
}

// Set is an opened table set: a catalog and a namespace.
type Set struct {
	cat   catalog.Catalog
	ns    table.Identifier
	close func() error
}

// Open connects to the target's catalog. It creates nothing; Ensure does.
func Open(ctx context.Context, t Target) (*Set, error) {
	if t.Catalog == "" {
		return nil, errors.New("iceberg: no catalog given (iceberg:PATH.db or iceberg:https://...)")
	}
	ns := t.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	props := ioProperties(t.Store)
	s := &Set{ns: strings.Split(ns, ".")}
	if isREST(t.Catalog) {
		u, err := url.Parse(t.Catalog)
		if err != nil || u.User != nil || u.RawQuery != "" {
			// Not echoed: the rejected URI may hold the very secret.
			return nil, errors.New("iceberg: a REST catalog is http(s)://host/path, without user info or query; give a token in $PCHRONICLE_ICEBERG_TOKEN")
		}
		opts := []rest.Option{rest.WithAdditionalProps(props)}
		if t.Warehouse != "" {
			opts = append(opts, rest.WithWarehouseLocation(t.Warehouse))
		}
		if t.Token != "" {
			opts = append(opts, rest.WithOAuthToken(t.Token))
		}
		cat, err := rest.NewCatalog(ctx, "rest", t.Catalog, opts...)
		if err != nil {
			return nil, fmt.Errorf("iceberg: REST catalog %s: %w", t.Catalog, err)
		}
		s.cat, s.close = cat, func() error { return nil }
		return s, nil
	}
	path, err := filepath.Abs(t.Catalog)
	if err != nil {
		return nil, err
	}
	wh := t.Warehouse
	if wh == "" {
		wh = filepath.Join(filepath.Dir(path), "warehouse")
	}
	if !objstore.IsRemote(wh) {
		if wh, err = filepath.Abs(wh); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(wh, 0o755); err != nil {
			return nil, fmt.Errorf("iceberg: warehouse: %w", err)
		}
		wh = "file://" + filepath.ToSlash(wh)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("iceberg: catalog: %w", err)
	}
	// Several processes (the shards of one import) share the file: WAL lets
	// readers run beside the one writer, and the busy timeout makes a writer
	// wait for another's short transaction instead of failing. Transactions
	// begin IMMEDIATE: one that began as a reader and then writes could
	// not wait for the lock (SQLite answers SQLITE_BUSY at once, as waiting
	// could deadlock).
	dsn := "file:" + path + "?_pragma=busy_timeout(60000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("iceberg: catalog %s: %w", path, err)
	}
	// One connection: the catalog runs one statement at a time anyway, and
	// a second pooled connection could hold an older WAL read snapshot and
	// miss a table this process has just created.
	db.SetMaxOpenConns(1)
	props["warehouse"] = wh
	cat, err := sqlcat.NewCatalog("pchronicle", db, sqlcat.SQLite, props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("iceberg: catalog %s: %w", path, err)
	}
	s.cat = cat
	s.close = func() error { return errors.Join(cat.Close(), db.Close()) }
	return s, nil
}

// ioProperties maps a pin's S3 settings onto iceberg-go's file IO
// properties. Without an access key the SDK's default chain applies, as it
// does for pins.
func ioProperties(c objstore.Config) iceberg.Properties {
	p := iceberg.Properties{}
	if c.Endpoint != "" {
		p["s3.endpoint"] = c.Endpoint
	}
	if c.Region != "" {
		p["s3.region"] = c.Region
	} else if c.Endpoint != "" {
		p["s3.region"] = "us-east-1" // S3 needs one; custom endpoints ignore it
	}
	if c.PathStyle {
		p["s3.force-virtual-addressing"] = "false"
	}
	if c.AccessKey != "" {
		p["s3.access-key-id"] = c.AccessKey
		p["s3.secret-access-key"] = c.SecretKey.Reveal()
	}
	return p
}

// Close releases the catalog.
func (s *Set) Close() error { return s.close() }

// Namespace returns the set's namespace, dot-separated.
func (s *Set) Namespace() string { return strings.Join(s.ns, ".") }

func (s *Set) ident(rel string) table.Identifier { return append(slices.Clone(s.ns), rel) }

// Ensure creates the namespace and the four tables where missing, and
// checks that existing tables have the fixed schemas. Concurrent callers
// may race: a creation that lost is the same as finding the table.
func (s *Set) Ensure(ctx context.Context) error {
	if err := s.cat.CreateNamespace(ctx, s.ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("iceberg: namespace %s: %w", s.Namespace(), err)
	}
	for _, rel := range Relations {
		sc, err := Schema(rel)
		if err != nil {
			return err
		}
		tbl, err := s.cat.LoadTable(ctx, s.ident(rel))
		if errors.Is(err, catalog.ErrNoSuchTable) {
			var spec iceberg.PartitionSpec
			if spec, err = partitionSpec(rel, sc); err != nil {
				return err
			}
			tbl, err = s.cat.CreateTable(ctx, s.ident(rel), sc,
				catalog.WithPartitionSpec(&spec), catalog.WithProperties(tableProperties()))
			if errors.Is(err, catalog.ErrTableAlreadyExists) {
				tbl, err = s.cat.LoadTable(ctx, s.ident(rel))
			}
		}
		if err != nil {
			return fmt.Errorf("iceberg: table %s.%s: %w", s.Namespace(), rel, err)
		}
		if err := sameColumns(tbl, sc); err != nil {
			return fmt.Errorf("iceberg: %w", err)
		}
	}
	return nil
}

// Table loads the current version of one relation's table.
func (s *Set) Table(ctx context.Context, rel string) (*table.Table, error) {
	tbl, err := s.cat.LoadTable(ctx, s.ident(rel))
	if err != nil {
		return nil, fmt.Errorf("iceberg: table %s.%s: %w", s.Namespace(), rel, err)
	}
	return tbl, nil
}

// Recorded returns the input identities a table's current snapshot and its
// ancestors record, the newest for each _file_.
func Recorded(tbl *table.Table) map[string]string {
	ids := map[string]string{}
	for snap := tbl.CurrentSnapshot(); snap != nil; {
		if snap.Summary != nil {
			for k, v := range snap.Summary.Properties {
				if file, ok := strings.CutPrefix(k, InputPrefix); ok {
					if _, seen := ids[file]; !seen {
						ids[file] = v
					}
				}
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = tbl.SnapshotByID(*snap.ParentSnapshotID)
	}
	return ids
}

// storylineTables are the relations an import writes; events tables are
// created for the fixed set but written only by canonical events sources.
var storylineTables = Relations[:3]

// Pending returns the inputs that some table does not yet record at their
// identity: the ones an import must normalize.
func (s *Set) Pending(ctx context.Context, inputs []Input) ([]Input, error) {
	var pending []Input
	seen := map[string]bool{}
	for _, rel := range storylineTables {
		tbl, err := s.Table(ctx, rel)
		if err != nil {
			return nil, err
		}
		ids := Recorded(tbl)
		for _, in := range inputs {
			if ids[in.File] != in.Identity && !seen[in.File] {
				seen[in.File] = true
				pending = append(pending, in)
			}
		}
	}
	return pending, nil
}

// RowSource hands out a relation's rows of the inputs in keep (by _file_).
type RowSource func(rel string, keep map[string]bool) (array.RecordReader, error)

// Publish commits, table by table, the rows of every input the table does
// not record at its identity, replacing that input's earlier rows.
func (s *Set) Publish(ctx context.Context, inputs []Input, rows RowSource) ([]Commit, error) {
	var out []Commit
	for _, rel := range storylineTables {
		c, err := s.commit(ctx, rel, inputs, rows)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// commit is the optimistic commit loop of one table: each attempt loads the
// current table, leaves out the inputs it already records (another writer
// may have published them meanwhile), and overwrites the others' rows.
func (s *Set) commit(ctx context.Context, rel string, inputs []Input, rows RowSource) (Commit, error) {
	c := Commit{Relation: rel}
	for {
		c.Attempts++
		tbl, err := s.Table(ctx, rel)
		if err != nil {
			return c, err
		}
		ids := Recorded(tbl)
		props := iceberg.Properties{}
		keep := map[string]bool{}
		var files []string
		for _, in := range inputs {
			if ids[in.File] != in.Identity {
				props[InputPrefix+in.File] = in.Identity
				keep[in.File] = true
				files = append(files, in.File)
			}
		}
		if len(files) == 0 {
			return c, nil
		}
		c.Inputs = len(files)
		rdr, err := rows(rel, keep)
		if err != nil {
			return c, err
		}
		tx := tbl.NewTransaction()
		err = tx.Overwrite(ctx, rdr, props,
			table.WithOverwriteFilter(iceberg.IsIn(iceberg.Reference("_file_"), files...)))
		rdr.Release()
		var committed *table.Table
		if err == nil {
			committed, err = tx.Commit(ctx)
		}
		if err == nil {
			c.Snapshot = committed.CurrentSnapshot().SnapshotID
			return c, nil
		}
		if !conflict(err) {
			return c, fmt.Errorf("iceberg: commit to %s.%s: %w", s.Namespace(), rel, err)
		}
		if c.Attempts >= maxCommitAttempts {
			return c, fmt.Errorf("%w: %s.%s after %d attempts: %v", ErrConflict, s.Namespace(), rel, c.Attempts, err)
		}
		// Jittered exponential backoff, so shards that collided spread out.
		wait := time.Duration(min(50<<c.Attempts, 2000)) * time.Millisecond
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(wait/2 + rand.N(wait/2+1)):
		}
	}
}

// conflict reports whether a commit failed because another writer
// committed first: nothing was published and planning again may succeed.
// The REST catalog says so with ErrCommitFailed; the SQL catalog checks a
// commit's requirements against the current metadata and returns their
// failure unwrapped ("requirement failed: ...").
func conflict(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || strings.Contains(err.Error(), "requirement failed")
}

// Files returns, for each Storyline table, its current snapshot and that
// snapshot's data files, for a Dataset to pin and read (local warehouses
// only: the query engine reads the files in place). A table with delete
// files, which this package never writes, is refused rather than read
// wrong.
func (s *Set) Files(ctx context.Context) (map[string]icebergcmd.TableFiles, error) {
	out := map[string]icebergcmd.TableFiles{}
	for _, rel := range storylineTables {
		tbl, err := s.Table(ctx, rel)
		if err != nil {
			return nil, err
		}
		loc, ok := localPath(tbl.Location())
		if !ok || filepath.Dir(filepath.Clean(loc)) == filepath.Clean(loc) {
			return nil, fmt.Errorf("iceberg: table %s.%s is at %s: only tables in a local warehouse can be mounted", s.Namespace(), rel, tbl.Location())
		}
		tf := icebergcmd.TableFiles{Location: loc}
		if snap := tbl.CurrentSnapshot(); snap != nil {
			tf.Snapshot = snap.SnapshotID
			tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
			if err != nil {
				return nil, fmt.Errorf("iceberg: table %s.%s: %w", s.Namespace(), rel, err)
			}
			for _, task := range tasks {
				if len(task.DeleteFiles) > 0 {
					return nil, fmt.Errorf("iceberg: table %s.%s has delete files, which pchronicle does not apply", s.Namespace(), rel)
				}
				// Queries may read the table's directory and nothing else:
				// a data file elsewhere (a hostile or foreign catalog) is
				// refused, never added to what the sandbox allows.
				p, ok := localPath(task.File.FilePath())
				if !ok || !strings.HasPrefix(filepath.Clean(p), filepath.Clean(loc)+string(filepath.Separator)) {
					return nil, fmt.Errorf("iceberg: table %s.%s: data file %s is not inside the table's local directory %s", s.Namespace(), rel, task.File.FilePath(), loc)
				}
				tf.Files = append(tf.Files, p)
				tf.Bytes += task.File.FileSizeBytes()
			}
			slices.Sort(tf.Files)
		}
		out[rel] = tf
	}
	return out, nil
}

// localPath turns a file:// location (or a plain path) into a local path.
func localPath(loc string) (string, bool) {
	if p, ok := strings.CutPrefix(loc, "file://"); ok {
		return filepath.FromSlash(p), true
	}
	if strings.Contains(loc, "://") {
		return "", false
	}
	return loc, filepath.IsAbs(loc)
}
