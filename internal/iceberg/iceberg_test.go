package iceberg

import (
	"context"
	"path/filepath"
	"testing"
)

func TestEnsureCreatesTheTables(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	set, err := Open(ctx, Target{Catalog: filepath.Join(dir, "catalog.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for range 2 { // the second finds them
		if err := set.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
