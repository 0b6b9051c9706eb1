package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/model"
)

// The run list: server-side filters, a sort, keyset paging with a cursor
// bound to the Snapshot (offset paging would repeat or skip runs), and a
// total computed once per generation and filter — SQL point queries never
// pay for it.

// sortable maps a sort key to its SQL expression and type.
var sortable = map[string]struct{ expr, typ string }{
	"started_at":        {"started_at", "TIMESTAMPTZ"},
	"ended_at":          {"ended_at", "TIMESTAMPTZ"},
	"duration":          {"date_diff('millisecond', started_at, ended_at)", "BIGINT"},
	"step_count":        {"step_count", "BIGINT"},
	"tool_call_count":   {"tool_call_count", "BIGINT"},
	"prompt_tokens":     {"prompt_tokens", "BIGINT"},
	"completion_tokens": {"completion_tokens", "BIGINT"},
	"cost_usd":          {"cost_usd", "DOUBLE"},
	"reward":            {"reward", "DOUBLE"},
	"agent_name":        {"agent_name", "VARCHAR"},
	"agent_model_name":  {"agent_model_name", "VARCHAR"},
	"status":            {"status", "VARCHAR"},
	"source_format":     {"source_format", "VARCHAR"},
	"_file_":            {"_file_", "VARCHAR"},
	"session_id":        {"session_id", "VARCHAR"},
}

// runFilter is a run list request, normalized.
type runFilter struct {
	datasets []*catalog.Dataset
	where    []string
	sortKey  string
	desc     bool
	limit    int64
}

func (f *runFilter) signature() string {
	names := make([]string, len(f.datasets))
	for i, d := range f.datasets {
		names[i] = d.Mount.Alias
	}
	return strings.Join(names, ",") + "\x00" + strings.Join(f.where, " AND ") + "\x00" + f.sortKey + fmt.Sprint(f.desc)
}

func parseRunFilter(r *http.Request, g Generation) (*runFilter, error) {
	q := r.URL.Query()
	f := &runFilter{sortKey: "started_at", desc: true}
	snap := g.Snapshot()
	if ds := q.Get("dataset"); ds != "" {
		d, err := lookupDataset(snap, ds)
		if err != nil {
			return nil, err
		}
		f.datasets = []*catalog.Dataset{d}
	} else {
		f.datasets = snap.Datasets
	}
	lit := engine.Literal
	if v := q.Get("file_prefix"); v != "" {
		f.where = append(f.where, "_file_ LIKE "+lit(escapeLike(v)+"%")+" ESCAPE '\\'")
	}
	for _, p := range [][2]string{{"agent", "agent_name"}, {"model", "agent_model_name"}, {"status", "status"},
		{"session_id", "session_id"}, {"run_id", "run_id"}} {
		if vals := q[p[0]]; len(vals) > 0 {
			f.where = append(f.where, p[1]+" IN ("+literals(vals)+")")
		}
	}
	if v := q.Get("format"); v != "" {
		f.where = append(f.where, fmt.Sprintf("(source_format = %s OR source_format LIKE %s ESCAPE '\\')", lit(v), lit(escapeLike(v)+"/%")))
	}
	for _, p := range [][2]string{{"since", ">="}, {"until", "<"}} {
		param, op := p[0], p[1]
		if v := q.Get(param); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, badRequest("parameter %s=%q: want an RFC 3339 time (2026-01-31T12:00:00Z)", param, v)
			}
			f.where = append(f.where, fmt.Sprintf("started_at %s %s::TIMESTAMPTZ", op, lit(t.UTC().Format(time.RFC3339Nano))))
		}
	}
	if v := q.Get("q"); v != "" {
		like := lit("%" + escapeLike(strings.ToLower(v)) + "%")
		var ors []string
		for _, col := range []string{"_file_", "session_id", "run_id", "agent_name", "agent_model_name", "source_format"} {
			ors = append(ors, fmt.Sprintf("lower(coalesce(%s, '')) LIKE %s ESCAPE '\\'", col, like))
		}
		f.where = append(f.where, "("+strings.Join(ors, " OR ")+")")
	}
	sortTerms := q.Get("sort")
	if sortTerms != "" {
		key, desc := strings.TrimPrefix(sortTerms, "-"), strings.HasPrefix(sortTerms, "-")
		if _, ok := sortable[key]; !ok {
			return nil, badRequest("parameter sort=%q: want one of %s, optionally prefixed by - for descending", sortTerms, sortKeys())
		}
		f.sortKey, f.desc = key, desc
	}
	if o := q.Get("order"); o != "" {
		switch o {
		case "asc":
			f.desc = false
		case "desc":
			f.desc = true
		default:
			return nil, badRequest("parameter order=%q: want asc or desc", o)
		}
	}
	limit, err := intParam(r, "limit", 50, 1, 1000)
	if err != nil {
		return nil, err
	}
	f.limit = limit
	return f, nil
}

