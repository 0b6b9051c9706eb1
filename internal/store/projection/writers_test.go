package projection

import (
	"context"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/store/events"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// A build of an older events revision that finishes after a build of a
// newer one must not replace it: concurrent builds run one after the
// other, so the projection ends fresh for the newest revision.
func TestConcurrentBuildsNeverGoBack(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), events.DirName)
	es, err := events.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := es.Append(ctx, batch("a", sessions("s", 4), 3, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := Update(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := es.Append(ctx, batch("b", sessions("s", 2), 3, 3)); err != nil {
		t.Fatal(err)
	}
	// Build A (of revision 2) pauses while writing its tables; meanwhile B
	// appends revision 3 and builds. B waits for A (or, unsafely, finishes
	// first).
	var paused atomic.Bool // not a sync.Once: B's own hook calls must not wait for A's
	bDone := make(chan error, 1)
	restore := fsx.SetFailHook(func(path string, at fsx.FailPoint) error {
		if paused.Swap(true) {
			return nil
		}
		func() {
			go func() {
				_, err := es.Append(ctx, batch("c", sessions("n", 2), 3, 0))
				if err == nil {
					_, err = Update(ctx, dir)
				}
				bDone <- err
			}()
			select {
			case err := <-bDone:
				bDone <- err // B did not wait for A
			case <-time.After(2 * time.Second): // far longer than B takes when it does not wait
			}
		}()
		return nil
	})
	_, errA := Update(ctx, dir)
	errB := <-bDone
	restore()
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	ss, err := storyline.Open(SiblingDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	g, err := ss.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if l := g.Manifest.Lineage; l == nil || l.EventsRevision != 3 {
		t.Fatalf("projection lineage %+v, want events revision 3 (the newest)", l)
	}
	if !reflect.DeepEqual(readRows(t, g), fullRebuild(t, dir)) {
		t.Fatal("projection differs from a full rebuild of the newest revision")
	}
}
