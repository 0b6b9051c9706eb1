package query

import "strings"

// Scalar and aggregate functions are allowed unless denied here. DuckDB has
// about 2,800 of them and almost all are pure computations over their
// arguments; an allowlist would break ordinary SQL every time DuckDB adds
// one. File and network access in DuckDB goes through table functions
// (denied entirely, see walk.go) and extensions (the engine disables
// autoloading), so the denylist targets what is left: functions that read
// files or the environment, expose settings or other statements, run SQL
// given as text, have side effects, or only stall a worker. The engine's
// own sandbox (enable_external_access=false, allowed_directories, locked
// configuration) is the second wall behind this list.
var deniedFuncs = map[string]string{
	"getenv":                      "reads the environment",
	"current_setting":             "reveals engine settings (paths, limits)",
	"getvariable":                 "reads session variables",
	"current_query":               "reveals the running statement",
	"json_serialize_plan":         "plans SQL given as text",
	"json_serialize_sql":          "parses SQL given as text",
	"json_deserialize_sql":        "builds SQL from text",
	"json_execute_serialized_sql": "runs SQL given as text",
	"query":                       "runs SQL given as text",
	"query_table":                 "reads a table named by a string",
	"glob":                        "lists files",
	"sniff_csv":                   "reads files",
	"write_log":                   "writes to the engine log",
	"nextval":                     "changes sequence state",
	"currval":                     "reads sequence state",
	"setseed":                     "changes session state",
	"pg_sleep":                    "only stalls the query",
	"sleep_ms":                    "only stalls the query",
	"which_secret":                "reveals secrets",
	"checkpoint":                  "writes the database",
	"force_checkpoint":            "writes the database",
}

// deniedPrefixes cover function families that read files or expose the
// engine's internals, including extension functions that are not loaded
// today (an extension could be present in another build).
var deniedPrefixes = []string{
	"read_", "parquet_", "duckdb_", "pragma_", "sqlite_", "postgres_", "mysql_",
	"iceberg_", "delta_", "st_read", "enable_", "disable_", "load_", "install_",
}

// deniedFunction returns why a function may not be called, or "".
func deniedFunction(name string) string {
	if why, ok := deniedFuncs[name]; ok {
		return why
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p) {
			return "reads files or engine internals"
		}
	}
	return ""
}
