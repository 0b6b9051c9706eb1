package model

import "time"

// Relation names of the catalog metadata tables.
const (
	RelSources     = "sources"
	RelProjections = "projections"
)

// Relations lists the six relations of every Dataset schema, in the order
// they are documented and registered.
var Relations = []string{RelSources, RelRuns, RelSteps, RelToolCalls, RelEvents, RelProjections}

// SourceRow is one row of the sources relation: a source of a Dataset as the
// Snapshot pinned it.
type SourceRow struct {
	Dataset              string     `parquet:"dataset" json:"dataset"`
	File                 string     `parquet:"_file_" json:"_file_"`
	Kind                 string     `parquet:"kind" json:"kind"`
	SourceType           string     `parquet:"source_type" json:"source_type"`
	Format               *string    `parquet:"format,optional" json:"format"`
	Status               string     `parquet:"status" json:"status"`
	Error                *string    `parquet:"error,optional" json:"error"`
	SizeBytes            *int64     `parquet:"size_bytes,optional" json:"size_bytes"`
	ModifiedAt           *time.Time `parquet:"modified_at,optional,timestamp(microsecond)" json:"modified_at"`
	SnapshotRef          *string    `parquet:"snapshot_ref,optional" json:"snapshot_ref"`
	RevisionKind         *string    `parquet:"revision_kind,optional" json:"revision_kind"`
	ProjectionCandidates int64      `parquet:"projection_candidates" json:"projection_candidates"`
}

// ProjectionRow is one row of the projections relation: a Storyline
// projection attached to a canonical events source.
type ProjectionRow struct {
	File            string     `parquet:"_file_" json:"_file_"`
	ProjectionPath  string     `parquet:"projection_path" json:"projection_path"`
	Generation      int64      `parquet:"generation" json:"generation"`
	LineageRevision int64      `parquet:"lineage_revision" json:"lineage_revision"`
	Fresh           bool       `parquet:"fresh" json:"fresh"`
	Selected        bool       `parquet:"selected" json:"selected"`
	LastModified    *time.Time `parquet:"last_modified,optional,timestamp(microsecond)" json:"last_modified"`
}

func init() {
	Schemas[RelSources] = columnsOf(SourceRow{})
	Schemas[RelProjections] = columnsOf(ProjectionRow{})
}
