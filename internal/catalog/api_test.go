package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

func apiSnapshot(t *testing.T, root string) *Snapshot {
	t.Helper()
	snap, err := Build(context.Background(), []DatasetMount{{Namespace: []string{"team", "prod"}, Alias: "prod", URI: root}}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap
}

func TestPageTokensBoundToSnapshot(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 2500; i++ {
		files[fmt.Sprintf("d%02d/f%04d.json", i%7, i)] = "{}"
	}
	root := tree(t, files)
	snap := apiSnapshot(t, root)
	want := snap.Datasets[0].SourceRows()
	var got []string
	token, pages := "", 0
	for {
		rows, next, err := snap.ListSources("team/prod", 300, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			got = append(got, r.File)
		}
		pages++
		if next == "" {
			break
		}
		token = next
	}
	if pages != 9 || len(got) != 2500 {
		t.Fatalf("%d pages, %d sources", pages, len(got))
	}
	seen := map[string]bool{}
	for i, f := range got {
		if seen[f] || f != want[i].File {
			t.Fatalf("item %d: %s (want %s, seen %v)", i, f, want[i].File, seen[f])
		}
		seen[f] = true
	}

	_, mid, err := snap.ListSources("prod", 1000, "")
	if err != nil || mid == "" {
		t.Fatalf("first page: %v", err)
	}
	other := apiSnapshot(t, tree(t, map[string]string{"x.json": "{}"}))
	var pe *PageTokenError
	if _, _, err := other.ListSources("prod", 10, mid); !errors.As(err, &pe) || !pe.Stale || !errors.Is(err, ErrPageToken) {
		t.Errorf("token of another Snapshot: %v", err)
	}
	for _, bad := range []string{"!!", "e30", mid[:len(mid)-3]} {
		if _, _, err := snap.ListSources("prod", 10, bad); !errors.Is(err, ErrPageToken) {
			t.Errorf("malformed token %q: %v", bad, err)
		}
	}
	if _, _, err := snap.ListNamespaces(10, mid); !errors.Is(err, ErrPageToken) {
		t.Errorf("sources token reused for namespaces: %v", err)
	}
	if _, _, err := snap.ListSources("nope", 10, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown Dataset: %v", err)
	}
}

func TestListNamespacesAndDescribeSource(t *testing.T) {
	a := tree(t, map[string]string{"a.json": "{}"})
	b := tree(t, map[string]string{"b.jsonl": "{}", "sub/c.json": "{}"})
	mounts := []DatasetMount{
		{Namespace: []string{"team", "zeta"}, Alias: "zeta", URI: a},
		{Namespace: []string{"team", "alpha"}, Alias: "alpha", URI: b},
		{Namespace: []string{"ops"}, Alias: "ops", URI: a},
	}
	snap, err := Build(context.Background(), mounts, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	first, next, err := snap.ListNamespaces(2, "")
	if err != nil || next == "" {
		t.Fatal(err)
	}
	rest, last, err := snap.ListNamespaces(2, next)
	if err != nil || last != "" {
		t.Fatal(err, last)
	}
	if got := strings.Join(append(first, rest...), " "); got != "ops team/alpha team/zeta" {
		t.Errorf("namespaces %q", got)
	}
	row, err := snap.DescribeSource("team/alpha", "sub/c.json")
	if err != nil {
		t.Fatal(err)
	}
	if row.Dataset != "team/alpha" || row.File != "sub/c.json" || row.Status != "ready" || model.Deref(row.RevisionKind) != "local_fingerprint" {
		t.Errorf("row %+v", row)
	}
	if _, err := snap.DescribeSource("alpha", "nope.json"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing source: %v", err)
	}
}
