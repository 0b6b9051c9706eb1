package testutil

import (
	"fmt"
	"os"
	"testing"

	"github.com/pchronicle/pchronicle/internal/query"
)

// MainWithParser is a TestMain that opens one SQL parser into *p for the
// package's tests (its DuckDB instance opens once, not per test), runs
// them, closes it and exits.
func MainWithParser(m *testing.M, p **query.Parser) {
	var err error
	if *p, err = query.NewParser(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := RunMain(m)
	(*p).Close()
	os.Exit(code)
}
