package benchcorpus

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ReadCachedParquet rewrites query, which reads relation (as "FROM
// relation"), to read instead the Parquet files the normalization cache in
// cacheDir keeps for that relation: the benchmarks' baseline for a warm
// query, DuckDB read_parquet over pchronicle's own normalized output. It
// fails when the cache holds none, as when the query that should have
// filled it found every file inside the cache's racy window.
func ReadCachedParquet(query, relation, cacheDir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(cacheDir, "*", "entries", "*", relation+".parquet"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("the cache in %s keeps no %s (were the files older than two seconds when it was filled?)", cacheDir, relation)
	}
	from := "FROM " + relation
	if !strings.Contains(query, from) {
		return "", fmt.Errorf("query %q does not read %s", query, from)
	}
	list := "['" + strings.Join(files, "', '") + "']"
	return strings.Replace(query, from, "FROM read_parquet("+list+")", 1), nil
}
