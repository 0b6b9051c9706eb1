package iceberg

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/objstore"
)

func openSet(t *testing.T, dir string) *Set {
	t.Helper()
	set, err := Open(context.Background(), Target{Catalog: filepath.Join(dir, "catalog.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

func TestEnsureCreatesTheFixedTables(t *testing.T) {
	ctx := context.Background()
	set := openSet(t, t.TempDir())
	for range 2 { // the second finds them
		if err := set.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range Relations {
		tbl, err := set.Table(ctx, rel)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(tbl.Schema().Fields()), len(model.Schemas[rel]); got != want {
			t.Errorf("%s: %d columns, want %d", rel, got, want)
		}
		if v := tbl.Metadata().Version(); v != 2 {
			t.Errorf("%s: format version %d, want 2", rel, v)
		}
		spec := tbl.Spec()
		var fields []string
		for _, f := range spec.Fields() {
			fields = append(fields, fmt.Sprintf("%s:%s", f.Name, f.Transform))
		}
		if !strings.Contains(strings.Join(fields, ","), "session_bucket:bucket[16]") {
			t.Errorf("%s: partition fields %v lack bucket(16, session_id)", rel, fields)
		}
	}
}

// A table of another shape under the same name is refused, never written.
func TestEnsureRefusesAForeignTable(t *testing.T) {
	ctx := context.Background()
	set := openSet(t, t.TempDir())
	if err := set.cat.CreateNamespace(ctx, set.ns, nil); err != nil {
		t.Fatal(err)
	}
	other := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := set.cat.CreateTable(ctx, set.ident(model.RelRuns), other); err != nil {
		t.Fatal(err)
	}
	err := set.Ensure(ctx)
	if err == nil || !strings.Contains(err.Error(), "columns") {
		t.Fatalf("Ensure over a foreign runs table: %v", err)
	}
}

func TestRESTCatalogURIsCarryNoSecrets(t *testing.T) {
	for _, uri := range []string{"https://user:pw@cat.example/api", "https://cat.example/api?token=x"} {
		if _, err := Open(context.Background(), Target{Catalog: uri}); err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("Open(%q): %v", "redacted", err)
		}
	}
}

func TestIOPropertiesFollowThePin(t *testing.T) {
	p := ioProperties(objstore.Config{Endpoint: "http://127.0.0.1:7070", PathStyle: true, AccessKey: "ak", SecretKey: "sk"})
	want := iceberg.Properties{"s3.endpoint": "http://127.0.0.1:7070", "s3.region": "us-east-1",
		"s3.force-virtual-addressing": "false", "s3.access-key-id": "ak", "s3.secret-access-key": "sk"}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", p, want)
	}
	if p := ioProperties(objstore.Config{}); len(p) != 0 { // the SDK's default chain
		t.Errorf("no settings gave %v", p)
	}
}

func TestConflictsAreRetriedOthersAreNot(t *testing.T) {
	for err, want := range map[error]bool{
		fmt.Errorf("wrapped: %w", table.ErrCommitFailed):                                    true,
		errors.New(`requirement failed: branch "main" has changed: expected id 1, found 2`): true,
		catalog.ErrNoSuchTable:  false,
		errors.New("disk full"): false,
	} {
		if got := conflict(err); got != want {
			t.Errorf("conflict(%v) = %v", err, got)
		}
	}
}
