//go:build !duckdb_arrow

package engine

// Columnar results use DuckDB's Arrow interface, which its Go driver builds
// only with the duckdb_arrow tag: scripts/env.sh sets it in GOFLAGS. A
// build without it stops here, on a name that says so, rather than on the
// driver's missing functions.
var _ = build_with_tags_duckdb_arrow__source_scripts_env_sh
