package server

import (
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
)

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.cfg.Version})
	return nil
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	g, release, err := s.cfg.Runtime.Acquire()
	if err != nil {
		return &apiError{status: http.StatusServiceUnavailable, code: CodeNotReady, msg: "not ready: " + err.Error()}
	}
	defer release()
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "snapshot_id": g.ID()})
	return nil
}

// datasetInfo summarizes one mounted Dataset.
type datasetInfo struct {
	Name     string         `json:"name"`
	Alias    string         `json:"alias"`
	URI      string         `json:"uri"`
	Sources  int            `json:"sources"`
	ByStatus map[string]int `json:"by_status"`
	// ByFormat counts sources by detected format; a file not yet read
	// (detection is lazy) counts as "undetected".
	ByFormat map[string]int `json:"by_format"`
	ByKind   map[string]int `json:"by_kind"`
	Errors   []sourceError  `json:"errors"`
	// Skipped lists the files queries found to be no trajectory (or
	// unreadable, under --skip-unreadable), with why; detection is lazy, so
	// only those read so far. SkippedTotal counts them all.
	Skipped      []catalog.SkippedFile `json:"skipped"`
	SkippedTotal int                   `json:"skipped_total"`
}

type sourceError struct {
	File  string `json:"_file_"`
	Error string `json:"error"`
}

// maxListedErrors bounds the source errors (and the skipped files) a
// catalog response lists.
const maxListedErrors = 50

func summarize(d *catalog.Dataset) datasetInfo {
	info := datasetInfo{Name: d.Mount.NamespacePath(), Alias: d.Mount.Alias, URI: catalog.RedactURI(d.Mount.URI),
		Sources: len(d.Sources), ByStatus: map[string]int{}, ByFormat: map[string]int{}, ByKind: map[string]int{}, Errors: []sourceError{}}
	for _, row := range d.SourceRows() {
		info.ByStatus[row.Status]++
		info.ByKind[row.SourceType]++
		f := "undetected"
		if row.Format != nil {
			f = *row.Format
		}
		info.ByFormat[f]++
		if row.Error != nil && len(info.Errors) < maxListedErrors {
			info.Errors = append(info.Errors, sourceError{File: row.File, Error: *row.Error})
		}
	}
	skipped := d.Skipped()
	info.SkippedTotal = len(skipped)
	info.Skipped = orEmpty(skipped[:min(len(skipped), maxListedErrors)])
	return info
}

func (s *Server) catalogBody(g Generation) map[string]any {
	snap := g.Snapshot()
	datasets := make([]datasetInfo, 0, len(snap.Datasets))
	var def any
	for _, d := range snap.Datasets {
		datasets = append(datasets, summarize(d))
		if d.Mount.Alias == catalog.DefaultAlias && len(snap.Datasets) == 1 {
			def = d.Mount.NamespacePath()
		}
	}
	built, failed := g.Acceleration()
	return map[string]any{
		"snapshot_id":     g.ID(),
		"created_at":      snap.BuiltAt,
		"generation":      g.Number(),
		"published_at":    g.Built(),
		"default_dataset": def,
		"error_policy":    snap.Options.Errors,
		"datasets":        datasets,
		"acceleration":    map[string]any{"layers": orEmpty(built), "failed": orEmpty(failed)},
		"refresh":         s.cfg.Runtime.Status(),
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) getCatalog(w http.ResponseWriter, r *http.Request, g Generation) error {
	writeJSON(w, http.StatusOK, s.catalogBody(g))
	return nil
}

// postCatalog refreshes: a complete new Snapshot is built off the lock and
// swapped in; on failure the old one keeps serving and the answer says so.
func (s *Server) postCatalog(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	report, err := s.cfg.Runtime.Refresh(r.Context())
	if err != nil {
		ae := classify(err)
		if ae.code == CodeInternal || ae.code == CodeNotFound {
			ae = &apiError{status: http.StatusServiceUnavailable, code: CodeRefreshFailed,
				msg: "refresh failed; the previous snapshot keeps serving: " + catalog.RedactURI(err.Error())}
		}
		ae.extra = map[string]any{"refresh": report}
		return ae
	}
	g, release, err := s.cfg.Runtime.Acquire()
	if err != nil {
		return err
	}
	defer release()
	body := s.catalogBody(g)
	body["refreshed"] = report
	body["refresh_ms"] = time.Since(start).Milliseconds()
	w.Header().Set("ETag", `"`+g.ID()+`"`)
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) namespaces(w http.ResponseWriter, r *http.Request, g Generation) error {
	size, err := intParam(r, "page_size", catalog.DefaultPageSize, 1, catalog.MaxPageSize)
	if err != nil {
		return err
	}
	items, next, err := g.Snapshot().ListNamespaces(int(size), r.URL.Query().Get("page_token"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot_id": g.ID(), "namespaces": orEmpty(items), "next_page_token": next})
	return nil
}

// datasetParam returns the dataset a request names, or the only one.
func datasetParam(r *http.Request, g Generation) (string, error) {
	if d := r.URL.Query().Get("dataset"); d != "" {
		return d, nil
	}
	snap := g.Snapshot()
	if len(snap.Datasets) == 1 {
		return snap.Datasets[0].Mount.NamespacePath(), nil
	}
	names := make([]string, len(snap.Datasets))
	for i, d := range snap.Datasets {
		names[i] = d.Mount.NamespacePath()
	}
	sort.Strings(names)
	return "", badRequest("parameter dataset is required: this server mounts %d Datasets (%v)", len(names), names)
}

func (s *Server) sources(w http.ResponseWriter, r *http.Request, g Generation) error {
	ds, err := datasetParam(r, g)
	if err != nil {
		return err
	}
	size, err := intParam(r, "page_size", catalog.DefaultPageSize, 1, catalog.MaxPageSize)
	if err != nil {
		return err
	}
	rows, next, err := g.Snapshot().ListSources(ds, int(size), r.URL.Query().Get("page_token"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot_id": g.ID(), "dataset": ds, "sources": orEmpty(rows), "next_page_token": next})
	return nil
}

func (s *Server) source(w http.ResponseWriter, r *http.Request, g Generation) error {
	ds, err := datasetParam(r, g)
	if err != nil {
		return err
	}
	file := r.URL.Query().Get("file")
	if file == "" {
		return badRequest("parameter file (the source's _file_) is required")
	}
	row, err := g.Snapshot().DescribeSource(ds, file)
	if err != nil {
		return err
	}
	body := map[string]any{"snapshot_id": g.ID(), "dataset": ds, "source": row}
	src, err := g.Snapshot().LookupSource(ds, file)
	if err == nil && len(src.Projections) > 0 {
		var projections []model.ProjectionRow
		for _, p := range src.Dataset().ProjectionRows() {
			if p.File == file {
				projections = append(projections, p)
			}
		}
		body["projections"] = projections
	} else if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
