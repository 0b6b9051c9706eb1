//go:build linux

package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestInPlaceRewriteRestoringMtimeIsCaught: a file rewritten in place with
// the same size and its old mtime put back keeps size, mtime, device and
// inode; only its ctime moves, and the pin must see that.
func TestInPlaceRewriteRestoringMtimeIsCaught(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a.jsonl")
	testutil.WriteFiles(t, root, map[string]string{"a.jsonl": chat("one"), "b.jsonl": chat("bee")})
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Two Snapshots: a source's resolution (and its error) is cached.
	single := build(t, catalog.DatasetMount{Alias: "dataset", URI: root}, catalog.DefaultOptions())
	batch := build(t, catalog.DatasetMount{Alias: "dataset", URI: root}, catalog.DefaultOptions())
	pinned := *single.Datasets[0].Sources[0].Revision.(*catalog.FileRevision)
	// ctime has the kernel's coarse clock: rewrite until it has moved.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err := os.WriteFile(path, []byte(chat("two")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, before.ModTime(), before.ModTime()); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Size() != pinned.Size || !fi.ModTime().Equal(pinned.ModTime) || st.Ino != pinned.Inode {
			t.Fatalf("the rewrite must keep size, mtime and inode: pinned %s, now %d bytes, %v, inode %d", pinned.Ref(), fi.Size(), fi.ModTime(), st.Ino)
		}
		if !time.Unix(st.Ctim.Unix()).Equal(pinned.ChangeTime) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ctime never moved")
		}
	}
	parser, err := query.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer parser.Close()
	for snap, sql := range map[*catalog.Snapshot]string{
		single: `SELECT session_id FROM runs WHERE _file_ = 'a.jsonl'`, // one source
		batch:  `SELECT session_id FROM runs`,                          // normalized as a batch
	} {
		eng := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)})
		res, err := eng.Query(context.Background(), sql, engine.QueryOptions{})
		eng.Close()
		var changed *catalog.ErrSourceChanged
		if !errors.As(err, &changed) || changed.File != "a.jsonl" {
			t.Fatalf("%s: got %v, %v; want the source-changed error for a.jsonl", sql, res, err)
		}
	}
}

// TestFileRevisionRef: a pin's text is part of cache keys and snapshot ids,
// so its form never changes.
func TestFileRevisionRef(t *testing.T) {
	mtime := time.Date(2026, 3, 4, 5, 6, 7, 890, time.FixedZone("x", 3600))
	for _, c := range []struct {
		r    catalog.FileRevision
		want string
	}{
		{catalog.FileRevision{Size: 12, ModTime: mtime, Dev: 2049, Inode: 77}, "size=12;mtime=2026-03-04T04:06:07.00000089Z;dev=2049;ino=77"},
		{catalog.FileRevision{Size: 0, ModTime: mtime.Truncate(time.Second), Dev: 1, Inode: 1<<63 + 5, ChangeTime: mtime.Add(time.Hour)},
			"size=0;mtime=2026-03-04T04:06:07Z;dev=1;ino=9223372036854775813;ctime=2026-03-04T05:06:07.00000089Z"},
		{catalog.FileRevision{Size: -1}, "size=-1;mtime=0001-01-01T00:00:00Z;dev=0;ino=0"},
	} {
		if got := c.r.Ref(); got != c.want {
			t.Errorf("Ref() = %q, want %q", got, c.want)
		}
	}
}
