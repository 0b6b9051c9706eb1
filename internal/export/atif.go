package export

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// ATIFVersion is the schema_version of exported documents.
const ATIFVersion = "ATIF-v1.7"

// Field order follows the ATIF specification, so documents diff well.
type atifDoc struct {
	SchemaVersion          string         `json:"schema_version"`
	SessionID              string         `json:"session_id"`
	TrajectoryID           string         `json:"trajectory_id,omitempty"`
	Agent                  atifAgent      `json:"agent"`
	Steps                  []atifStep     `json:"steps"`
	FinalMetrics           *atifFinal     `json:"final_metrics,omitempty"`
	ContinuedTrajectoryRef string         `json:"continued_trajectory_ref,omitempty"`
	Extra                  map[string]any `json:"extra,omitempty"`
}

type atifAgent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

type atifStep struct {
	StepID           int              `json:"step_id"`
	Timestamp        string           `json:"timestamp,omitempty"`
	Source           string           `json:"source"`
	ModelName        string           `json:"model_name,omitempty"`
	Message          json.RawMessage  `json:"message"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []atifToolCall   `json:"tool_calls,omitempty"`
	Observation      *atifObservation `json:"observation,omitempty"`
	Metrics          *atifMetrics     `json:"metrics,omitempty"`
	IsCopiedContext  bool             `json:"is_copied_context,omitempty"`
	Extra            map[string]any   `json:"extra,omitempty"`
}

type atifToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
}

type atifObservation struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID string         `json:"source_call_id,omitempty"`
	Content      *string        `json:"content,omitempty"`
	SubagentRefs []atifRef      `json:"subagent_trajectory_ref,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

type atifRef struct {
	SessionID      string `json:"session_id,omitempty"`
	TrajectoryID   string `json:"trajectory_id,omitempty"`
	TrajectoryPath string `json:"trajectory_path,omitempty"`
}

type atifMetrics struct {
	PromptTokens     *int64         `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64         `json:"completion_tokens,omitempty"`
	CachedTokens     *int64         `json:"cached_tokens,omitempty"`
	CostUSD          *float64       `json:"cost_usd,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

type atifFinal struct {
	TotalPromptTokens     *int64   `json:"total_prompt_tokens,omitempty"`
	TotalCompletionTokens *int64   `json:"total_completion_tokens,omitempty"`
	TotalCachedTokens     *int64   `json:"total_cached_tokens,omitempty"`
	TotalCostUSD          *float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            *int64   `json:"total_steps,omitempty"`
}

// ATIFDocument returns a Storyline as one ATIF-v1.7 document. ATIF has no
// tool source: tool results are written as observation results of the
// calling step (by source_call_id), and steps that only carried results are
// folded away; a tool step with no linked call becomes a system step with
// extra.source "tool". step_id is the 1-based position (ATIF numbers steps);
// the original id is kept in the step's extra.step_id when it differs.
// final_metrics holds the document's reported totals when it had them, else
// the computed ones.
func ATIFDocument(sl *model.Storyline) ([]byte, error) {
	r := &sl.Run
	doc := atifDoc{
		SchemaVersion:          ATIFVersion,
		SessionID:              r.SessionID,
		TrajectoryID:           model.Deref(r.TrajectoryID),
		Agent:                  atifAgent{Name: orDefault(model.Deref(r.AgentName), "unknown"), Version: orDefault(model.Deref(r.AgentVersion), "unknown"), ModelName: model.Deref(r.AgentModelName)},
		ContinuedTrajectoryRef: model.Deref(r.ContinuedTrajectoryRef),
		FinalMetrics:           finalMetrics(r),
	}
	if r.ParentSessionID != nil {
		doc.Agent.Extra = map[string]any{"parent_session_id": *r.ParentSessionID}
	}
	switch r.Status {
	case model.StatusCompleted:
		doc.Extra = map[string]any{"success": true}
	case model.StatusError:
		doc.Extra = map[string]any{"success": false}
	}
	refs, err := subagentRefs(r)
	if err != nil {
		return nil, err
	}
	calls, carriers := callsByStep(sl), resultCarriers(sl)
	for i := range sl.Steps {
		st := &sl.Steps[i]
		if carriers[st.StepID] && st.Source == model.SourceTool {
			continue
		}
		doc.Steps = append(doc.Steps, atifStepOf(st, len(doc.Steps)+1, calls[st.StepID], refs))
	}
	if doc.Steps == nil {
		doc.Steps = []atifStep{}
	}
	return jsonx.Marshal(doc)
}

func atifStepOf(st *model.Step, n int, calls []*model.ToolCall, refs []model.SubagentRef) atifStep {
	out := atifStep{
		StepID:           n,
		Timestamp:        atifTime(st.Timestamp),
		Source:           st.Source,
		ModelName:        model.Deref(st.ModelName),
		Message:          messageJSON(st),
		ReasoningContent: model.Deref(st.Reasoning),
		IsCopiedContext:  st.IsCopiedContext,
		Metrics:          stepMetrics(st),
	}
	extra := map[string]any{}
	if st.StepID != fmt.Sprint(n) {
		extra["step_id"] = st.StepID
	}
	switch st.Source {
	case model.SourceSystem, model.SourceUser, model.SourceAgent:
	default:
		out.Source, extra["source"] = model.SourceSystem, st.Source
	}
	if len(extra) > 0 {
		out.Extra = extra
	}
	var results []atifResult
	ambiguous := false
	for _, tc := range calls {
		out.ToolCalls = append(out.ToolCalls, atifToolCall{ToolCallID: tc.ToolCallID, FunctionName: tc.FunctionName, Arguments: argumentsJSON(tc.Arguments)})
		if !hasResult(tc) {
			continue
		}
		res := atifResult{Content: tc.Result}
		if tc.ResultStatus == model.ResultError {
			res.Extra = map[string]any{"is_error": true}
		}
		if tc.ResultLink == model.LinkAmbiguous {
			// One step-level result was attached to every call: write it once.
			if ambiguous {
				continue
			}
			ambiguous = true
		} else {
			res.SourceCallID = tc.ToolCallID
		}
		results = append(results, res)
	}
	if st.Observation != nil && len(calls) == 0 {
		results = append(results, atifResult{Content: st.Observation})
	}
	for _, r := range refs {
		if r.StepID == st.StepID {
			results = append(results, atifResult{SubagentRefs: []atifRef{{SessionID: r.SessionID, TrajectoryID: r.TrajectoryID, TrajectoryPath: r.TrajectoryPath}}})
		}
	}
	if len(results) > 0 {
		out.Observation = &atifObservation{Results: results}
	}
	return out
}

// messageJSON is the step message: multimodal parts as their JSON array,
// anything else as a string ("" when absent: ATIF requires message).
func messageJSON(st *model.Step) json.RawMessage {
	v := model.Deref(st.MessageValue)
	if st.MessageKind == "multimodal" {
		if raw := rawJSON(v, '['); raw != nil {
			return raw
		}
	}
	return textJSON(v)
}

// argumentsJSON writes an object as is and any other text as a JSON
// string, which ATIF readers keep raw.
func argumentsJSON(args *string) json.RawMessage {
	if args == nil {
		return json.RawMessage("{}")
	}
	if raw := rawJSON(*args, '{'); raw != nil {
		return raw
	}
	return textJSON(*args)
}

func stepMetrics(st *model.Step) *atifMetrics {
	m := &atifMetrics{PromptTokens: st.PromptTokens, CompletionTokens: st.CompletionTokens, CachedTokens: st.CachedTokens, CostUSD: st.CostUSD}
	if st.ReasoningTokens != nil {
		m.Extra = map[string]any{"reasoning_tokens": *st.ReasoningTokens}
	}
	if m.PromptTokens == nil && m.CompletionTokens == nil && m.CachedTokens == nil && m.CostUSD == nil && m.Extra == nil {
		return nil
	}
	return m
}

func finalMetrics(r *model.Run) *atifFinal {
	f := &atifFinal{TotalPromptTokens: r.ReportedPromptTokens, TotalCompletionTokens: r.ReportedCompletionTokens,
		TotalCachedTokens: r.ReportedCachedTokens, TotalCostUSD: r.ReportedCostUSD, TotalSteps: r.ReportedStepCount}
	if *f == (atifFinal{}) {
		f = &atifFinal{TotalPromptTokens: r.PromptTokens, TotalCompletionTokens: r.CompletionTokens,
			TotalCachedTokens: r.CachedTokens, TotalCostUSD: r.CostUSD, TotalSteps: model.Int(r.StepCount)}
	}
	return f
}

func atifTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// atifWriter writes one document per line.
type atifWriter struct{ lines }

func (a *atifWriter) Write(_ string, sl *model.Storyline) error {
	doc, err := ATIFDocument(sl)
	if err != nil {
		return err
	}
	return a.write(doc)
}

// atifDirWriter writes one file per Storyline, named after its session_id
// plus a digest of its full identity (dataset, _file_, session_id), so two
// Storylines never share a file and names are stable across exports.
type atifDirWriter struct{ dir string }

func newATIFDir(dir string) (*atifDirWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &atifDirWriter{dir: dir}, nil
}

var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// FileName is the file an ATIF export to a directory writes a Storyline to.
func FileName(dataset string, r *model.Run) string {
	name := unsafeName().ReplaceAllString(r.SessionID, "_")
	if len(name) > 80 {
		name = name[:80]
	}
	return name + "-" + digest(10, dataset, r.File, r.SessionID) + ".json"
}

func (a *atifDirWriter) Write(dataset string, sl *model.Storyline) error {
	doc, err := ATIFDocument(sl)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(a.dir, FileName(dataset, &sl.Run)), append(doc, '\n'), 0o644)
}

func (a *atifDirWriter) Close() error { return nil }
