package remote_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/remote"
)

// TestStageRefusesAPrefixOfOtherObjects: a prefix that is not a store but
// holds the user's objects is refused before anything is written; one
// holding only what an interrupted first publication left (gen-*/) is not.
func TestStageRefusesAPrefixOfOtherObjects(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for _, rel := range []string{"runs/a.json", "runs/b/c.json", "runs/d.json", "runs/e.json", "fresh/gen-000003/runs.parquet", "runs.json"} {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := objstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.StageStoryline(ctx, b, "runs", t.TempDir(), false)
	if err == nil || !strings.Contains(err.Error(), "runs/ is not empty and not a Storyline store (it holds a.json, b/c.json, d.json, …)") {
		t.Fatalf("staging over a prefix of files: %v", err)
	}
	for _, prefix := range []string{"fresh", "new"} {
		if _, err := remote.StageStoryline(ctx, b, prefix, t.TempDir(), false); err != nil {
			t.Errorf("%s: %v", prefix, err)
		}
	}
}
