package engine

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

func TestZZExp(t *testing.T) {
	ctx := context.Background()
	snap, _ := catalog.Build(ctx, []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: "/tmp/pchronicle-bench-catalog/ds-2000"}}, catalog.DefaultOptions())
	defer snap.Close()
	e := New(snap, parser, true)
	defer e.Close()
	wide := `SELECT source, count(*) AS n, count(DISTINCT session_id) AS sessions, sum(length(message_value)) AS chars FROM steps GROUP BY source ORDER BY source`
	e.Query(ctx, wide)
	var files []string
	filepath.WalkDir(snap.TempDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "steps.parquet" {
			files = append(files, "'"+p+"'")
		}
		return err
	})
	direct := strings.Replace(wide, "FROM steps", "FROM read_parquet(["+strings.Join(files, ",")+"])", 1)
	view := scans("steps", nil)
	_ = view
	viewBody := "SELECT * FROM read_parquet([" + strings.Join(files, ",") + "])"
	an, _ := e.analyze(ctx, wide)
	p := e.plan(an)
	e.resolve(ctx, p)
	ourBody := e.views(p)[relKey{"dataset", "steps"}]
	variants := []struct {
		name  string
		setup []string
		q     string
	}{
		{"direct", nil, direct},
		{"direct+settings", append(snap.Options.InstanceSettings("/tmp/zzspill/x"), catalog.AccessSettings("/tmp/zzspill/x", e.readable)...), direct},
		{"view*", []string{"CREATE VIEW steps AS " + viewBody}, wide},
		{"ourview", []string{"CREATE VIEW steps AS " + ourBody}, wide},
		{"ourview+settings+lock", append(append(snap.Options.InstanceSettings("/tmp/zzspill/x"), catalog.AccessSettings("/tmp/zzspill/x", e.readable)...), "CREATE VIEW steps AS "+ourBody, "SET lock_configuration=true"), wide},
	}
	res := map[string][]time.Duration{}
	for r := 0; r < 21; r++ {
		for _, v := range variants {
			db, _ := sql.Open("duckdb", "")
			c, _ := db.Conn(ctx)
			for _, s := range v.setup {
				if _, err := c.ExecContext(ctx, s); err != nil {
					t.Fatal(s, err)
				}
			}
			time.Sleep(20 * time.Millisecond)
			s := time.Now()
			rows, err := c.QueryContext(ctx, v.q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
			res[v.name] = append(res[v.name], time.Since(s))
			c.Close()
			db.Close()
		}
	}
	for _, v := range variants {
		ds := res[v.name]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Println(v.name, "median", ds[len(ds)/2], "min", ds[0])
	}
}
