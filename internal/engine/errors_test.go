package engine

import (
	"errors"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/pchronicle/pchronicle/internal/catalog"
)

// TestQueryErrorNamesOptions: DuckDB's out-of-memory advice (SET and PRAGMA
// statements queries may not run) is replaced by the options that bound a
// query's memory; the error still unwraps to DuckDB's. The messages are
// DuckDB 1.5's (internal/engine/testdata/sql/out-of-*.sqltest hit them for
// real).
func TestQueryErrorNamesOptions(t *testing.T) {
	advice := "\n\nPossible solutions:\n* Reducing the number of threads (SET threads=X)\n* Increasing the memory limit (SET memory_limit='...GB')\n"
	l := LimitsFrom(catalog.DefaultOptions())
	l.Threads = 3
	for _, tt := range []struct{ msg, want string }{
		{"Out of Memory Error: could not allocate block of size 256.0 KiB (1.9 GiB/1.9 GiB used)" + advice,
			"Out of Memory Error: could not allocate block of size 256.0 KiB (1.9 GiB/1.9 GiB used): raise memory_limit (--memory-limit, now 2GB) or lower threads (--threads, now 3)"},
		{"Out of Memory Error: failed to offload data block of size 160.0 KiB (0 bytes/0 bytes used).\nThis limit was set by the 'max_temp_directory_size' setting.\nYou can adjust this setting, by using (for example) PRAGMA max_temp_directory_size='10GiB'" + advice,
			"Out of Memory Error: failed to offload data block of size 160.0 KiB (0 bytes/0 bytes used): the query needs more spill space than max_spill_bytes (--max-spill-bytes, now 10GB) allows: raise it, or memory_limit (--memory-limit, now 2GB)"},
	} {
		orig := &duckdb.Error{Type: duckdb.ErrorTypeOutOfMemory, Msg: tt.msg}
		err := classify(orig, l)
		if err.Error() != tt.want {
			t.Errorf("got  %q\nwant %q", err, tt.want)
		}
		if !errors.Is(err, orig) {
			t.Error("the explained error must unwrap to DuckDB's")
		}
	}
	other := &duckdb.Error{Type: duckdb.ErrorTypeBinder, Msg: "Binder Error: x"}
	var qe *QueryError
	if err := classify(other, l); !errors.As(err, &qe) || qe.Kind != KindStatement || err.Error() != other.Msg {
		t.Errorf("a binder error: %v, want it classified as the statement's, message unchanged", err)
	}
}
