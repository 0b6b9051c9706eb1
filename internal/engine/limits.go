package engine

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/format"
)

// What bounds one query beyond DuckDB's own settings (docs/sql.md,
// "Limits"): the memory its worker process may map, and the memory the
// JSON documents it normalizes may take.

// memoryUnits are the units of a memory size, as DuckDB reads them:
// KB, MB, GB, TB are powers of 1000, KiB... powers of 1024.
var memoryUnits = map[string]float64{
	"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

var memorySizeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$`) })

// memoryBytes reads a memory_limit ("2GB", "1.5 GiB", "512MiB") as
// bytes.
func memoryBytes(s string) (int64, error) {
	m := memorySizeRe().FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("memory limit %q is not a size: want a number and a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 2GB", s)
	}
	unit, ok := memoryUnits[strings.ToLower(m[2])]
	n, err := strconv.ParseFloat(m[1], 64)
	if !ok || err != nil || n*unit >= 1<<62 {
		return 0, fmt.Errorf("memory limit %q is not a size such as 2GB or 512MiB", s)
	}
	return int64(n * unit), nil
}

// A worker may map, beyond what it maps at its first query (the sandbox
// set up, DuckDB's threads started: about 100 MB, docs/sql.md),
// memory_limit — which DuckDB keeps its buffers under: hash tables, sorts,
// materialized results — plus workerAllowance of it, and at least
// workerAllowanceMin, for what DuckDB allocates outside that limit (the
// vectors in flight, list and string values, folded constants) and the
// rows on their way to the engine. Normal queries stay far below; one that
// needs more fails at its next allocation with an out-of-memory error.
const (
	workerAllowance    = 0.5
	workerAllowanceMin = 256 << 20
)

// dataLimit returns the memory a worker with these limits may map beyond
// its start.
func dataLimit(l Limits) (int64, error) {
	m, err := memoryBytes(l.MemoryLimit)
	if err != nil {
		return 0, err
	}
	return m + max(int64(float64(m)*workerAllowance), workerAllowanceMin), nil
}

// documentBudget gives ctx the budget of memory that the JSON documents
// read whole by one resolution may take (max_document_memory).
func documentBudget(ctx context.Context, o catalog.Options) context.Context {
	return format.WithDocumentBudget(ctx, format.NewDocumentBudget(o.MaxDocumentMemory))
}
