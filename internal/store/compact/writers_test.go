package compact

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Concurrent appends to one leaf run one after the other: every append's
// events are in a listed part, and record_count is their exact total.
func TestConcurrentAppendsLoseNothing(t *testing.T) {
	ctx := context.Background()
	leaf := t.TempDir()
	if err := CreateLeaf(leaf); err != nil {
		t.Fatal(err)
	}
	const writers, appends = 6, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers*appends)
	var want []string
	for w := range writers {
		for a := range appends {
			want = append(want, fmt.Sprintf("w%d-a%d-0", w, a))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range appends {
				errs <- Append(ctx, leaf, events(fmt.Sprintf("w%d-a%d", w, a), 1))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	files, err := Files(leaf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, eventIDs(t, f)...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("listed parts hold %d events %v, want the %d appended", len(got), got, len(want))
	}
	if n, err := RecordCount(leaf); err != nil || n != writers*appends {
		t.Fatalf("record_count %d %v, want %d", n, err, writers*appends)
	}
}

func eventIDs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, rest, _ := strings.Cut(sc.Text(), `"event_id":"`)
		id, _, _ := strings.Cut(rest, `"`)
		ids = append(ids, id)
	}
	return ids
}

// Once the context is done, Append publishes nothing.
func TestCancelledAppendPublishesNothing(t *testing.T) {
	leaf := t.TempDir()
	if err := CreateLeaf(leaf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Append(ctx, leaf, events("s", 3)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled append: %v", err)
	}
	if m, err := ReadManifest(leaf); err != nil || m.RecordCount != 0 || len(m.Files) != 0 {
		t.Fatalf("manifest after a cancelled append: %+v %v", m, err)
	}
}
