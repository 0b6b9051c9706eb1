package compact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/model"
)

func events(session string, n int) []model.Event {
	var out []model.Event
	for i := range n {
		out = append(out, model.Event{
			EventID: fmt.Sprintf("%s-%d", session, i), RunID: "r", SessionID: session, Seq: int64(i),
			TS: time.Date(2025, 1, 1, 0, 0, i, 0, time.UTC), Kind: canonical.KindRunStart, Payload: `{}`,
		})
	}
	return out
}

func TestLeafAppendAndRollUp(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if err := CreateBranch(root); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, dir := range []string{a, b} {
		if err := CreateLeaf(dir); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(root, "not-a-source"), 0o755)
	if err := Append(ctx, a, events("s1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := Append(ctx, a, events("s2", 1)); err != nil {
		t.Fatal(err)
	}
	if err := Append(ctx, b, events("s3", 1)); err != nil {
		t.Fatal(err)
	}
	files, err := Files(a)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v %v", files, err)
	}
	if n, err := RecordCount(root); err != nil || n != 3 {
		t.Fatalf("roll-up %d %v, want 3", n, err)
	}
	// The branch sidecar was never rewritten by leaf appends.
	if m, _ := ReadManifest(root); m.Kind != KindBranch {
		t.Fatalf("branch manifest changed: %+v", m)
	}
}

func TestAppendRejectsInvalidEvent(t *testing.T) {
	dir := t.TempDir()
	if err := CreateLeaf(dir); err != nil {
		t.Fatal(err)
	}
	evs := events("s", 3)
	evs[2].Payload = "not json"
	err := Append(context.Background(), dir, evs)
	if err == nil || !strings.Contains(err.Error(), "event 2") {
		t.Fatalf("err %v", err)
	}
	if m, _ := ReadManifest(dir); m.RecordCount != 0 || len(m.Files) != 0 {
		t.Fatalf("invalid append changed the manifest: %+v", m)
	}
}

// TestAppendCrash: a failure at any point leaves the manifest listing
// either the old parts or the new ones, and Files validates.
func TestAppendCrash(t *testing.T) {
	for _, point := range []fsx.FailPoint{fsx.FailCreate, fsx.FailWrite, fsx.FailSync, fsx.FailRename} {
		for _, target := range []string{"part-000001.jsonl", ManifestFile} {
			dir := t.TempDir()
			CreateLeaf(dir)
			if err := Append(context.Background(), dir, events("a", 2)); err != nil {
				t.Fatal(err)
			}
			restore := fsx.SetFailHook(func(path string, at fsx.FailPoint) error {
				if filepath.Base(path) == target && at == point {
					return errors.New("boom")
				}
				return nil
			})
			err := Append(context.Background(), dir, events("b", 3))
			restore()
			if err == nil {
				t.Fatalf("%s@%s: no error", target, point)
			}
			m, err := ReadManifest(dir)
			if err != nil || m.RecordCount != 2 {
				t.Fatalf("%s@%s: manifest %+v %v, want the old state", target, point, m, err)
			}
			if _, err := Files(dir); err != nil {
				t.Fatalf("%s@%s: %v", target, point, err)
			}
			// The next append succeeds and overwrites any unlisted part.
			if err := Append(context.Background(), dir, events("c", 1)); err != nil {
				t.Fatal(err)
			}
			if n, _ := RecordCount(dir); n != 3 {
				t.Fatalf("%s@%s: %d records after recovery", target, point, n)
			}
		}
	}
}

func TestBadManifests(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"unknown key", "kind = \"leaf\"\nformat = \"compact-jsonl/v1\"\ncolor = 1\n", `unknown key "color"`},
		{"bad kind", "kind = \"tree\"\n", `kind is "tree"`},
		{"bad format", "kind = \"leaf\"\nformat = \"parquet\"\n", `format is "parquet"`},
		{"count mismatch", "kind = \"leaf\"\nformat = \"compact-jsonl/v1\"\nrecord_count = 5\n", "record_count is 5 but the files hold 0"},
		{"branch with count", "kind = \"branch\"\nrecord_count = 5\n", "a branch has only kind"},
		{"escaping part", "kind = \"leaf\"\nformat = \"compact-jsonl/v1\"\nrecord_count = 1\n[[files]]\nname = \"../x\"\nrecords = 1\nbytes = 1\n", `invalid or repeated part file name "../x"`},
		{"not toml", "kind = \n", "chronicle.manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(tt.text), 0o644)
			_, err := ReadManifest(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), ManifestFile) {
				t.Fatalf("err %v, want %q naming the file", err, tt.want)
			}
		})
	}
}

func TestFilesDetectsTruncatedPart(t *testing.T) {
	dir := t.TempDir()
	CreateLeaf(dir)
	Append(context.Background(), dir, events("a", 4))
	path := filepath.Join(dir, "part-000000.jsonl")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)/2], 0o644)
	if _, err := Files(dir); err == nil || !strings.Contains(err.Error(), "part-000000.jsonl") {
		t.Fatalf("err %v", err)
	}
}
