package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Paged reads of one Storyline, for Storylines too big to load whole
// (100,000 steps): the run row, then steps by step_index in pages — a light
// header tier, or full bodies with a per-field character cap and the true
// sizes — and find-in-Storyline. Each read is a filtered scan of the
// source's Parquet files; Storyline stores are sorted, so DuckDB skips the
// row groups of other Storylines and other step ranges.

// located is a Storyline found in its source's files: the rows to read are
// those with its session_id and its stored _file_ (a store's rows carry
// their input's path there).
type located struct {
	src    *catalog.Source
	res    *catalog.Resolved
	stored string
	run    *model.Run
}

// maxLocated bounds the Reader's cache of located Storylines (it is
// emptied when full).
const maxLocated = 4096

func (r *Reader) locate(ctx context.Context, key StorylineKey) (*sql.DB, *located, error) {
	db, err := r.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	loc := r.located[key]
	r.mu.Unlock()
	if loc != nil {
		return db, loc, nil
	}
	loc, err = r.find(ctx, db, key)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	if r.located == nil || len(r.located) >= maxLocated {
		r.located = map[StorylineKey]*located{}
	}
	r.located[key] = loc
	r.mu.Unlock()
	return db, loc, nil
}

// find looks a Storyline up in its source's runs.
func (r *Reader) find(ctx context.Context, db *sql.DB, key StorylineKey) (*located, error) {
	src, res, own, ownArgs, err := r.sourceFiles(ctx, key.Dataset, key.File)
	if err != nil {
		return nil, err
	}
	if len(res.Files[model.RelRuns]) == 0 {
		return nil, fmt.Errorf("%s: %w", key, catalog.ErrNotFound)
	}
	q := fmt.Sprintf("%s WHERE session_id = ? AND %s LIMIT 2", selectFrom(model.RelRuns, res), own)
	rows, err := db.QueryContext(ctx, q, append([]any{key.SessionID}, ownArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("source %s: reading runs: %w", key.File, err)
	}
	defer rows.Close()
	var found []model.Run
	for rows.Next() {
		var run model.Run
		if err := scanStruct(rows, &run); err != nil {
			return nil, fmt.Errorf("source %s: reading runs: %w", key.File, err)
		}
		found = append(found, run)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("source %s: reading runs: %w", key.File, err)
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s: %w", key, catalog.ErrNotFound)
	case 1:
	default:
		return nil, ambiguous(key, len(found))
	}
	loc := &located{src: src, res: res, stored: found[0].File, run: &found[0]}
	loc.run.File = src.File
	return loc, nil
}

// Run returns the run row of one Storyline.
func (r *Reader) Run(ctx context.Context, key StorylineKey) (*model.Run, error) {
	_, loc, err := r.locate(ctx, key)
	if err != nil {
		return nil, err
	}
	run := *loc.run // the cached row is shared
	return &run, nil
}

// StepHeader is a step without its bodies: what a timeline shows before a
// step is opened.
type StepHeader struct {
	StepIndex        int64      `json:"step_index"`
	StepID           string     `json:"step_id"`
	Source           string     `json:"source"`
	MessageKind      string     `json:"message_kind"`
	ModelName        *string    `json:"model_name"`
	Timestamp        *time.Time `json:"timestamp"`
	PromptTokens     *int64     `json:"prompt_tokens"`
	CompletionTokens *int64     `json:"completion_tokens"`
	CachedTokens     *int64     `json:"cached_tokens"`
	ReasoningTokens  *int64     `json:"reasoning_tokens"`
	CostUSD          *float64   `json:"cost_usd"`
	IsCopiedContext  bool       `json:"is_copied_context"`
	// Sizes in bytes of the bodies left out.
	MessageBytes     int64 `json:"message_bytes"`
	ReasoningBytes   int64 `json:"reasoning_bytes"`
	ObservationBytes int64 `json:"observation_bytes"`
	// ToolCalls are the calls this step made; Results the calls whose
	// result this step carries (a tool message answering an earlier step).
	ToolCalls []CallHeader `json:"tool_calls"`
	Results   []CallHeader `json:"results"`
	HasError  bool         `json:"has_error"`
}

// CallHeader is a tool call without its arguments and result text.
type CallHeader struct {
	ToolCallID    string  `json:"tool_call_id"`
	CallIndex     int64   `json:"call_index"`
	StepID        string  `json:"step_id"`
	FunctionName  string  `json:"function_name"`
	ResultStatus  string  `json:"result_status"`
	ResultStepID  *string `json:"result_step_id"`
	ResultLink    string  `json:"result_link"`
	ArgumentBytes int64   `json:"arguments_bytes"`
	ResultBytes   int64   `json:"result_bytes"`
}

// StepHeaders returns up to limit step headers from step_index from on.
func (r *Reader) StepHeaders(ctx context.Context, key StorylineKey, from, limit int64) ([]StepHeader, error) {
	db, loc, err := r.locate(ctx, key)
	if err != nil {
		return nil, err
	}
	q := fmt.Sprintf(`SELECT step_index, step_id, source, message_kind, model_name, "timestamp", prompt_tokens, completion_tokens,
  cached_tokens, reasoning_tokens, cost_usd, is_copied_context,
  coalesce(strlen(message_value), 0), coalesce(strlen(reasoning), 0), coalesce(strlen(observation), 0)
FROM read_parquet([%s]) WHERE session_id = ? AND _file_ = ? AND step_index >= ? ORDER BY step_index LIMIT ?`,
		quoteList(loc.res.Files[model.RelSteps]))
	rows, err := db.QueryContext(ctx, q, key.SessionID, loc.stored, from, limit)
	if err != nil {
		return nil, fmt.Errorf("source %s: reading steps: %w", key.File, err)
	}
	defer rows.Close()
	var out []StepHeader
	for rows.Next() {
		var h StepHeader
		var ts sql.NullTime
		if err := rows.Scan(&h.StepIndex, &h.StepID, &h.Source, &h.MessageKind, &h.ModelName, &ts, &h.PromptTokens, &h.CompletionTokens,
			&h.CachedTokens, &h.ReasoningTokens, &h.CostUSD, &h.IsCopiedContext, &h.MessageBytes, &h.ReasoningBytes, &h.ObservationBytes); err != nil {
			return nil, fmt.Errorf("source %s: reading steps: %w", key.File, err)
		}
		if ts.Valid {
			t := ts.Time.UTC()
			h.Timestamp = &t
		}
		h.ToolCalls, h.Results = []CallHeader{}, []CallHeader{}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("source %s: reading steps: %w", key.File, err)
	}
	if err := r.attachCalls(ctx, db, loc, key, out); err != nil {
		return nil, err
	}
	return out, nil
}

// callsQuery selects columns of the tool calls that the steps ids (at
// least one) of a Storyline made or answered, in call order, with its
// arguments.
func callsQuery(columns string, files []string, key StorylineKey, loc *located, ids []any) (string, []any) {
	in := "?" + strings.Repeat(", ?", len(ids)-1)
	q := fmt.Sprintf(`SELECT %s
FROM read_parquet([%s]) WHERE session_id = ? AND _file_ = ? AND (step_id IN (%s) OR result_step_id IN (%s)) ORDER BY call_index`,
		columns, quoteList(files), in, in)
	return q, append(append([]any{key.SessionID, loc.stored}, ids...), ids...)
}

// attachCalls adds to each header the calls it made and the results it
// carries.
func (r *Reader) attachCalls(ctx context.Context, db *sql.DB, loc *located, key StorylineKey, steps []StepHeader) error {
	files := loc.res.Files[model.RelToolCalls]
	if len(steps) == 0 || len(files) == 0 {
		return nil
	}
	byID := make(map[string]*StepHeader, len(steps))
	ids := make([]any, 0, len(steps))
	for i := range steps {
		byID[steps[i].StepID] = &steps[i]
		ids = append(ids, steps[i].StepID)
	}
	q, args := callsQuery(`tool_call_id, call_index, step_id, function_name, result_status, result_step_id, result_link,
  coalesce(strlen(arguments), 0), coalesce(strlen(result), 0)`, files, key, loc, ids)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("source %s: reading tool calls: %w", key.File, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c CallHeader
		if err := rows.Scan(&c.ToolCallID, &c.CallIndex, &c.StepID, &c.FunctionName, &c.ResultStatus, &c.ResultStepID, &c.ResultLink,
			&c.ArgumentBytes, &c.ResultBytes); err != nil {
			return fmt.Errorf("source %s: reading tool calls: %w", key.File, err)
		}
		if h := byID[c.StepID]; h != nil {
			h.ToolCalls = append(h.ToolCalls, c)
			h.HasError = h.HasError || c.ResultStatus == model.ResultError
		}
		if c.ResultStepID != nil && *c.ResultStepID != c.StepID {
			if h := byID[*c.ResultStepID]; h != nil {
				h.Results = append(h.Results, c)
				h.HasError = h.HasError || c.ResultStatus == model.ResultError
			}
		}
	}
	return rows.Err()
}

// Text is a body cut to a cap: the first Chars characters of the value,
// with the value's true size.
type Text struct {
	Value     string `json:"value"`
	Bytes     int64  `json:"bytes"`
	Truncated bool   `json:"truncated"`
}

// StepBody is one step with its bodies and its calls' arguments and
// results, each cut to the cap the caller asked for.
type StepBody struct {
	StepHeader
	Message     *Text      `json:"message"`
	Reasoning   *Text      `json:"reasoning"`
	Observation *Text      `json:"observation"`
	Extra       *string    `json:"extra"`
	Calls       []CallBody `json:"calls"`
	ResultsOf   []CallBody `json:"results_of"`
}

// CallBody is one tool call with its arguments and result.
type CallBody struct {
	CallHeader
	ArgumentsValid bool    `json:"arguments_valid"`
	Arguments      *Text   `json:"arguments"`
	Result         *Text   `json:"result"`
	Extra          *string `json:"extra"`
}

// StepBodies returns up to limit steps from step_index from on with their
// bodies; every text is cut to maxChars characters (<= 0: no cut) and
// reports its true size.
func (r *Reader) StepBodies(ctx context.Context, key StorylineKey, from, limit int64, maxChars int) ([]StepBody, error) {
	headers, err := r.StepHeaders(ctx, key, from, limit)
	if err != nil || len(headers) == 0 {
		return nil, err
	}
	db, loc, err := r.locate(ctx, key)
	if err != nil {
		return nil, err
	}
	cut := func(col string) string {
		if maxChars <= 0 {
			return col
		}
		return fmt.Sprintf("left(%s, %d)", col, maxChars)
	}
	last := headers[len(headers)-1].StepIndex
	q := fmt.Sprintf(`SELECT step_index, %s, %s, %s, extra FROM read_parquet([%s])
WHERE session_id = ? AND _file_ = ? AND step_index BETWEEN ? AND ? ORDER BY step_index`,
		cut("message_value"), cut("reasoning"), cut("observation"), quoteList(loc.res.Files[model.RelSteps]))
	rows, err := db.QueryContext(ctx, q, key.SessionID, loc.stored, from, last)
	if err != nil {
		return nil, fmt.Errorf("source %s: reading steps: %w", key.File, err)
	}
	defer rows.Close()
	out := make([]StepBody, 0, len(headers))
	byIndex := map[int64]int{}
	for i, h := range headers {
		out = append(out, StepBody{StepHeader: h, Calls: []CallBody{}, ResultsOf: []CallBody{}})
		byIndex[h.StepIndex] = i
	}
	for rows.Next() {
		var idx int64
		var msg, reasoning, obs, extra *string
		if err := rows.Scan(&idx, &msg, &reasoning, &obs, &extra); err != nil {
			return nil, fmt.Errorf("source %s: reading steps: %w", key.File, err)
		}
		i, ok := byIndex[idx]
		if !ok {
			continue
		}
		b := &out[i]
		b.Message, b.Reasoning, b.Observation = text(msg, b.MessageBytes), text(reasoning, b.ReasoningBytes), text(obs, b.ObservationBytes)
		b.Extra = extra
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("source %s: reading steps: %w", key.File, err)
	}
	if err := r.attachCallBodies(ctx, db, loc, key, out, cut); err != nil {
		return nil, err
	}
	return out, nil
}

func text(v *string, bytes int64) *Text {
	if v == nil {
		return nil
	}
	return &Text{Value: *v, Bytes: bytes, Truncated: int64(len(*v)) < bytes}
}

func (r *Reader) attachCallBodies(ctx context.Context, db *sql.DB, loc *located, key StorylineKey, steps []StepBody, cut func(string) string) error {
	files := loc.res.Files[model.RelToolCalls]
	if len(files) == 0 {
		return nil
	}
	byID := make(map[string]*StepBody, len(steps))
	ids := make([]any, 0, len(steps))
	for i := range steps {
		byID[steps[i].StepID] = &steps[i]
		ids = append(ids, steps[i].StepID)
	}
	q, args := callsQuery(fmt.Sprintf(`tool_call_id, call_index, step_id, function_name, result_status, result_step_id, result_link,
  coalesce(strlen(arguments), 0), coalesce(strlen(result), 0), arguments_valid, %s, %s, extra`, cut("arguments"), cut("result")),
		files, key, loc, ids)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("source %s: reading tool calls: %w", key.File, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c CallBody
		var arguments, result *string
		if err := rows.Scan(&c.ToolCallID, &c.CallIndex, &c.StepID, &c.FunctionName, &c.ResultStatus, &c.ResultStepID, &c.ResultLink,
			&c.ArgumentBytes, &c.ResultBytes, &c.ArgumentsValid, &arguments, &result, &c.Extra); err != nil {
			return fmt.Errorf("source %s: reading tool calls: %w", key.File, err)
		}
		c.Arguments, c.Result = text(arguments, c.ArgumentBytes), text(result, c.ResultBytes)
		if b := byID[c.StepID]; b != nil {
			b.Calls = append(b.Calls, c)
		}
		if c.ResultStepID != nil && *c.ResultStepID != c.StepID {
			if b := byID[*c.ResultStepID]; b != nil {
				b.ResultsOf = append(b.ResultsOf, c)
			}
		}
	}
	return rows.Err()
}

// FindSteps returns the step indexes, from step_index from on and at most
// limit, whose message, reasoning or observation — or whose tool calls'
// name, arguments or result — contain text (case-insensitive).
func (r *Reader) FindSteps(ctx context.Context, key StorylineKey, needle string, from, limit int64) ([]int64, error) {
	db, loc, err := r.locate(ctx, key)
	if err != nil {
		return nil, err
	}
	if needle == "" {
		return []int64{}, nil
	}
	like := "%" + escapeLike(strings.ToLower(needle)) + "%"
	match := func(col string) string { return fmt.Sprintf("lower(%s) LIKE ? ESCAPE '\\'", col) }
	steps := quoteList(loc.res.Files[model.RelSteps])
	q := fmt.Sprintf(`SELECT step_index FROM read_parquet([%s]) WHERE session_id = ? AND _file_ = ? AND step_index >= ?
  AND (%s OR %s OR %s)`, steps, match("message_value"), match("reasoning"), match("observation"))
	args := []any{key.SessionID, loc.stored, from, like, like, like}
	if calls := loc.res.Files[model.RelToolCalls]; len(calls) > 0 {
		q += fmt.Sprintf(`
UNION
SELECT s.step_index FROM read_parquet([%s]) s JOIN read_parquet([%s]) c
  ON c.session_id = s.session_id AND c._file_ = s._file_ AND (c.step_id = s.step_id OR c.result_step_id = s.step_id)
WHERE s.session_id = ? AND s._file_ = ? AND s.step_index >= ? AND c.session_id = ? AND c._file_ = ?
  AND (%s OR %s OR %s)`, steps, quoteList(calls), match("c.function_name"), match("c.arguments"), match("c.result"))
		args = append(args, key.SessionID, loc.stored, from, key.SessionID, loc.stored, like, like, like)
	}
	q = "SELECT step_index FROM (" + q + ") ORDER BY step_index LIMIT ?"
	args = append(args, limit)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("source %s: finding in steps: %w", key.File, err)
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var i int64
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

// escapeLike escapes LIKE's wildcards with a backslash.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
