//go:build unix

package catalog

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestListingFailureFailsEveryPolicy: a directory the walk cannot open (here
// one whose path is longer than PATH_MAX) makes the listing incomplete. It
// fails the Snapshot build under report as under strict, and
// PeripheralFiles returns it as an error rather than the files it did see.
func TestListingFailureFailsEveryPolicy(t *testing.T) {
	root := tree(t, map[string]string{"a.json": "{}"})
	deep := testutil.TooDeepDir(t, root, "hidden.json", "{}")
	for _, policy := range []string{ErrorsStrict, ErrorsReport} {
		opts := DefaultOptions()
		opts.Errors = policy
		snap, err := Build(context.Background(), []DatasetMount{{Alias: "d", URI: root}}, opts)
		if err == nil {
			snap.Close()
			t.Fatalf("%s: Build over an unlistable directory succeeded", policy)
		}
		if !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Errorf("%s: error %v does not carry the listing failure", policy, err)
		}
	}
	got, err := PeripheralFiles(context.Background(), root)
	if err == nil || !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("PeripheralFiles = %s, %v; want the listing failure", files(got), err)
	}
	if !strings.Contains(err.Error(), filepath.Base(deep)[:20]) {
		t.Errorf("error %q does not name the directory", err)
	}
}

// TestObjectListingFailureIsAnError: an object listing that fails part way
// (here the local backend meeting the same too-deep directory) is an error,
// never the objects listed before it.
func TestObjectListingFailureIsAnError(t *testing.T) {
	root := tree(t, map[string]string{"a.json": "{}"})
	testutil.TooDeepDir(t, root, "hidden.json", "{}")
	b, err := objstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DiscoverRemote(context.Background(), b, "", DefaultOptions())
	if err == nil || !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("DiscoverRemote = %s, %v; want the listing failure", files(got), err)
	}
}

// TestPeripheralFilesMemberErrors: a store under the root is a problem of one
// member, reported on it, not a failure of the listing.
func TestPeripheralFilesMemberErrors(t *testing.T) {
	root := tree(t, map[string]string{"a.json": "{}", "store/CURRENT": "gen-000001\n", "z.jsonl": "{}"})
	got, err := PeripheralFiles(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if files(got) != "a.json:file store:storyline z.jsonl:file" {
		t.Fatalf("got %s", files(got))
	}
	for _, s := range got {
		if (s.Kind == KindFile) != (s.Err == nil) {
			t.Errorf("%s: Err = %v", s.File, s.Err)
		}
	}
	if msg := got[1].Err.Error(); !strings.Contains(msg, "is a storyline store, not a trajectory file") {
		t.Errorf("store error %q", msg)
	}
}
