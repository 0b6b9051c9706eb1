package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
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
}

func (e *QueryError) Error() string { return e.Err.Error() }
func (e *QueryError) Unwrap() error { return e.Err }

// classify wraps a DuckDB error of the user's statement, run under l;
// other errors pass through.
func classify(err error, l Limits) error {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return err
	}
	switch de.Type {
	case duckdb.ErrorTypeOutOfMemory:
		// DuckDB's own advice is SET statements, which queries cannot run.
		msg, _, _ := strings.Cut(de.Msg, "\n\n")
		return &QueryError{Kind: KindResources, Err: &resourceError{msg: memoryAdvice(msg, l), err: err}}
	case duckdb.ErrorTypeBinder, duckdb.ErrorTypeCatalog, duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax,
		duckdb.ErrorTypeConversion, duckdb.ErrorTypeOutOfRange, duckdb.ErrorTypeInvalidInput, duckdb.ErrorTypeDivideByZero,
		duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType, duckdb.ErrorTypeNotImplemented, duckdb.ErrorTypeExpression,
		duckdb.ErrorTypeConstraint, duckdb.ErrorTypeParameterNotResolved, duckdb.ErrorTypeParameterNotAllowed, duckdb.ErrorTypeDecimal,
		duckdb.ErrorTypeObjectSize, duckdb.ErrorTypeSequence:
		return &QueryError{Kind: KindStatement, Err: err}
	}
	return &QueryError{Kind: KindInternal, Err: err}
}

// resourceError is an error of DuckDB's retold with the limit to raise.
type resourceError struct {
	msg string
	err error
}

func (e *resourceError) Error() string { return e.msg }
func (e *resourceError) Unwrap() error { return e.err }

// memoryAdvice completes an out-of-memory message with the flags that
// raise the limit.
func memoryAdvice(what string, l Limits) string {
	bound := ""
	if data, err := dataLimit(l); err == nil && data > 0 {
		bound = fmt.Sprintf(", under which its process may map %s", formatBytes(data))
	}
	return fmt.Sprintf("%s: the query needs more memory than --memory-limit %s allows%s; raise --memory-limit or lower --threads", what, l.MemoryLimit, bound)
}

func formatBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
