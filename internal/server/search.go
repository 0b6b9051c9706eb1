package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
)

// Search across the Snapshot's trajectories: text in messages, reasoning
// and observations, and in tool calls' arguments and results. Each hit is
// a deep link to its step: (dataset, _file_, session_id, step_index).
// Results are in a stable order within one Snapshot, so an offset cursor
// bound to the Snapshot pages them without repeats.

// searchFields are the step columns searched.
var searchFields = []string{"message_value", "reasoning", "observation"}

func searchSQL(d *catalog.Dataset, needle, like string) string {
	ds, schema := engine.Literal(d.Mount.NamespacePath()), engine.Ident(d.Mount.Alias)
	var parts []string
	for _, col := range searchFields {
		parts = append(parts, fmt.Sprintf(`SELECT %[1]s AS dataset, _file_, session_id, step_index, %[2]s AS field,
  substr(%[3]s, greatest(1, strpos(lower(%[3]s), %[4]s) - 80), 240) AS snippet
FROM %[5]s.steps WHERE lower(%[3]s) LIKE %[6]s ESCAPE '\'`, ds, engine.Literal(col), col, engine.Literal(needle), schema, engine.Literal(like)))
	}
	for _, col := range []string{"arguments", "result"} {
		parts = append(parts, fmt.Sprintf(`SELECT %[1]s AS dataset, c._file_, c.session_id, s.step_index, %[2]s AS field,
  substr(c.%[3]s, greatest(1, strpos(lower(c.%[3]s), %[4]s) - 80), 240) AS snippet
FROM %[5]s.tool_calls c JOIN %[5]s.steps s ON s._file_ = c._file_ AND s.session_id = c.session_id AND s.step_id = c.step_id
WHERE lower(c.%[3]s) LIKE %[6]s ESCAPE '\'`, ds, engine.Literal("tool_"+col), col, engine.Literal(needle), schema, engine.Literal(like)))
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

type searchCursor struct {
	Snapshot string `json:"s"`
	Query    string `json:"q"`
	Offset   int64  `json:"o"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, g Generation) error {
	text := r.URL.Query().Get("q")
	if strings.TrimSpace(text) == "" {
		return badRequest("parameter q (the text to search) is required")
	}
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	snap := g.Snapshot()
	datasets := snap.Datasets
	if ds := r.URL.Query().Get("dataset"); ds != "" {
		d, err := lookupDataset(snap, ds)
		if err != nil {
			return err
		}
		datasets = []*catalog.Dataset{d}
	}
	scope := text + "\x00" + r.URL.Query().Get("dataset")
	var offset int64
	if tok := r.URL.Query().Get("cursor"); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		var c searchCursor
		if err != nil || json.Unmarshal(raw, &c) != nil || c.Snapshot == "" {
			return &catalog.PageTokenError{Reason: "not a cursor issued by pchronicle"}
		}
		if c.Snapshot != g.ID() {
			return &catalog.PageTokenError{Stale: true, Reason: fmt.Sprintf("cursor issued by Snapshot %s, not %s; search again", c.Snapshot, g.ID())}
		}
		if c.Query != scope || c.Offset < 0 {
			return &catalog.PageTokenError{Reason: "cursor issued for another search"}
		}
		offset = c.Offset
	}
	like := "%" + escapeLike(strings.ToLower(text)) + "%"
	parts := make([]string, len(datasets))
	for i, d := range datasets {
		parts[i] = searchSQL(d, strings.ToLower(text), like)
	}
	sql := fmt.Sprintf("SELECT * FROM (%s) ORDER BY dataset, _file_, session_id, step_index, field LIMIT %d OFFSET %d",
		strings.Join(parts, "\nUNION ALL\n"), limit+1, offset)
	rows, err := g.Stream(r.Context(), sql, engine.QueryOptions{MaxRows: -1, Timeout: s.cfg.MaxTimeout})
	if err != nil {
		return err
	}
	defer rows.Close()
	hits := []map[string]any{}
	for rows.Next() {
		v := rows.Values()
		hits = append(hits, map[string]any{
			"key":        engine.StorylineKey{Dataset: v[0].(string), File: v[1].(string), SessionID: v[2].(string)},
			"step_index": v[3], "field": v[4], "snippet": v[5],
		})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	next := ""
	if int64(len(hits)) > limit {
		hits = hits[:limit]
		b, _ := json.Marshal(searchCursor{Snapshot: g.ID(), Query: scope, Offset: offset + limit})
		next = base64.RawURLEncoding.EncodeToString(b)
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot_id": g.ID(), "q": text, "hits": hits, "next_cursor": next})
	return nil
}
