package catalog

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestOptionValuesChecked: a negative or malformed limit is an OptionError
// naming the setting, from Set and from Validate alike.
func TestOptionValuesChecked(t *testing.T) {
	for _, tt := range []struct{ name, value, reason string }{
		{"timeout", "-1s", "must not be negative"},
		{"timeout", "5", "is not a duration"},
		{"max_output_rows", "-1", "must not be negative"},
		{"max_output_rows", "1e6", "is not a whole number"},
		{"max_files", "0", "must be positive"},
		{"max_entries", "-5", "must be positive"},
		{"max_detection_bytes", "0", "must be positive"},
		{"max_concurrent_sources", "0", "must be positive"},
		{"max_file_bytes", "-1", "must not be negative"},
		{"max_event_fallback_rows", "-1", "must not be negative"},
		{"max_event_fallback_bytes", "-1", "must not be negative"},
		{"max_document_memory", "1XB", "is not a whole number of bytes or a size"},
		{"max_file_bytes", "-1MB", "is not a whole number of bytes or a size"},
		{"threads", "-2", "must not be negative"},
		{"memory_limit", "1XB", `unknown unit "XB"`},
		{"memory_limit", "-1GB", "is not a size"},
		{"memory_limit", "none", "is not a size"},
		{"memory_limit", "2", "is not a size"},
		{"memory_limit", "0GB", "must be more than zero bytes"},
		{"memory_limit", "99999999999TB", "is too large"},
		{"max_spill_bytes", "10 parsecs", `unknown unit "parsecs"`},
		{"errors", "lenient", "is not strict or report"},
		{"no_cache", "maybe", "is not true or false"},
		{"max_cache_bytes", "0B", "must be more than zero bytes"},
	} {
		o := DefaultOptions()
		err := o.Set(tt.name, tt.value)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Setting != tt.name || !strings.Contains(oe.Reason, tt.reason) {
			t.Errorf("Set(%s, %q) = %v; want an OptionError for %s saying %q", tt.name, tt.value, err, tt.name, tt.reason)
		}
	}
	o := DefaultOptions()
	o.Timeout = -time.Second
	var oe *OptionError
	if err := o.Validate(); !errors.As(err, &oe) || oe.Flag() != "--timeout" || oe.Value != "-1s" {
		t.Errorf("Validate = %v; want --timeout -1s", err)
	}
	for name, value := range map[string]string{"timeout": "0", "max_output_rows": "0", "threads": "0",
		"max_spill_bytes": "0B", "memory_limit": "1.5 GiB", "max_file_bytes": "0", "no_cache": "true", "cache_dir": ""} {
		o := DefaultOptions()
		if err := o.Set(name, value); err != nil {
			t.Errorf("Set(%s, %q): %v", name, value, err)
		}
	}
	o = DefaultOptions()
	for name, value := range map[string]string{"max_document_memory": "150MB", "max_file_bytes": "2GiB", "max_detection_bytes": "64KiB", "max_event_fallback_bytes": "1000"} {
		if err := o.Set(name, value); err != nil {
			t.Errorf("Set(%s, %q): %v", name, value, err)
		}
	}
	if o.MaxDocumentMemory != 150_000_000 || o.MaxFileBytes != 2<<30 || o.MaxDetectionBytes != 64<<10 || o.MaxEventFallbackBytes != 1000 {
		t.Errorf("byte options written as sizes: %d %d %d %d", o.MaxDocumentMemory, o.MaxFileBytes, o.MaxDetectionBytes, o.MaxEventFallbackBytes)
	}
}

// TestMemorySizesDuckDBAccepts: every size the options accept is one DuckDB
// accepts for both settings it is passed to (a size DuckDB refused would
// only fail later, while preparing a query).
func TestMemorySizesDuckDBAccepts(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, size := range []string{"2GB", "2gb", "1.5GiB", " 512 MiB ", "10KB", "3kib", "1TB", "1TiB", "100B", "0B", "7 mb"} {
		n, err := ParseMemorySize(size)
		if err != nil {
			t.Errorf("ParseMemorySize(%q): %v", size, err)
			continue
		}
		for _, setting := range []string{"memory_limit", "max_temp_directory_size"} {
			if n == 0 && setting == "memory_limit" {
				continue // the option refuses it already
			}
			if _, err := db.Exec("SET " + setting + "='" + size + "'"); err != nil {
				t.Errorf("DuckDB rejects %s=%q: %v", setting, size, err)
			}
		}
	}
}
