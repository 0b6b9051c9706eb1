package engine

import (
	"errors"
	"fmt"

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

// classify wraps a DuckDB error of the user's statement; other errors pass
// through.
func classify(err error) error {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return err
	}
	switch de.Type {
	case duckdb.ErrorTypeOutOfMemory:
		return &QueryError{Kind: KindResources, Err: fmt.Errorf("%w (the query exceeded its memory limit: raise --memory-limit or lower --threads)", err)}
	case duckdb.ErrorTypeBinder, duckdb.ErrorTypeCatalog, duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax,
		duckdb.ErrorTypeConversion, duckdb.ErrorTypeOutOfRange, duckdb.ErrorTypeInvalidInput, duckdb.ErrorTypeDivideByZero,
		duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType, duckdb.ErrorTypeNotImplemented, duckdb.ErrorTypeExpression,
		duckdb.ErrorTypeConstraint, duckdb.ErrorTypeParameterNotResolved, duckdb.ErrorTypeParameterNotAllowed, duckdb.ErrorTypeDecimal,
		duckdb.ErrorTypeObjectSize, duckdb.ErrorTypeSequence:
		return &QueryError{Kind: KindStatement, Err: err}
	}
	return &QueryError{Kind: KindInternal, Err: err}
}
