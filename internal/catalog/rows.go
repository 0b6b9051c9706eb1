package catalog

import "github.com/pchronicle/pchronicle/internal/model"

// SourceRows returns the Dataset's sources relation.
func (d *Dataset) SourceRows() []model.SourceRow {
	rows := make([]model.SourceRow, 0, len(d.Sources))
	for _, s := range d.Sources {
		r := model.SourceRow{Dataset: d.Mount.NamespacePath(), File: s.File, Kind: "file", SourceType: string(s.Kind),
			Status: s.Status(), ProjectionCandidates: int64(len(s.Projections))}
		if s.Kind.IsStore() {
			r.Kind = "store"
		}
		if f := s.Format(); f != "" {
			r.Format = model.Str(f)
		} else {
			r.Format = model.Str(s.FormatHint)
		}
		if s.Err != nil {
			r.Error = model.Str(RedactURI(s.Err.Error()))
		} else {
			r.SizeBytes = model.Int(s.Size)
			r.ModifiedAt = model.Time(s.ModTime)
		}
		if s.Revision != nil {
			r.SnapshotRef = model.Str(s.Revision.Ref())
			r.RevisionKind = model.Str(s.Revision.RevisionKind())
		}
		rows = append(rows, r)
	}
	return rows
}

// ProjectionRows returns the Dataset's projections relation.
func (d *Dataset) ProjectionRows() []model.ProjectionRow {
	var rows []model.ProjectionRow
	for _, s := range d.Sources {
		for _, p := range s.Projections {
			r := model.ProjectionRow{File: s.File, ProjectionPath: p.File, Generation: p.Generation.Number,
				Fresh: p.Fresh, Selected: p.Selected, LastModified: model.Time(p.Generation.Manifest.CreatedAt)}
			if l := p.Generation.Manifest.Lineage; l != nil {
				r.LineageRevision = l.EventsRevision
			}
			rows = append(rows, r)
		}
	}
	return rows
}