func sortKeys() string {
	keys := make([]string, 0, len(sortable))
	for k := range sortable {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func literals(vals []string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = engine.Literal(v)
	}
	return strings.Join(out, ", ")
}

// escapeLike escapes LIKE's wildcards with a backslash.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func lookupDataset(snap *catalog.Snapshot, name string) (*catalog.Dataset, error) {
	for _, d := range snap.Datasets {
		if d.Mount.NamespacePath() == name {
			return d, nil
		}
	}
	if d, ok := snap.Dataset(name); ok {
		return d, nil
	}
	return nil, fmt.Errorf("Dataset %q: %w", name, catalog.ErrNotFound)
}

// from is the run list's relation: one Dataset's runs, or the union of all,
// each row tagged with its Dataset's namespace path.
func (f *runFilter) from(cols []string) string {
	parts := make([]string, len(f.datasets))
	for i, d := range f.datasets {
		parts[i] = fmt.Sprintf("SELECT %s AS dataset, %s FROM %s.runs", engine.Literal(d.Mount.NamespacePath()), strings.Join(cols, ", "), engine.Ident(d.Mount.Alias))
	}
	return "(" + strings.Join(parts, " UNION ALL ") + ")"
}

// runCursor resumes a run list after its last row.
type runCursor struct {
	Snapshot string `json:"s"`
	Filter   string `json:"f"` // fingerprint of the filter and sort
	Value    any    `json:"v"`
	Dataset  string `json:"d"`
	File     string `json:"p"`
	Session  string `json:"i"`
}

