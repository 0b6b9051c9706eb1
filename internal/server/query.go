package server

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/route"
)

// queryRequest is the body of POST /api/query and /api/query/evidence,
// decoded strictly: it is our own format.
type queryRequest struct {
	SQL string `json:"sql"`
	// MaxRows caps the rows returned (the server's cap is the most);
	// reading stops there and the answer says truncated.
	MaxRows int64 `json:"max_rows"`
	// TimeoutMS bounds the query's run time (the server's cap is the most).
	TimeoutMS int64 `json:"timeout_ms"`
	// Format is json (default), csv, ndjson, arrow (an Arrow IPC stream) or
	// parquet; all but json stream (query_columnar.go for the last two).
	Format string `json:"format"`
	// Routing false turns the source-routing index off for this query.
	Routing *bool `json:"routing"`
}

// maxQueryBody bounds a query request's body.
const maxQueryBody = 1 << 20

// decodeQuery reads and decodes a query request's body.
func decodeQuery(r *http.Request) (*queryRequest, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxQueryBody+1))
	if err != nil {
		return nil, badRequest("request body: %v", err)
	}
	return parseQueryRequest(body, r.URL.Query().Get("format"), r.Header.Get("Accept"))
}

// parseQueryRequest decodes a query request strictly: one JSON object of
// known fields in valid UTF-8 and nothing after it, so that what runs is
// exactly what the caller sent (the decoder would otherwise replace bad
// bytes in sql with U+FFFD, and ignore a second object). When the body names
// no format, the URL's format= (urlFormat) does, else the Accept header.
func parseQueryRequest(body []byte, urlFormat, accept string) (*queryRequest, error) {
	if len(body) > maxQueryBody {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, code: CodeBodyTooLarge,
			msg: fmt.Sprintf("request body: larger than %d bytes", maxQueryBody)}
	}
	if !utf8.Valid(body) {
		return nil, &apiError{status: http.StatusBadRequest, code: CodeInvalidUTF8,
			msg: fmt.Sprintf("request body: invalid UTF-8 at byte %d", invalidUTF8At(body))}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var q queryRequest
	if err := dec.Decode(&q); err != nil {
		return nil, badRequest("request body: want a JSON object {\"sql\": ...}: %v", err)
	}
	if off := dec.InputOffset(); len(bytes.TrimLeft(body[off:], " \t\r\n")) > 0 {
		return nil, badRequest("request body: unexpected data after the JSON object at byte %d", off)
	}
	if strings.TrimSpace(q.SQL) == "" {
		return nil, badRequest("request body: sql is empty")
	}
	if q.MaxRows < 0 || q.TimeoutMS < 0 {
		return nil, badRequest("request body: max_rows and timeout_ms must not be negative")
	}
	if q.Format == "" {
		q.Format = urlFormat
	}
	if q.Format == "" {
		switch {
		case acceptsColumnar(accept) != "":
			q.Format = acceptsColumnar(accept)
		case strings.Contains(accept, "text/csv"):
			q.Format = "csv"
		case strings.Contains(accept, "application/x-ndjson"):
			q.Format = "ndjson"
		default:
			q.Format = "json"
		}
	}
	switch q.Format {
	case "json", "csv", "ndjson", fmtArrow, fmtParquet:
	default:
		return nil, badRequest("request body: format %q: want json, csv, ndjson, arrow or parquet", q.Format)
	}
	return &q, nil
}

