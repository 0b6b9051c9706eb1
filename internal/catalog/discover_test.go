package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree creates files (path → content) under a temp dir; a path ending in "/"
// is an empty directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func files(srcs []*DiscoveredSource) string {
	var out []string
	for _, s := range srcs {
		out = append(out, s.File+":"+string(s.Kind))
	}
	return strings.Join(out, " ")
}

func TestDiscoverMixedRecursive(t *testing.T) {
	root := tree(t, map[string]string{
		"b/run.jsonl":                       "{}",
		"a/trajectory.json":                 "{}",
		"a/notes.txt":                       "not a source",
		"store/CURRENT":                     "gen-000001\n",
		"store/gen-000001/runs.parquet":     "",
		"store/inner.json":                  "{} (inside a composite root: not a source)",
		"live/events.lance/_manifest.json":  "{}",
		"live/events.lance/segments/x.json": "{}",
		"compact/chronicle.manifest":        "kind = \"leaf\"",
		"compact/part-0.jsonl":              "{}",
		"c.NDJSON":                          "{}",
		"empty/":                            "",
		"not-events/_manifest.json":         "{}",
	})
	got, err := Discover(context.Background(), root, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := "a/trajectory.json:file b/run.jsonl:file c.NDJSON:file compact:compact live/events.lance:events not-events/_manifest.json:file store:storyline"
	if files(got) != want {
		t.Fatalf("sources:\n got %s\nwant %s", files(got), want)
	}
	for _, s := range got {
		if s.Kind == KindFile && (s.Revision == nil || s.Revision.RevisionKind() != "local_fingerprint") {
			t.Errorf("%s: file source not pinned: %v", s.File, s.Revision)
		}
	}
}

// TestDiscoverStoreMarkersMustBeRegularFiles: a subdirectory is a store
// when its listing holds its marker as a regular file; a marker that is a
// symlink or a directory makes it an ordinary directory, walked for files.
func TestDiscoverStoreMarkersMustBeRegularFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string)
		want string
	}{
		{"regular CURRENT", func(t *testing.T, dir string) { write(t, filepath.Join(dir, "CURRENT"), "g") }, "s:storyline"},
		{"regular compact manifest", func(t *testing.T, dir string) { write(t, filepath.Join(dir, "chronicle.manifest"), `kind = "leaf"`) }, "s:compact"},
		{"symlinked CURRENT", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "CURRENT")
			write(t, target, "g")
			if err := os.Symlink(target, filepath.Join(dir, "CURRENT")); err != nil {
				t.Skip(err)
			}
		}, "s/run.jsonl:file"},
		{"CURRENT a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "CURRENT"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "s/run.jsonl:file"},
		{"events manifest outside events.lance", func(t *testing.T, dir string) { write(t, filepath.Join(dir, "_manifest.json"), "{}") },
			"s/_manifest.json:file s/run.jsonl:file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, map[string]string{"s/run.jsonl": "{}"})
			tc.make(t, filepath.Join(root, "s"))
			got, err := Discover(context.Background(), root, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if files(got) != tc.want {
				t.Errorf("sources: got %s, want %s", files(got), tc.want)
			}
		})
	}
}

