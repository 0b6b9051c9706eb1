package iceberg

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Relations are the tables of a set, in commit order.
var Relations = []string{model.RelRuns, model.RelSteps, model.RelToolCalls, model.RelEvents}

// bucketCount is the number of session_id buckets every table is
// partitioned by: a point lookup by session_id reads 1/16 of the files, and
// a shard's commit writes at most 16 files per table (docs/scale-out.md).
const bucketCount = 16

// targetFileBytes is the data file size writers aim for: large enough that
// a scan by time opens few files, small enough that one session's lookup
// reads little beyond its row group (docs/scale-out.md).
const targetFileBytes = 128 << 20

// Schema is the fixed Iceberg schema of a relation: its columns in
// model.Schemas order with field ids 1..n, so every engine and every
// version of this program agree on them.
func Schema(rel string) (*iceberg.Schema, error) {
	cols, ok := model.Schemas[rel]
	if !ok {
		return nil, fmt.Errorf("iceberg: unknown relation %q", rel)
	}
	fields := make([]iceberg.NestedField, len(cols))
	for i, c := range cols {
		var t iceberg.Type
		switch c.SQLType {
		case "VARCHAR":
			t = iceberg.PrimitiveTypes.String
		case "BIGINT":
			t = iceberg.PrimitiveTypes.Int64
		case "DOUBLE":
			t = iceberg.PrimitiveTypes.Float64
		case "BOOLEAN":
			t = iceberg.PrimitiveTypes.Bool
		case "TIMESTAMPTZ":
			t = iceberg.PrimitiveTypes.TimestampTz
		default:
			return nil, fmt.Errorf("iceberg: column %s.%s has no Iceberg type for %s", rel, c.Name, c.SQLType)
		}
		fields[i] = iceberg.NestedField{ID: i + 1, Name: c.Name, Type: t, Required: !c.Nullable}
	}
	return iceberg.NewSchema(0, fields...), nil
}

// timeColumn is the column a relation's rows are scanned by time on; runs
// are partitioned by its month as well ("" for none).
var timeColumn = map[string]string{
	model.RelRuns:   "started_at",
	model.RelEvents: "ts",
}

// partitionSpec is bucket(16, session_id) for every table, and for runs and
// events also month of their time column.
func partitionSpec(rel string, sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	opts := []iceberg.PartitionOption{
		iceberg.AddPartitionFieldByName("session_id", "session_bucket", iceberg.BucketTransform{NumBuckets: bucketCount}, sc, nil),
	}
	if col := timeColumn[rel]; col != "" {
		opts = append(opts, iceberg.AddPartitionFieldByName(col, col+"_month", iceberg.MonthTransform{}, sc, nil))
	}
	return iceberg.NewPartitionSpecOpts(opts...)
}

// tableProperties are set when a table is created.
func tableProperties() iceberg.Properties {
	return iceberg.Properties{
		"format-version":                  "2",
		"write.target-file-size-bytes":    fmt.Sprint(targetFileBytes),
		"write.parquet.compression-codec": "zstd",
		// Rows are replaced by rewriting files, never by delete files, so
		// engines read the tables without merge-on-read.
		"write.delete.mode":         "copy-on-write",
		"write.update.mode":         "copy-on-write",
		"write.merge.mode":          "copy-on-write",
		"pchronicle.schema-version": fmt.Sprint(model.SchemaVersion),
	}
}

// sameColumns reports whether an existing table has the fixed schema.
func sameColumns(tbl *table.Table, want *iceberg.Schema) error {
	got := tbl.Schema()
	if len(got.Fields()) != len(want.Fields()) {
		return fmt.Errorf("table %v has %d columns, this version of pchronicle writes %d", tbl.Identifier(), len(got.Fields()), len(want.Fields()))
	}
	for i, f := range want.Fields() {
		g := got.Fields()[i]
		if g.Name != f.Name || !g.Type.Equals(f.Type) {
			return fmt.Errorf("table %v: column %d is %s %s, want %s %s", tbl.Identifier(), i+1, g.Name, g.Type, f.Name, f.Type)
		}
	}
	return nil
}
