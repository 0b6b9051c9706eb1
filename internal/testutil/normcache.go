package testutil

import (
	"context"
	"testing"

	"github.com/pchronicle/pchronicle/internal/normcache"
)

// CacheStats reads the statistics of the normalization cache in dir.
func CacheStats(t testing.TB, dir string) normcache.Stats {
	t.Helper()
	c, err := normcache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
