package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/engine"
)

// listFormat is the columnar format a list request asks for ("": JSON):
// the output parameter, else the Accept header. (The run list's format
// parameter already filters runs by their source format.)
func listFormat(r *http.Request) (string, error) {
	switch v := r.URL.Query().Get("output"); v {
	case "":
		return acceptsColumnar(r.Header.Get("Accept")), nil
	case "json":
		return "", nil
	case fmtArrow, fmtParquet:
		return v, nil
	default:
		return "", badRequest("parameter output=%q: want json, arrow or parquet", v)
	}
}

// runsColumnar answers a run list page as Arrow or Parquet: the page's runs
// with every column of runs, their Dataset and duration_ms, in page order.
// The next page's cursor and the filter's total come as the X-Next-Cursor
// and X-Total-Count headers, since a columnar answer has no envelope.
func (s *Server) runsColumnar(w http.ResponseWriter, r *http.Request, g Generation, f *runFilter, cols []string, pageSQL, sig, format string) error {
	start := time.Now()
	keys, sorts, err := s.pageKeys(r.Context(), g, pageSQL)
	if err != nil {
		return err
	}
	next := ""
	if int64(len(keys)) > f.limit {
		keys = keys[:f.limit]
		k := keys[len(keys)-1]
		next = encodeCursor(runCursor{Snapshot: g.ID(), Filter: sig, Value: jsonValue(sorts[f.limit-1]), Dataset: k.dataset, File: k.file, Session: k.session})
	}
	total, err := s.runTotal(r.Context(), g, f, sig)
	if err != nil {
		return err
	}
	sql := "SELECT t.* EXCLUDE (_sort_), date_diff('millisecond', t.started_at, t.ended_at) AS duration_ms FROM " + f.from(cols) + " t"
	if len(keys) == 0 {
		sql += " WHERE false"
	} else {
		// The page's order is the keys' order: a join with them, numbered,
		// sorts it without sorting again by the run list's sort.
		values := make([]string, len(keys))
		for i, k := range keys {
			values[i] = fmt.Sprintf("(%s, %s, %s, %d)", engine.Literal(k.dataset), engine.Literal(k.file), engine.Literal(k.session), i)
		}
		sql += " JOIN (VALUES " + strings.Join(values, ", ") + ") page(d, f, s, i) ON t.dataset = page.d AND t._file_ = page.f AND t.session_id = page.s WHERE " +
			keysFilter(keys) + " ORDER BY page.i"
	}
	header := http.Header{}
	header.Set("X-Next-Cursor", next)
	header.Set("X-Total-Count", strconv.FormatInt(total, 10))
	return s.streamColumnar(w, r, g, sql, engine.QueryOptions{MaxRows: f.limit, Truncate: true, Timeout: s.cfg.MaxTimeout}, format, header, start)
}
