package objstore_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
)

// TestGCSNames round-trips keys with the characters a path or query
// escaping gets wrong through fake-gcs-server: put, list, stat, pinned
// read and conditional puts must all name the same object.
func TestGCSNames(t *testing.T) {
	srv := testservers.StartGCS(t)
	b := openWith(t, "gs://"+srv.NewGCSBucket(t), srv.GCSConfig(), nil)
	cp := b.(objstore.ConditionalPutter)
	names := []string{"a b/c+d.json", "x%2Fy=z@w.json", "q?r#s&t;u,v.json", "dé/ü~_.jsonl", "dir/", "a+b", "a b"}
	for _, k := range names {
		put(t, b, k, "v1:"+k)
	}
	for _, k := range names {
		got := list(t, b, k)
		if len(got) == 0 || got[0].Key != k {
			t.Fatalf("list %q = %v", k, keys(got))
		}
		st, err := b.Stat(ctx, k)
		if err != nil || st.Key != k || st.Generation != got[0].Generation {
			t.Fatalf("stat %q = %+v, %v; listed %+v", k, st, err, got[0])
		}
		if data, err := readAll(b, got[0]); err != nil || string(data) != "v1:"+k {
			t.Fatalf("read %q = %q, %v", k, data, err)
		}
		if _, err := cp.PutIfAbsent(ctx, k, strings.NewReader("x"), 1); !errors.Is(err, objstore.ErrPrecondition) {
			t.Fatalf("put if absent over %q: %v", k, err)
		}
		next, err := cp.PutIfMatch(ctx, st, strings.NewReader("v2"), 2)
		if err != nil || next.Key != k || next.Generation == st.Generation {
			t.Fatalf("put if match %q: %+v, %v", k, next, err)
		}
		if _, err := readAll(b, got[0]); !errors.Is(err, objstore.ErrChanged) {
			t.Fatalf("read of the replaced %q: %v", k, err)
		}
		rc, err := b.ReadPinned(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(data) != "v2" {
			t.Fatalf("read %q = %q, %v", k, data, err)
		}
	}
	if got := keys(list(t, b, "")); len(got) != len(names) {
		t.Fatalf("listing %q, want the %d names", got, len(names))
	}
}
