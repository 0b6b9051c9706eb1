package catalog

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pchronicle/pchronicle/internal/icebergcmd"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// KindIceberg is an Apache Iceberg table set (a catalog and a namespace)
// mounted as a Dataset: iceberg:PATH.db[#NAMESPACE] (docs/scale-out.md).
const KindIceberg SourceKind = "iceberg"

// IcebergRevision pins an Iceberg table set to one snapshot of each table
// and that snapshot's data files, which the query reads in place.
type IcebergRevision struct {
	Tables map[string]icebergcmd.TableFiles
	dir    string // the directory holding every table (readable by queries)
}

func (r IcebergRevision) RevisionKind() string { return "iceberg_snapshots" }

// Ref is runs=<snapshot id>;steps=…;tool_calls=…: a commit to any table
// gives another Ref, hence another Snapshot.
func (r IcebergRevision) Ref() string {
	parts := make([]string, 0, len(storyline.Tables))
	for _, rel := range storyline.Tables {
		parts = append(parts, fmt.Sprintf("%s=%d", rel, r.Tables[rel].Snapshot))
	}
	return strings.Join(parts, ";")
}

func (r IcebergRevision) storylines(context.Context, *Source, []string) (*Resolved, error) {
	files := map[string][]string{}
	for _, rel := range storyline.Tables {
		files[rel] = r.Tables[rel].Files
	}
	return &Resolved{Files: files, Dirs: []string{r.dir}, SchemaVersion: model.SchemaVersion}, nil
}

func (r IcebergRevision) storeDir() string { return r.dir }

// discoverIceberg pins the Iceberg table set named by ref (a SQLite
// catalog path, then #namespace) through the helper: the Dataset is one
// store source "." whose revision is the tables' current snapshots.
func discoverIceberg(ctx context.Context, ref string) (root string, found []*DiscoveredSource, err error) {
	cat, ns, _ := strings.Cut(ref, "#")
	if ns == "" {
		ns = icebergcmd.DefaultNamespace
	}
	if !strings.HasPrefix(cat, "http://") && !strings.HasPrefix(cat, "https://") {
		if cat, err = filepath.Abs(cat); err != nil {
			return "", nil, err
		}
	}
	resp, err := icebergcmd.Call(ctx, icebergcmd.Request{Op: icebergcmd.OpFiles,
		Target: icebergcmd.Target{Catalog: cat, Namespace: ns}})
	if err != nil {
		return "", nil, err
	}
	rev := IcebergRevision{Tables: resp.Tables}
	var locs []string
	for _, rel := range storyline.Tables {
		t, ok := resp.Tables[rel]
		if !ok {
			return "", nil, fmt.Errorf("iceberg: %s.%s is missing", ns, rel)
		}
		locs = append(locs, t.Location)
	}
	rev.dir = commonDir(locs)
	src := &DiscoveredSource{File: ".", Path: cat, Kind: KindIceberg, Revision: rev}
	for _, t := range resp.Tables {
		src.Size += t.Bytes
	}
	return cat, []*DiscoveredSource{src}, nil
}

// commonDir is the deepest directory holding all of dirs.
func commonDir(dirs []string) string {
	common := filepath.Clean(dirs[0])
	for _, d := range dirs[1:] {
		d = filepath.Clean(d)
		for common != "/" && common != "." && d != common && !strings.HasPrefix(d, common+string(filepath.Separator)) {
			common = filepath.Dir(common)
		}
	}
	return common
}
