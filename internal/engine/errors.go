package engine

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/query"
)

// ErrorKind classifies a DuckDB failure of a validated statement.
type ErrorKind string

const (
	// KindStatement: the statement itself is wrong (binding, types,
	// conversions, bad input): the caller should change it.
	KindStatement ErrorKind = "statement"
	// KindResources: it ran out of memory or spill space under its limits.
	KindResources ErrorKind = "resources"
	// KindInternal: anything else.
	KindInternal ErrorKind = "internal"
)

// QueryError is a DuckDB failure while running a statement, classified so
// callers (the HTTP layer) can answer with the right status.
type QueryError struct {
	Kind ErrorKind
	Err  error
	msg  string
}

func (e *QueryError) Unwrap() error { return e.Err }

// QueryError's message for a resource failure replaces DuckDB's advice
// (SET statements that user SQL may not run) with the limits and flags that
// bound the query.
func (e *QueryError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.Err.Error()
}

// classify wraps a DuckDB error of the user's statement, run under limits,
// and a document too large for the query's budget; other errors pass
// through.
func classify(err error, l Limits) error {
	var be *format.BudgetError
	if errors.As(err, &be) {
		return &QueryError{Kind: KindResources, Err: err}
	}
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return err
	}
	switch de.Type {
	case duckdb.ErrorTypeOutOfMemory:
		what, _, _ := strings.Cut(de.Msg, "\n") // DuckDB's own advice follows
		hint := memoryHint(l)
		if strings.Contains(de.Msg, "max_temp_directory_size") {
			hint = fmt.Sprintf("the query needs more spill space than max_spill_bytes (--max-spill-bytes, now %s) allows: raise it, or memory_limit (--memory-limit, now %s)",
				l.MaxSpillBytes, l.MemoryLimit)
		}
		return &QueryError{Kind: KindResources, Err: err, msg: strings.TrimSuffix(what, ".") + ": " + hint}
	case duckdb.ErrorTypeBinder, duckdb.ErrorTypeCatalog, duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax,
		duckdb.ErrorTypeConversion, duckdb.ErrorTypeOutOfRange, duckdb.ErrorTypeInvalidInput, duckdb.ErrorTypeDivideByZero,
		duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType, duckdb.ErrorTypeNotImplemented, duckdb.ErrorTypeExpression,
		duckdb.ErrorTypeConstraint, duckdb.ErrorTypeParameterNotResolved, duckdb.ErrorTypeParameterNotAllowed, duckdb.ErrorTypeDecimal,
		duckdb.ErrorTypeObjectSize, duckdb.ErrorTypeSequence:
		return &QueryError{Kind: KindStatement, Err: err, msg: query.WithoutSetAdvice(err.Error())}
	}
	return &QueryError{Kind: KindInternal, Err: err}
}

// memoryHint names the options that bound a query's memory, for every
// out-of-memory error: DuckDB's, and a worker's that died of it.
func memoryHint(l Limits) string {
	threads := fmt.Sprint(l.Threads)
	if l.Threads <= 0 {
		threads = fmt.Sprintf("0, i.e. %d", runtime.NumCPU())
	}
	return fmt.Sprintf("raise memory_limit (--memory-limit, now %s) or lower threads (--threads, now %s)", l.MemoryLimit, threads)
}
