package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// memoryUnits are the units DuckDB accepts in memory_limit (case does not
// matter): KB, MB, GB, TB are powers of 1000, KiB... powers of 1024.
var memoryUnits = map[string]float64{
	"": 1, "b": 1, "byte": 1, "bytes": 1,
	"k": 1e3, "kb": 1e3, "kilobyte": 1e3, "kilobytes": 1e3, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "megabyte": 1e6, "megabytes": 1e6, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gigabyte": 1e9, "gigabytes": 1e9, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "terabyte": 1e12, "terabytes": 1e12, "tib": 1 << 40,
}

// memoryBytes parses a memory_limit as DuckDB does ("2GB", "512 MiB",
// "1.5gb"); "-1" and "none" mean no limit, returned as 0.
func memoryBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "-1" || t == "none" {
		return 0, nil
	}
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != 'e' && r != '+' && r != '-' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	n, err := strconv.ParseFloat(num, 64)
	scale, ok := memoryUnits[unit]
	if err != nil || !ok || n < 0 || math.IsInf(n*scale, 0) || n*scale >= math.MaxInt64 {
		return 0, fmt.Errorf("memory limit %q is not a size such as 2GB or 512MiB", s)
	}
	return int64(n * scale), nil
}

// The memory a query's worker process may map, beyond what it maps once
// DuckDB is open with its threads started (docs/sql.md, "Limits"):
// memory_limit, which DuckDB keeps its buffers (hash tables, sorts,
// materialized results) under, plus workerAllowance of it and
// workerAllowanceMin for what DuckDB allocates outside that limit — the
// vectors in flight, list and string values, folded constants — and the
// rows on their way to the engine. Normal queries stay far below; a
// query that needs more fails at its next allocation with an
// out-of-memory error.
const (
	workerAllowance    = 0.5
	workerAllowanceMin = 256 << 20
)

// dataLimit returns the memory a worker with these limits may add (0:
// unbounded, as memory_limit is).
func dataLimit(l Limits) (int64, error) {
	m, err := memoryBytes(l.MemoryLimit)
	if err != nil || m == 0 {
		return 0, err
	}
	return m + max(int64(float64(m)*workerAllowance), workerAllowanceMin), nil
}
