package engine

import (
	"context"
	"fmt"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/format"
)

// What bounds one query beyond DuckDB's own settings (docs/sql.md,
// "Limits"): the memory its worker process may map, and the memory the
// JSON documents it normalizes may take.

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
	m, err := catalog.ParseMemorySize(l.MemoryLimit)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q %w", l.MemoryLimit, err)
	}
	return m + max(int64(float64(m)*workerAllowance), workerAllowanceMin), nil
}

// documentBudget gives ctx the budget of memory that the JSON documents
// read whole by one resolution may take (max_document_memory).
func documentBudget(ctx context.Context, o catalog.Options) context.Context {
	return format.WithDocumentBudget(ctx, format.NewDocumentBudget(o.MaxDocumentMemory))
}
