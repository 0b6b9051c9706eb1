package engine

import (
	"net/url"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// Limits bound one DuckDB instance and the query it runs. An Engine holds
// the defaults; a query may ask for other values (QueryOptions).
type Limits struct {
	MemoryLimit   string        // DuckDB memory_limit, e.g. "2GB"
	Threads       int           // DuckDB threads (0: number of CPUs)
	MaxSpillBytes string        // DuckDB max_temp_directory_size
	Timeout       time.Duration // wall-clock limit of one query (0: none)
	MaxOutputRows int64         // most rows a query returns (0: no limit)
}

// LimitsFrom takes the query-time limits out of the catalog options, where
// the CLI's flags and config set them.
func LimitsFrom(o catalog.Options) Limits {
	return Limits{MemoryLimit: o.MemoryLimit, Threads: o.Threads, MaxSpillBytes: o.MaxSpillBytes, Timeout: o.Timeout, MaxOutputRows: o.MaxOutputRows}
}

// The sandbox of every DuckDB instance this package opens (docs/sql.md):
// openConfig when it opens, then instanceSettings, accessSettings and
// lockConfiguration. It is the second wall behind SQL validation: even SQL
// that got past the checker cannot read other files, load extensions or
// change a setting.

// lockConfiguration is the last statement of a sandbox set-up: nothing can
// change a setting afterwards (creating views and filling tables still
// works, so it may come before them).
const lockConfiguration = "SET lock_configuration=true"

// openConfig is the DSN (its query string) of an instance with these
// limits: memory, threads and no extension loading are set as DuckDB
// opens, which costs no statement — the statements before the lock are on
// a query's path, since its SQL is parsed after them.
func (l Limits) openConfig() string {
	threads := l.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	v := url.Values{}
	v.Set("memory_limit", l.MemoryLimit)
	v.Set("threads", strconv.Itoa(threads))
	v.Set("autoinstall_known_extensions", "false")
	v.Set("autoload_known_extensions", "false")
	// DuckDB keeps the bytes of the files it reads in memory for a later
	// read of the same file. An instance reads each file of a query once,
	// and the Storyline reader reads each source's once: the cache only
	// copied every read and held it until memory_limit (an export of 1,000
	// sources grew by 350 KB each).
	v.Set("enable_external_file_cache", "false")
	return "?" + v.Encode()
}

// instanceSettings are the part of the sandbox set by statement that does
// not depend on what is read: spilling into spill, at most MaxSpillBytes
// (DuckDB does not take temp_directory from the DSN, and setting it resets
// the spill cap). They may run before the data is known (the engine
// prepares instances ahead of queries). DuckDB creates spill only when it
// first spills and removes it when the instance closes.
func (l Limits) instanceSettings(spill string) []string {
	return []string{
		"SET temp_directory=" + sqlString(spill),
		"SET max_temp_directory_size=" + sqlString(l.MaxSpillBytes),
	}
}

// accessSettings confine file access to the directories in allowed and
// spill, and then turn external access off (after which allowed can no
// longer change).
func accessSettings(spill string, allowed []string) []string {
	set := map[string]bool{filepath.Clean(spill) + string(filepath.Separator): true}
	for _, d := range allowed {
		set[filepath.Clean(d)+string(filepath.Separator)] = true
	}
	dirs := make([]string, 0, len(set))
	for d := range set {
		dirs = append(dirs, sqlString(d))
	}
	sort.Strings(dirs)
	return []string{
		"SET allowed_directories=[" + strings.Join(dirs, ", ") + "]",
		"SET enable_external_access=false",
	}
}

// sqlString returns s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Ident returns s as a quoted SQL identifier.
func Ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// Literal returns s as a SQL string literal, for callers that build SQL
// around values (the server's run list).
func Literal(s string) string { return sqlString(s) }
