// Package shard splits a set of inputs deterministically into N disjoint
// parts by their _file_ value, so N processes on any batch scheduler can
// each normalize one part (docs/scale-out.md).
//
// An input belongs to shard I of N when XXH3-64(_file_) mod N == I. The
// hash is of the _file_ string alone (its UTF-8 bytes, seed 0), so the split
// never depends on the order of the listing, on file sizes or on which
// machine runs the shard, and the union of the N shards is every input,
// each exactly once.
package shard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zeebo/xxh3"
)

// Shard is one part of a split: Index in [0, Count).
type Shard struct {
	Index, Count uint64
}

// Parse reads "I/N" (0 ≤ I < N). The empty string is the whole set (0/1).
func Parse(s string) (Shard, error) {
	if s == "" {
		return Shard{Index: 0, Count: 1}, nil
	}
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.ParseUint(i, 10, 64)
	count, err2 := strconv.ParseUint(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || count == 0 || index >= count {
		return Shard{}, fmt.Errorf("invalid shard %q: want I/N with 0 <= I < N, such as 0/4", s)
	}
	return Shard{Index: index, Count: count}, nil
}

// Of returns the shard index of a _file_ value among count shards.
func Of(file string, count uint64) uint64 { return xxh3.HashString(file) % count }

// Holds reports whether the input with this _file_ belongs to the shard.
func (s Shard) Holds(file string) bool { return s.Count <= 1 || Of(file, s.Count) == s.Index }

// String formats the shard as I/N.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }
