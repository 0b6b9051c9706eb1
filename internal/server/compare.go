package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Compare two Storylines step by step (GET /api/compare, docs/web.md): the
// steps are aligned as a diff aligns lines — first on role, tool names and
// arguments, then, between those matches, on role and tool names alone —
// and each row says whether the two steps are the same, changed (aligned
// but different content), or only on one side. The alignment of a pair is
// computed once per generation; pages of rows are cut from it.

// maxCompareSteps bounds the steps of each side that are aligned; a longer
// Storyline is compared on its first steps and the answer says truncated.
const maxCompareSteps = 20_000

// Compare row kinds.
const (
	opSame    = "same"
	opChanged = "changed"
	opAOnly   = "a_only"
	opBOnly   = "b_only"
)

// compareStep is one side of a row: what the page shows of a step.
type compareStep struct {
	StepIndex        int64      `json:"step_index"`
	Source           string     `json:"source"`
	MessageKind      string     `json:"message_kind"`
	Tools            []string   `json:"tools"`
	Preview          string     `json:"preview"`
	Timestamp        *time.Time `json:"timestamp"`
	PromptTokens     *int64     `json:"prompt_tokens"`
	CompletionTokens *int64     `json:"completion_tokens"`
	CostUSD          *float64   `json:"cost_usd"`
	HasError         bool       `json:"has_error"`
}

type compareRow struct {
	Op string       `json:"op"`
	A  *compareStep `json:"a"`
	B  *compareStep `json:"b"`
	// Differs names what differs on a changed row: message, arguments,
	// results, tools.
	Differs []string `json:"differs,omitempty"`
}

// compareSide sums up one Storyline and how its steps fared in the diff.
type compareSide struct {
	Key              engine.StorylineKey `json:"key"`
	AgentName        *string             `json:"agent_name"`
	Model            *string             `json:"agent_model_name"`
	SourceFormat     string              `json:"source_format"`
	Status           string              `json:"status"`
	Reward           *float64            `json:"reward"`
	Scores           json.RawMessage     `json:"scores"`
	StepRows         int                 `json:"step_rows"`
	StepCount        int64               `json:"step_count"`
	ToolCallCount    int64               `json:"tool_call_count"`
	ToolErrors       int                 `json:"tool_errors"`
	PromptTokens     *int64              `json:"prompt_tokens"`
	CompletionTokens *int64              `json:"completion_tokens"`
	CostUSD          *float64            `json:"cost_usd"`
	DurationMS       *int64              `json:"duration_ms"`
	Truncated        bool                `json:"truncated"`
}

type comparison struct {
	A, B  compareSide
	Rows  []compareRow
	Count map[string]int
	// FirstDivergence is the first row that is not "same" (-1: none).
	FirstDivergence int
}

// stepKeys are the two alignment keys of a step and a digest of its content.
type stepKeys struct{ strong, weak, content string }

func (s *Server) compare(w http.ResponseWriter, r *http.Request, g Generation) error {
	ka, err := sideKey(r, g, "a")
	if err != nil {
		return err
	}
	kb, err := sideKey(r, g, "b")
	if err != nil {
		return err
	}
	from, limit, err := pageParams(r, 500, 5000)
	if err != nil {
		return err
	}
	memoKey := strings.Join([]string{"compare", ka.Dataset, ka.File, ka.SessionID, kb.Dataset, kb.File, kb.SessionID}, "\x00")
	v, err := g.Memo(r.Context(), memoKey, func(ctx context.Context) (any, error) {
		return compareStorylines(ctx, g.StorylineReader(), ka, kb)
	})
	if err != nil {
		return err
	}
	c := v.(*comparison)
	rows, lo, next := slicePage(c.Rows, from, limit)
	writeJSON(w, http.StatusOK, map[string]any{
		"snapshot_id": g.ID(), "a": c.A, "b": c.B, "delta": delta(c.A, c.B),
		"counts": c.Count, "first_divergence": c.FirstDivergence,
		"total_rows": len(c.Rows), "from": lo, "rows": rows, "next_from": next,
	})
	return nil
}

// slicePage cuts [from, from+limit) out of s; next is where the next page
// starts, nil after the last.
func slicePage[T any](s []T, from, limit int64) (page []T, lo int64, next any) {
	total := int64(len(s))
	lo = min(from, total)
	hi := min(lo+limit, total)
	if hi < total {
		next = hi
	}
	return s[lo:hi], lo, next
}

// sideKey reads one side's identity: <side>_dataset, <side>_file,
// <side>_session_id, with the same rules as a Storyline's parameters.
func sideKey(r *http.Request, g Generation, side string) (engine.StorylineKey, error) {
	q := r.URL.Query()
	sub := url.Values{}
	for _, name := range []string{"dataset", "file", "session_id"} {
		if v := q.Get(side + "_" + name); v != "" {
			sub.Set(name, v)
		}
	}
	if sub.Get("file") == "" || sub.Get("session_id") == "" {
		return engine.StorylineKey{}, badRequest("parameters %[1]s_file and %[1]s_session_id (Storyline %[1]s) are required", side)
	}
	if n := len(g.Snapshot().Datasets); n > 1 && sub.Get("dataset") == "" {
		return engine.StorylineKey{}, badRequest("parameter %s_dataset is required: this server mounts %d Datasets", side, n)
	}
	u := *r.URL
	u.RawQuery = sub.Encode()
	rr := *r
	rr.URL = &u
	return storylineKey(&rr, g)
}

func compareStorylines(ctx context.Context, rd StorylineReader, ka, kb engine.StorylineKey) (*comparison, error) {
	a, err := rd.Load(ctx, ka)
	if err != nil {
		return nil, err
	}
	b, err := rd.Load(ctx, kb)
	if err != nil {
		return nil, err
	}
	c := &comparison{A: side(ka, a), B: side(kb, b), Count: map[string]int{opSame: 0, opChanged: 0, opAOnly: 0, opBOnly: 0}, FirstDivergence: -1}
	pa, pb := prepare(a), prepare(b)
	c.A.Truncated, c.B.Truncated = pa.truncated, pb.truncated
	for _, p := range refine(align(pa.strong(), pb.strong()), pa.keys, pb.keys) {
		row := compareRow{}
		switch {
		case p.a >= 0 && p.b >= 0:
			row.A, row.B = &pa.steps[p.a], &pb.steps[p.b]
			row.Op = opSame
			if d := differs(pa, pb, p); len(d) > 0 {
				row.Op, row.Differs = opChanged, d
			}
		case p.a >= 0:
			row.Op, row.A = opAOnly, &pa.steps[p.a]
		default:
			row.Op, row.B = opBOnly, &pb.steps[p.b]
		}
		if row.Op != opSame && c.FirstDivergence < 0 {
			c.FirstDivergence = len(c.Rows)
		}
		c.Count[row.Op]++
		c.Rows = append(c.Rows, row)
	}
	return c, nil
}

// refine aligns again, on the weak key, each stretch of unmatched rows
// between two matches, so that a step that called the same tool with other
// arguments pairs with its counterpart as changed.
func refine(ps []pair, ka, kb []stepKeys) []pair {
	out := make([]pair, 0, len(ps))
	for i := 0; i < len(ps); {
		if ps[i].a >= 0 && ps[i].b >= 0 {
			out = append(out, ps[i])
			i++
			continue
		}
		j := i
		var as, bs []int
		for ; j < len(ps) && (ps[j].a < 0 || ps[j].b < 0); j++ {
			if ps[j].a >= 0 {
				as = append(as, ps[j].a)
			} else {
				bs = append(bs, ps[j].b)
			}
		}
		wa, wb := make([]string, len(as)), make([]string, len(bs))
		for k, x := range as {
			wa[k] = ka[x].weak
		}
		for k, x := range bs {
			wb[k] = kb[x].weak
		}
		for _, p := range align(wa, wb) {
			q := pair{-1, -1}
			if p.a >= 0 {
				q.a = as[p.a]
			}
			if p.b >= 0 {
				q.b = bs[p.b]
			}
			out = append(out, q)
		}
		i = j
	}
	return out
}

func side(key engine.StorylineKey, sl *model.Storyline) compareSide {
	run := &sl.Run
	s := compareSide{Key: key, AgentName: run.AgentName, Model: run.AgentModelName, SourceFormat: run.SourceFormat,
		Status: run.Status, Reward: run.Reward, StepRows: len(sl.Steps), StepCount: run.StepCount, ToolCallCount: run.ToolCallCount,
		PromptTokens: run.PromptTokens, CompletionTokens: run.CompletionTokens, CostUSD: run.CostUSD}
	if run.Scores != nil && json.Valid([]byte(*run.Scores)) {
		s.Scores = json.RawMessage(*run.Scores)
	}
	if run.StartedAt != nil && run.EndedAt != nil {
		d := run.EndedAt.Sub(*run.StartedAt).Milliseconds()
		s.DurationMS = &d
	}
	for _, tc := range sl.ToolCalls {
		if tc.ResultStatus == model.ResultError {
			s.ToolErrors++
		}
	}
	return s
}

// previewChars is how much of a message a compare row shows.
const previewChars = 160

// prepared is one side ready to align: its first steps (at most
// maxCompareSteps), their calls and keys.
type prepared struct {
	sl        *model.Storyline
	calls     map[string][]*model.ToolCall // by step_id
	steps     []compareStep
	keys      []stepKeys
	truncated bool
}

func prepare(sl *model.Storyline) *prepared {
	n := min(len(sl.Steps), maxCompareSteps)
	p := &prepared{sl: sl, calls: make(map[string][]*model.ToolCall, n), steps: make([]compareStep, n), truncated: len(sl.Steps) > n}
	for i := range sl.ToolCalls {
		tc := &sl.ToolCalls[i]
		p.calls[tc.StepID] = append(p.calls[tc.StepID], tc)
	}
	for i := range n {
		st := &sl.Steps[i]
		cs := compareStep{StepIndex: st.StepIndex, Source: st.Source, MessageKind: st.MessageKind, Tools: []string{},
			Timestamp: st.Timestamp, PromptTokens: st.PromptTokens, CompletionTokens: st.CompletionTokens, CostUSD: st.CostUSD}
		if st.MessageValue != nil {
			cs.Preview = preview(*st.MessageValue)
		}
		for _, tc := range p.calls[st.StepID] {
			cs.Tools = append(cs.Tools, tc.FunctionName)
			cs.HasError = cs.HasError || tc.ResultStatus == model.ResultError
		}
		p.steps[i] = cs
	}
	p.keys = p.keysOf(n)
	return p
}

func (p *prepared) strong() []string {
	out := make([]string, len(p.keys))
	for i, k := range p.keys {
		out[i] = k.strong
	}
	return out
}

func preview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > previewChars {
		return string(r[:previewChars]) + "…"
	}
	return s
}

// keysOf computes the alignment keys of the first n steps. The strong key
// is the role, each call's tool name and its arguments (JSON arguments
// compared by value, not by spelling); the weak key drops the arguments;
// the content digest covers the message, reasoning, observation and
// results, which decide between same and changed.
func (p *prepared) keysOf(n int) []stepKeys {
	out := make([]stepKeys, n)
	for i := range n {
		st := &p.sl.Steps[i]
		var strong, weak strings.Builder
		role := roleOf(st.Source)
		strong.WriteString(role)
		weak.WriteString(role)
		h := sha256.New()
		for _, v := range []*string{st.MessageValue, st.Reasoning, st.Observation} {
			if v != nil {
				h.Write([]byte(*v))
			}
			h.Write([]byte{0})
		}
		for _, tc := range p.calls[st.StepID] {
			weak.WriteString("\x00" + tc.FunctionName)
			strong.WriteString("\x00" + tc.FunctionName + "\x01" + canonicalArgs(tc))
			if tc.Result != nil {
				h.Write([]byte(*tc.Result))
			}
			h.Write([]byte{0})
		}
		if len(p.calls[st.StepID]) == 0 {
			// A message step aligns by its kind; its text decides same or changed.
			strong.WriteString("\x02" + st.MessageKind)
			weak.WriteString("\x02" + st.MessageKind)
		}
		out[i] = stepKeys{strong: strong.String(), weak: weak.String(), content: string(h.Sum(nil))}
	}
	return out
}

// roleOf folds the producers' names for the same role together, so that
// an "assistant" step of one format aligns with an "agent" step of another.
func roleOf(source string) string {
	switch source {
	case "assistant", "agent", "model":
		return "agent"
	case "tool", "environment", "function", "observation":
		return "tool"
	}
	return source
}

// canonicalArgs is a call's arguments in a form where equal JSON values
// are equal strings (object keys sorted, no spacing).
func canonicalArgs(tc *model.ToolCall) string {
	if tc.Arguments == nil {
		return ""
	}
	if tc.ArgumentsValid {
		var v any
		if jsonx.Unmarshal([]byte(*tc.Arguments), &v) == nil {
			if b, err := jsonx.Marshal(v); err == nil { // map keys come out sorted
				return string(b)
			}
		}
	}
	return *tc.Arguments
}

// differs names what differs between two aligned steps.
func differs(a, b *prepared, p pair) []string {
	ka, kb := a.keys[p.a], b.keys[p.b]
	if ka.strong == kb.strong && ka.content == kb.content {
		return nil
	}
	var d []string
	sa, sb := &a.sl.Steps[p.a], &b.sl.Steps[p.b]
	if !equalText(sa.MessageValue, sb.MessageValue) || !equalText(sa.Reasoning, sb.Reasoning) || !equalText(sa.Observation, sb.Observation) {
		d = append(d, "message")
	}
	if ka.weak != kb.weak {
		d = append(d, "tools")
	} else if ka.strong != kb.strong {
		d = append(d, "arguments")
	}
	ca, cb := a.calls[sa.StepID], b.calls[sb.StepID]
	if len(ca) == len(cb) {
		for i := range ca {
			if !equalText(ca[i].Result, cb[i].Result) || ca[i].ResultStatus != cb[i].ResultStatus {
				d = append(d, "results")
				break
			}
		}
	} else if len(d) == 0 {
		d = append(d, "results")
	}
	return d
}

func equalText(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// delta is b minus a for the figures both sides have.
func delta(a, b compareSide) map[string]any {
	d := map[string]any{
		"step_rows":       b.StepRows - a.StepRows,
		"step_count":      b.StepCount - a.StepCount,
		"tool_call_count": b.ToolCallCount - a.ToolCallCount,
		"tool_errors":     b.ToolErrors - a.ToolErrors,
		"same_status":     a.Status == b.Status,
	}
	sub := func(name string, x, y *int64) {
		if x != nil && y != nil {
			d[name] = *y - *x
		} else {
			d[name] = nil
		}
	}
	sub("prompt_tokens", a.PromptTokens, b.PromptTokens)
	sub("completion_tokens", a.CompletionTokens, b.CompletionTokens)
	sub("duration_ms", a.DurationMS, b.DurationMS)
	d["cost_usd"], d["reward"] = nil, nil
	if a.CostUSD != nil && b.CostUSD != nil {
		d["cost_usd"] = *b.CostUSD - *a.CostUSD
	}
	if a.Reward != nil && b.Reward != nil {
		d["reward"] = *b.Reward - *a.Reward
	}
	return d
}
