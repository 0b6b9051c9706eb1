package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/columnar"
	"github.com/pchronicle/pchronicle/internal/engine"
)

// Columnar answers (docs/http-api.md, "Arrow and Parquet"): a query's
// result as an Arrow IPC stream or a Parquet file, streamed from the
// engine's Arrow record batches with DuckDB's types, under the same row
// cap, timeout and errors as the JSON answer.
const (
	fmtArrow    = "arrow"
	fmtParquet  = "parquet"
	mimeArrow   = "application/vnd.apache.arrow.stream"
	mimeParquet = "application/vnd.apache.parquet"
)

// acceptsColumnar returns the columnar format an Accept header asks for,
// or "".
func acceptsColumnar(accept string) string {
	switch {
	case strings.Contains(accept, mimeArrow):
		return fmtArrow
	case strings.Contains(accept, mimeParquet):
		return fmtParquet
	}
	return ""
}

// streamColumnar answers a query as Arrow or Parquet. An error before the
// first batch is an ordinary JSON error answer with its status. What is
// known only at the end comes in trailers, as for CSV and NDJSON
// (X-Truncated, X-Row-Count, X-Elapsed-Ms, and X-Error-Code with
// X-Error-Message for a failure after the answer started), and a Parquet
// file also carries it in its footer's key-value metadata
// (pchronicle.truncated, pchronicle.row_count, pchronicle.snapshot_id),
// which survives where trailers do not (a Directory worker's answer).
// X-Max-Rows says the cap, so a client that sees that many rows knows the
// answer may be cut.
// header holds the route's own headers, set before the answer starts.
func (s *Server) streamColumnar(w http.ResponseWriter, r *http.Request, g Generation, sql string, opts engine.QueryOptions, format string, header http.Header, start time.Time) error {
	rows, err := g.StreamArrow(r.Context(), sql, opts)
	if err != nil {
		return err
	}
	defer rows.Close()
	h := w.Header()
	for k, v := range header {
		h[k] = v
	}
	h.Set("Trailer", "X-Truncated, X-Row-Count, X-Elapsed-Ms, X-Error-Code, X-Error-Message")
	h.Set("X-Warnings", fmt.Sprint(len(rows.Warnings)))
	h.Set("X-Snapshot-Id", g.ID())
	h.Set("X-Max-Rows", strconv.FormatInt(opts.MaxRows, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	var write func() error
	if format == fmtArrow {
		h.Set("Content-Type", mimeArrow)
		write = func() error { return columnar.WriteArrowStream(w, rows) }
	} else {
		h.Set("Content-Type", mimeParquet)
		h.Set("Content-Disposition", `attachment; filename="result.parquet"`)
		write = func() error {
			return columnar.WriteParquet(w, rows, func() map[string]string {
				return map[string]string{
					"pchronicle.truncated":   strconv.FormatBool(rows.Truncated()),
					"pchronicle.row_count":   strconv.FormatInt(rows.RowsRead(), 10),
					"pchronicle.snapshot_id": g.ID(),
				}
			})
		}
	}
	w.WriteHeader(http.StatusOK)
	werr := write()
	h.Set("X-Truncated", strconv.FormatBool(rows.Truncated()))
	h.Set("X-Row-Count", strconv.FormatInt(rows.RowsRead(), 10))
	h.Set("X-Elapsed-Ms", fmt.Sprintf("%.3f", float64(time.Since(start).Microseconds())/1000))
	if err := rows.Err(); err != nil {
		ae := classify(err)
		h.Set("X-Error-Code", ae.code)
		h.Set("X-Error-Message", ae.msg)
		s.log.Warn("query failed while streaming", "snapshot_id", g.ID(), "code", ae.code)
	} else if werr != nil {
		s.log.Warn("columnar answer not written", "snapshot_id", g.ID(), "err", werr)
	}
	return nil
}
