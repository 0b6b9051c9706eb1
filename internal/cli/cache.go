package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pchronicle/pchronicle/internal/normcache"
)

// defaultCacheDir is the --cache-dir default: the normalization cache
// under the user cache directory ("" — no cache — when there is none).
// Tests of this package point it at a temp directory.
var defaultCacheDir = func() string {
	dir, err := normcache.DefaultDir()
	if err != nil {
		return ""
	}
	return dir
}

func init() {
	register(func(e *env) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "cache",
			Short: "Inspect or clear the normalization cache",
			Long: `Commands that read peripheral trajectory files keep their normalized rows in
the normalization cache, so that the next query over unchanged files reads
them instead of normalizing again (see docs/storage.md). An entry is used only
for the exact pinned version of its file, with the same options and the same
build of pchronicle, and only after its checksums verify. The cache is
disposable: clearing it never changes a result, only the time of the next
query.`,
		}
		cmd.AddCommand(cacheStatsCmd(e), cacheClearCmd(e))
		return cmd
	})
}

func cacheDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "cache-dir", defaultCacheDir(), "directory of the normalization cache")
}

func openCacheDir(dir string) (*normcache.Cache, error) {
	if dir == "" {
		return nil, fmt.Errorf("no cache directory: give --cache-dir")
	}
	return normcache.Open(dir)
}

var cacheStatsColumns = []string{"path", "entries", "bytes", "since", "hits", "misses", "stored", "evicted", "rejected", "failures", "last_failure"}

func cacheStatsCmd(e *env) *cobra.Command {
	var dir, outFormat string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Print the size of the normalization cache and its use since the last clear",
		Long: `Print one row: the cache directory, its entries and their bytes (counted now),
and since when (the last clear) the counters run: sources served from the
cache (hits), looked up and normalized (misses), entries stored, evicted to
keep the size bound, and rejected because they failed verification, and
stores that failed, with the last failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validFormat(outFormat); err != nil {
				return err
			}
			c, err := openCacheDir(dir)
			if err != nil {
				return err
			}
			st, err := c.Stats(cmd.Context())
			if err != nil {
				return err
			}
			var last *string
			if st.LastFailure != "" {
				last = &st.LastFailure
			}
			rw := newRowWriter(e.stdout, outFormat, cacheStatsColumns)
			if err := rw.Write([]any{st.Dir, st.Entries, st.Bytes, st.Since, st.Hits, st.Misses, st.Stored, st.Evicted, st.Rejected, st.Failures, last}); err != nil {
				return err
			}
			return rw.Close()
		},
	}
	cacheDirFlag(cmd, &dir)
	cmd.Flags().StringVar(&outFormat, "format", fmtTable, "output format: table, csv, json or jsonl")
	return cmd
}

func cacheClearCmd(e *env) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "clear",
		Short: "Remove every entry of the normalization cache",
		Long: `Remove every entry and the index of the normalization cache, and start its
counters again. Queries running meanwhile keep what they already read; the
next query over a file normalizes it again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := openCacheDir(dir)
			if err != nil {
				return err
			}
			st, err := c.Stats(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.Clear(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "removed %d entries (%d bytes) from %s\n", st.Entries, st.Bytes, st.Dir)
			return nil
		},
	}
	cacheDirFlag(cmd, &dir)
	return cmd
}
