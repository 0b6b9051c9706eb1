package catalog

import "github.com/pchronicle/pchronicle/internal/model"

// SourceRows returns the Dataset's sources relation.
func (d *Dataset) SourceRows() []model.SourceRow { return d.sourceRows(d.Sources) }

func (d *Dataset) sourceRows(srcs []*Source) []model.SourceRow {
	rows := make([]model.SourceRow, len(srcs))
	for i, s := range srcs {
		rows[i] = d.sourceRow(s)
	}
	return rows
}

// sourceRow is one source's row of the sources relation.
func (d *Dataset) sourceRow(s *Source) model.SourceRow {
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
		r.SnapshotRef = model.Str(s.PinRef())
		r.RevisionKind = model.Str(s.Revision.RevisionKind())
	}
	return r
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