// TestDiscoverStoreInUnlistableDirectory: a store needs no listing of its
// own directory, so one the user may search but not list is still found.
func TestDiscoverStoreInUnlistableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root lists every directory")
	}
	root := tree(t, map[string]string{"s/CURRENT": "g", "a.json": "{}"})
	dir := filepath.Join(root, "s")
	if err := os.Chmod(dir, 0o311); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	got, err := Discover(context.Background(), root, DefaultOptions())
	if err != nil || files(got) != "a.json:file s:storyline" {
		t.Fatalf("got %s, %v", files(got), err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverRoots(t *testing.T) {
	root := tree(t, map[string]string{"one.json": "{}", "s/CURRENT": "g", "x/events.lance/_manifest.json": "{}"})
	for _, tt := range []struct{ root, want string }{
		{filepath.Join(root, "one.json"), ".:file"},
		{filepath.Join(root, "s"), ".:storyline"},
		{filepath.Join(root, "x", "events.lance"), ".:events"},
	} {
		got, err := Discover(context.Background(), tt.root, DefaultOptions())
		if err != nil || files(got) != tt.want {
			t.Errorf("Discover(%s) = %s, %v; want %s", tt.root, files(got), err, tt.want)
		}
	}
	if _, err := Discover(context.Background(), filepath.Join(root, "missing"), DefaultOptions()); err == nil {
		t.Error("missing root accepted")
	}
}

func TestDiscoverDoesNotFollowSymlinks(t *testing.T) {
	outside := tree(t, map[string]string{"secret.json": "{}"})
	root := tree(t, map[string]string{"a.json": "{}"})
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.json"), filepath.Join(root, "b.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	got, err := Discover(context.Background(), root, DefaultOptions())
	if err != nil || files(got) != "a.json:file" {
		t.Fatalf("got %s, %v", files(got), err)
	}
}

func TestDiscoverLimits(t *testing.T) {
	root := tree(t, map[string]string{"a.json": "", "b.json": "", "c.json": "", "d/e.json": ""})
	opts := DefaultOptions()
	opts.MaxFiles = 3
	_, err := Discover(context.Background(), root, opts)
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "max_files" {
		t.Fatalf("max_files: %v", err)
	}
	opts = DefaultOptions()
	opts.MaxEntries = 4 // a.json b.json c.json d + e.json = 5 entries
	_, err = Discover(context.Background(), root, opts)
	if !errors.As(err, &le) || le.Setting != "max_entries" {
		t.Fatalf("max_entries: %v", err)
	}
	opts.MaxEntries = 5
	if _, err := Discover(context.Background(), root, opts); err != nil {
		t.Fatalf("exactly max_entries must pass: %v", err)
	}
}

func TestMountNames(t *testing.T) {
	for _, tt := range []struct{ in, alias, ns, err string }{
		{"prod=/data", "prod", "prod", ""},
		{" Team/Prod = /data", "prod", "Team/Prod", ""},
		{"team/nightly-runs=/d", "nightly_runs", "team/nightly-runs", ""},
		{"public=/d", "", "", "reserved"},
		{"information_schema=/d", "", "", "reserved"},
		{"main=/d", "", "", "reserved"},
		{"pg_catalog=/d", "", "", "reserved"},
		{"team/System=/d", "", "", "reserved"},
		{"temp=/d", "", "", "reserved"},
		{"memory=/d", "", "", "reserved"},
		{"main_runs=/d", "main_runs", "main_runs", ""},
		{"1abc=/d", "", "", "invalid Dataset alias"},
		{"a b=/d", "", "", "invalid namespace"},
		{"noequals", "", "", "want NAME=URI"},
		{"x=", "", "", "want NAME=URI"},
	} {
		m, err := ParseMount(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseMount(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || m.Alias != tt.alias || m.NamespacePath() != tt.ns {
			t.Errorf("ParseMount(%q) = %+v, %v", tt.in, m, err)
		}
	}
}

func TestDuplicateMountsFailBeforeDiscovery(t *testing.T) {
	for _, mounts := range [][]DatasetMount{
		{{Alias: "a", URI: "/nonexistent-1"}, {Alias: "A", URI: "/nonexistent-2"}},
		{{Namespace: []string{"x", "y"}, Alias: "a", URI: "/n1"}, {Namespace: []string{"x", "y"}, Alias: "b", URI: "/n2"}},
	} {
		err := ValidateMounts(mounts)
		if err == nil || !strings.Contains(err.Error(), "duplicate") {
			t.Errorf("ValidateMounts(%+v) = %v", mounts, err)
		}
	}
}

func TestRedactURI(t *testing.T) {
	for in, want := range map[string]string{
		"s3://bucket/key.json?X-Amz-Signature=abc": "s3://bucket/key.json",
		"https://user:pw@host/path?sig=1":          "https://host/path",
		"/local/path.json":                         "/local/path.json",
	} {
		if got := RedactURI(in); got != want {
			t.Errorf("RedactURI(%q) = %q", in, got)
		}
	}
}

func TestOptionsDescribedAndDefaulted(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.MaxDetectionBytes != 1<<20 || o.Errors != ErrorsStrict {
		t.Fatalf("defaults: %+v", o)
	}
	for _, s := range Describe() {
		if s.Name == "" || s.Help == "" || (s.Default == "" && s.Name != "cache_dir") { // no cache directory: no cache
			t.Errorf("option %+v lacks name, default or help", s)
		}
	}
	if err := o.Set("max_files", "7"); err != nil || o.MaxFiles != 7 {
		t.Fatalf("Set: %v %d", err, o.MaxFiles)
	}
	if err := o.Set("nope", "1"); err == nil {
		t.Fatal("unknown option accepted")
	}
}

func TestSnapshotIDCoversWhatIsPinned(t *testing.T) {
	root := tree(t, map[string]string{"a.json": "{}"})
	id := func(m DatasetMount) string {
		snap, err := Build(context.Background(), []DatasetMount{m}, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		return snap.ID
	}
	base := DatasetMount{Alias: "d", URI: root}
	other := base
	other.Config.Endpoint = "http://127.0.0.1:1"
	if id(base) != id(base) {
		t.Fatal("snapshot_id must be deterministic")
	}
	if id(base) == id(other) {
		t.Fatal("the same URI on another endpoint must give another snapshot_id")
	}
	before := id(base)
	os.WriteFile(filepath.Join(root, "b.json"), []byte("{}"), 0o644)
	if id(base) == before {
		t.Fatal("a new member must change snapshot_id")
	}
}

// TestDiscoverPinsMatchLstat: the walk pins files concurrently, relative to
// their open directory, in chunks; every pin must equal what os.Lstat says
// of the file, in stable path order, across chunk boundaries.
func TestDiscoverPinsMatchLstat(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 2*pinChunk+7; i++ {
		files[fmt.Sprintf("big/f%04d.jsonl", i)] = strings.Repeat("x", i)
	}
	for i := 0; i < 40; i++ {
		files[fmt.Sprintf("d%02d/sub/run.JSON", i)] = fmt.Sprint(i)
	}
	root := tree(t, files)
	got, err := Discover(context.Background(), root+string(filepath.Separator), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Fatalf("%d sources, want %d", len(got), len(files))
	}
	for i, s := range got {
		if i > 0 && got[i-1].File >= s.File {
			t.Fatalf("order: %s before %s", got[i-1].File, s.File)
		}
		if want := filepath.Join(root, filepath.FromSlash(s.File)); s.Path != want {
			t.Fatalf("path %q, want %q", s.Path, want)
		}
		fi, err := os.Lstat(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if want := fileRevision(fi); *s.Revision.(*FileRevision) != want || s.Size != want.Size || !s.ModTime.Equal(want.ModTime) {
			t.Fatalf("%s: pinned %+v, lstat says %+v", s.File, s.Revision, want)
		}
		if err := s.Revision.(*FileRevision).Check(s.File, fi); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiscoverCompactBranches: a compact branch is not a source; the compact
// sources among its immediate child directories are, recursively, also when
// the root itself is a branch or a leaf.
func TestDiscoverCompactBranches(t *testing.T) {
	leaf := `kind = "leaf"` + "\nformat = \"compact-jsonl/v1\"\n"
	branch := `kind = "branch"` + "\n"
	root := tree(t, map[string]string{
		"chronicle.manifest":           branch,
		"a/chronicle.manifest":         leaf,
		"b/chronicle.manifest":         branch,
		"b/c/chronicle.manifest":       leaf,
		"b/plain/x.jsonl":              "{}",
		"b/c/inner/chronicle.manifest": leaf,
	})
	got, err := Discover(context.Background(), root, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if files(got) != "a:compact b/c:compact" {
		t.Fatalf("root branch: %s", files(got))
	}
	if got, err = Discover(context.Background(), filepath.Join(root, "a"), DefaultOptions()); err != nil || files(got) != ".:compact" {
		t.Fatalf("root leaf: %s %v", files(got), err)
	}
	snap, err := Build(context.Background(), []DatasetMount{{Alias: "d", URI: root}}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for _, s := range snap.Datasets[0].Sources {
		if s.Revision == nil || s.Revision.RevisionKind() != "compact_manifest" {
			t.Errorf("%s: not pinned: %v %v", s.File, s.Revision, s.Err)
		}
	}
}