func encodeCursor(c runCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(token, snapshot, filter string) (*runCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	var c runCursor
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Snapshot == "" {
		return nil, &catalog.PageTokenError{Reason: "not a cursor issued by pchronicle"}
	}
	if c.Snapshot != snapshot {
		return nil, &catalog.PageTokenError{Stale: true, Reason: fmt.Sprintf("cursor issued by Snapshot %s, not %s; restart the listing", c.Snapshot, snapshot)}
	}
	if c.Filter != filter {
		return nil, &catalog.PageTokenError{Reason: "cursor issued for other filters or another sort"}
	}
	return &c, nil
}

// after is the keyset condition for rows after the cursor, in the order
// sort NULLS LAST, then (dataset, _file_, session_id) ascending.
func (f *runFilter) after(c *runCursor) (string, error) {
	s := sortable[f.sortKey]
	tie := fmt.Sprintf("(dataset > %[1]s OR (dataset = %[1]s AND (_file_ > %[2]s OR (_file_ = %[2]s AND session_id > %[3]s))))",
		engine.Literal(c.Dataset), engine.Literal(c.File), engine.Literal(c.Session))
	if c.Value == nil {
		return fmt.Sprintf("(%s IS NULL AND %s)", s.expr, tie), nil
	}
	v, err := sqlValue(c.Value, s.typ)
	if err != nil {
		return "", &catalog.PageTokenError{Reason: "cursor value: " + err.Error()}
	}
	op := ">"
	if f.desc {
		op = "<"
	}
	return fmt.Sprintf("(%[1]s %[2]s %[3]s OR (%[1]s = %[3]s AND %[4]s) OR %[1]s IS NULL)", s.expr, op, v, tie), nil
}

// sqlValue renders a cursor value (decoded from JSON) as a literal.
func sqlValue(v any, typ string) (string, error) {
	switch typ {
	case "TIMESTAMPTZ":
		s, ok := v.(string)
		if _, err := time.Parse(time.RFC3339Nano, s); !ok || err != nil {
			return "", fmt.Errorf("not a timestamp")
		}
		return engine.Literal(s) + "::TIMESTAMPTZ", nil
	case "BIGINT", "DOUBLE":
		n, ok := v.(float64)
		if !ok {
			return "", fmt.Errorf("not a number")
		}
		if typ == "BIGINT" {
			return fmt.Sprintf("%d", int64(n)), nil
		}
		return fmt.Sprintf("%v::DOUBLE", n), nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("not a string")
	}
	return engine.Literal(s), nil
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request, g Generation) error {
	f, err := parseRunFilter(r, g)
	if err != nil {
		return err
	}
	cols := make([]string, 0, len(model.Schemas[model.RelRuns])+1)
	for _, c := range model.ColumnNames(model.RelRuns) {
		cols = append(cols, engine.Ident(c))
	}
	sortExpr := sortable[f.sortKey].expr
	cols = append(cols, sortExpr+" AS _sort_")
	where := append([]string(nil), f.where...)
	sig := f.signature()
	if tok := r.URL.Query().Get("cursor"); tok != "" {
		c, err := decodeCursor(tok, g.ID(), sig)
		if err != nil {
			return err
		}
		cond, err := f.after(c)
		if err != nil {
			return err
		}
		where = append(where, cond)
	}
	dir := "ASC"
	if f.desc {
		dir = "DESC"
	}
	sql := fmt.Sprintf("SELECT dataset, _file_, session_id, _sort_ FROM %s%s ORDER BY _sort_ %s NULLS LAST, dataset, _file_, session_id LIMIT %d",
		f.from(cols), whereClause(where), dir, f.limit+1)
	as, err := listFormat(r)
	if err != nil {
		return err
	}
	if as != "" {
		return s.runsColumnar(w, r, g, f, cols, sql, sig, as)
	}
	out, err := s.pageRows(r.Context(), g, f, cols, sql)
	if err != nil {
		return err
	}
	next := ""
	if int64(len(out)) > f.limit { // one row more than a page: there is a next page
		out = out[:f.limit]
		m := out[len(out)-1]
		next = encodeCursor(runCursor{Snapshot: g.ID(), Filter: sig, Value: jsonValue(m["_sort_"]), Dataset: m["dataset"].(string),
			File: m["_file_"].(string), Session: m["session_id"].(string)})
	}
	body := map[string]any{"snapshot_id": g.ID(), "runs": orEmpty(out), "sort": f.sortKey, "order": strings.ToLower(dir), "next_cursor": next}
	total, err := s.runTotal(r.Context(), g, f, sig)
	if err != nil {
		return err
	}
	body["total"] = total
	for _, m := range out {
		delete(m, "_sort_")
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// pageRows picks a page on the identities alone (pageSQL selects dataset,
// _file_, session_id and the sort value in page order), then reads those runs whole: a top-N
// over every column of 100,000 runs costs about ten times the top-N over
// the identity and the sort key (docs/performance.md, Web Explorer).
func (s *Server) pageRows(ctx context.Context, g Generation, f *runFilter, cols []string, pageSQL string) ([]map[string]any, error) {
	order, _, err := s.pageKeys(ctx, g, pageSQL)
	if err != nil || len(order) == 0 {
		return nil, err
	}
	rows, err := g.Stream(ctx, "SELECT * FROM "+f.from(cols)+" WHERE "+keysFilter(order), engine.QueryOptions{MaxRows: -1, Timeout: s.cfg.MaxTimeout})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byKey := make(map[runKey]map[string]any, len(order))
	for rows.Next() {
		m := runObject(rows.Columns, rows.Values())
		byKey[runKey{m["dataset"].(string), m["_file_"].(string), m["session_id"].(string)}] = m
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(order))
	for _, k := range order {
		m, ok := byKey[k]
		if !ok { // the same Snapshot answers both queries: cannot happen
			return nil, fmt.Errorf("run list: run (%s, %s, %s) of the page was not read back", k.dataset, k.file, k.session)
		}
		out = append(out, m)
	}
	return out, nil
}

// runKey identifies a run of the run list.
type runKey struct{ dataset, file, session string }

// pageKeys reads the identities of a page's runs, in page order, and their
// sort values.
func (s *Server) pageKeys(ctx context.Context, g Generation, pageSQL string) ([]runKey, []any, error) {
	keys, err := g.Stream(ctx, pageSQL, engine.QueryOptions{MaxRows: -1, Timeout: s.cfg.MaxTimeout})
	if err != nil {
		return nil, nil, err
	}
	defer keys.Close()
	var order []runKey
	var sorts []any
	for keys.Next() {
		v := keys.Values()
		order, sorts = append(order, runKey{v[0].(string), v[1].(string), v[2].(string)}), append(sorts, v[3])
	}
	return order, sorts, keys.Err()
}

// keysFilter narrows a run list's relation to the runs of keys: by _file_
// and session_id, which pruning and routing understand (a superset of the
// keys, as each pairs with the other's values).
func keysFilter(keys []runKey) string {
	files, sessions := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		files[k.file], sessions[k.session] = true, true
	}
	return "_file_ IN (" + literals(setKeys(files)) + ") AND session_id IN (" + literals(setKeys(sessions)) + ")"
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// runTotal counts the filtered runs once per generation and filter.
func (s *Server) runTotal(ctx context.Context, g Generation, f *runFilter, sig string) (int64, error) {
	v, err := g.Memo(ctx, "runs-total\x00"+sig, func(ctx context.Context) (any, error) {
		res, err := g.Stream(ctx, "SELECT count(*) FROM "+f.from([]string{"_file_", "session_id", "run_id", "agent_name",
			"agent_model_name", "status", "source_format", "started_at"})+whereClause(f.where), engine.QueryOptions{MaxRows: -1, Timeout: s.cfg.MaxTimeout})
		if err != nil {
			return nil, err
		}
		defer res.Close()
		var n int64
		if res.Next() {
			n, _ = res.Values()[0].(int64)
		}
		return n, res.Err()
	})
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
}

func whereClause(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// runObject is one result row as a JSON object, with the run's duration.
func runObject(cols []string, vals []any) map[string]any {
	m := make(map[string]any, len(cols)+1)
	for i, c := range cols {
		m[c] = vals[i]
	}
	if a, ok := m["started_at"].(time.Time); ok {
		if b, ok := m["ended_at"].(time.Time); ok {
			m["duration_ms"] = b.Sub(a).Milliseconds()
		}
	}
	for _, c := range []string{"extra", "scores", "subagent_refs"} {
		if s, ok := m[c].(string); ok && json.Valid([]byte(s)) {
			m[c] = json.RawMessage(s)
		}
	}
	return m
}

// jsonValue is how a sort value round-trips through a cursor.
func jsonValue(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return v
}