// invalidUTF8At is the offset of the first byte of b that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// Routing is the source_routing field: what the index did for a query.
type Routing struct {
	Outcome string `json:"outcome"`
	Sources int    `json:"sources,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func (s *Server) query(w http.ResponseWriter, r *http.Request, g Generation) error {
	return s.runQuery(w, r, g, s.cfg.MaxRows, false)
}

// evidence is a bounded query whose answer always carries the routing
// report: what a caller inspecting why a query was fast or slow asks.
func (s *Server) evidence(w http.ResponseWriter, r *http.Request, g Generation) error {
	return s.runQuery(w, r, g, s.cfg.EvidenceMaxRows, true)
}

func (s *Server) runQuery(w http.ResponseWriter, r *http.Request, g Generation, maxRows int64, evidence bool) error {
	q, err := decodeQuery(r)
	if err != nil {
		return err
	}
	if evidence && q.Format != "json" {
		return badRequest("the evidence route answers JSON only")
	}
	start := time.Now()
	an, err := g.Analyze(r.Context(), q.SQL)
	if err != nil {
		return err
	}
	opts := engine.QueryOptions{MaxRows: maxRows, Truncate: true, Timeout: s.cfg.MaxTimeout}
	if q.MaxRows > 0 && q.MaxRows < maxRows {
		opts.MaxRows = q.MaxRows
	}
	if t := time.Duration(q.TimeoutMS) * time.Millisecond; t > 0 && (opts.Timeout <= 0 || t < opts.Timeout) {
		opts.Timeout = t
	}
	routing := Routing{Outcome: route.NotApplicable, Reason: "routing turned off by the request"}
	if q.Routing == nil || *q.Routing {
		d := g.Route(r.Context(), an)
		routing = Routing{Outcome: d.Outcome, Sources: d.Sources, Reason: d.Reason}
		if d.Outcome == route.Applied {
			opts.Restrict = d.Restrict
		}
	}
	if q.Format == fmtArrow || q.Format == fmtParquet {
		return s.streamColumnar(w, r, g, q.SQL, opts, q.Format, http.Header{"X-Source-Routing": {routing.Outcome}}, start)
	}
	rows, err := g.Stream(r.Context(), q.SQL, opts)
	if err != nil {
		return err
	}
	defer rows.Close()
	if q.Format != "json" {
		return s.streamRows(w, rows, q.Format, g.ID(), routing, start)
	}
	out := [][]any{}
	for rows.Next() {
		out = append(out, rows.Values())
	}
	if err := rows.Err(); err != nil {
		return err
	}
	cols := make([]map[string]string, len(rows.Columns))
	for i, c := range rows.Columns {
		cols[i] = map[string]string{"name": c, "type": rows.Types[i]}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"snapshot_id":    g.ID(),
		"columns":        cols,
		"rows":           out,
		"row_count":      len(out),
		"truncated":      rows.Truncated(),
		"elapsed_ms":     float64(time.Since(start).Microseconds()) / 1000,
		"pruning":        orEmpty(rows.Pruning),
		"source_routing": routing,
		"warnings":       orEmpty(rows.Warnings),
	})
	return nil
}

// streamRows writes CSV or NDJSON as rows are read. What is only known at
// the end (truncation, elapsed time, a failure after the first row) comes
// in trailers; an NDJSON stream that fails also ends with an error line.
func (s *Server) streamRows(w http.ResponseWriter, rows *engine.Rows, format, snapshot string, routing Routing, start time.Time) error {
	h := w.Header()
	h.Set("Trailer", "X-Truncated, X-Row-Count, X-Elapsed-Ms, X-Error-Code")
	h.Set("X-Source-Routing", routing.Outcome)
	h.Set("X-Warnings", fmt.Sprint(len(rows.Warnings)))
	var write func([]any) error
	switch format {
	case "csv":
		h.Set("Content-Type", "text/csv; charset=utf-8")
		cw := csv.NewWriter(w)
		defer cw.Flush()
		cw.Write(rows.Columns)
		write = func(v []any) error {
			cells := make([]string, len(v))
			for i, x := range v {
				cells[i] = csvCell(x)
			}
			return cw.Write(cells)
		}
	default:
		h.Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		write = func(v []any) error {
			obj := make(map[string]any, len(v))
			for i, c := range rows.Columns {
				obj[c] = v[i]
			}
			return enc.Encode(obj)
		}
	}
	w.WriteHeader(http.StatusOK)
	n := 0
	for rows.Next() {
		if err := write(rows.Values()); err != nil {
			return nil // the client went away
		}
		n++
		if n%1000 == 0 {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
	}
	h.Set("X-Truncated", fmt.Sprint(rows.Truncated()))
	h.Set("X-Row-Count", fmt.Sprint(n))
	h.Set("X-Elapsed-Ms", fmt.Sprintf("%.3f", float64(time.Since(start).Microseconds())/1000))
	if err := rows.Err(); err != nil {
		ae := classify(err)
		h.Set("X-Error-Code", ae.code)
		if format == "ndjson" {
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": ae.code, "message": ae.msg}})
		}
		s.log.Warn("query failed while streaming", "snapshot_id", snapshot, "code", ae.code)
	}
	return nil
}

func csvCell(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case time.Time:
		return t.UTC().Format(time.RFC3339Nano)
	case []any, map[string]any:
		b, _ := json.Marshal(t)
		return string(b)
	}
	return fmt.Sprint(v)
}
