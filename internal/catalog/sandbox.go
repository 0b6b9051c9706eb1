package catalog

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// LockConfiguration is the last statement of a sandbox set-up: nothing can
// change a setting afterwards (creating views and filling tables still
// works, so it may come before them).
const LockConfiguration = "SET lock_configuration=true"

// SandboxSettings returns the DuckDB statements that confine an in-memory
// instance for one query or read: InstanceSettings, then AccessSettings.
// Run them first, then LockConfiguration. This is the
// second wall behind SQL validation (DECISIONS §2), shared by the query
// engine and the Go API.
func (o Options) SandboxSettings(spill string, allowed []string) []string {
	return append(o.InstanceSettings(spill), AccessSettings(spill, allowed)...)
}

// InstanceSettings are the part of the sandbox that does not depend on what
// is read: the Options' memory, thread and spill limits, spilling into
// spill, and no extension loading. They may run before the data is known
// (the engine prepares instances ahead of queries). DuckDB creates spill
// only when it first spills and removes it when the instance closes.
func (o Options) InstanceSettings(spill string) []string {
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	return []string{
		"SET memory_limit=" + SQLString(o.MemoryLimit),
		fmt.Sprintf("SET threads=%d", threads),
		"SET temp_directory=" + SQLString(spill),
		"SET max_temp_directory_size=" + SQLString(o.MaxSpillBytes),
		"SET autoinstall_known_extensions=false",
		"SET autoload_known_extensions=false",
	}
}

// AccessSettings confine file access to the directories in allowed and
// spill, and then turn external access off (after which allowed can no
// longer change).
func AccessSettings(spill string, allowed []string) []string {
	set := map[string]bool{filepath.Clean(spill) + string(filepath.Separator): true}
	for _, d := range allowed {
		set[filepath.Clean(d)+string(filepath.Separator)] = true
	}
	dirs := make([]string, 0, len(set))
	for d := range set {
		dirs = append(dirs, SQLString(d))
	}
	sort.Strings(dirs)
	return []string{
		"SET allowed_directories=[" + strings.Join(dirs, ", ") + "]",
		"SET enable_external_access=false",
	}
}

// QuoteIdent returns s as a quoted SQL identifier.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// SQLString returns s as a SQL string literal.
func SQLString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
