package engine

import (
	"strings"
	"unicode/utf8"

	"github.com/pchronicle/pchronicle/internal/model"
)

// The same pages as Reader's, computed from a Storyline held in memory (a
// canonical trace read from its store's latest manifest, which no pinned
// file holds yet). Sizes are bytes and caps characters, as in the SQL path.

// HeadersOf returns up to limit step headers of sl from step_index from on.
func HeadersOf(sl *model.Storyline, from, limit int64) []StepHeader {
	steps := pageOf(sl, from, limit)
	out := make([]StepHeader, len(steps))
	byID := map[string]*StepHeader{}
	for i, st := range steps {
		out[i] = StepHeader{StepIndex: st.StepIndex, StepID: st.StepID, Source: st.Source, MessageKind: st.MessageKind,
			ModelName: st.ModelName, Timestamp: st.Timestamp, PromptTokens: st.PromptTokens, CompletionTokens: st.CompletionTokens,
			CachedTokens: st.CachedTokens, ReasoningTokens: st.ReasoningTokens, CostUSD: st.CostUSD, IsCopiedContext: st.IsCopiedContext,
			MessageBytes: size(st.MessageValue), ReasoningBytes: size(st.Reasoning), ObservationBytes: size(st.Observation),
			ToolCalls: []CallHeader{}, Results: []CallHeader{}}
		byID[st.StepID] = &out[i]
	}
	for _, c := range sl.ToolCalls {
		h := callHeader(c)
		if s := byID[c.StepID]; s != nil {
			s.ToolCalls = append(s.ToolCalls, h)
			s.HasError = s.HasError || c.ResultStatus == model.ResultError
		}
		if c.ResultStepID != nil && *c.ResultStepID != c.StepID {
			if s := byID[*c.ResultStepID]; s != nil {
				s.Results = append(s.Results, h)
				s.HasError = s.HasError || c.ResultStatus == model.ResultError
			}
		}
	}
	return out
}

// BodiesOf is HeadersOf with the bodies, each cut to maxChars characters
// (<= 0: no cut).
func BodiesOf(sl *model.Storyline, from, limit int64, maxChars int) []StepBody {
	headers := HeadersOf(sl, from, limit)
	steps := pageOf(sl, from, limit)
	out := make([]StepBody, len(headers))
	byID := map[string]*StepBody{}
	for i, h := range headers {
		st := steps[i]
		out[i] = StepBody{StepHeader: h, Message: cutText(st.MessageValue, maxChars), Reasoning: cutText(st.Reasoning, maxChars),
			Observation: cutText(st.Observation, maxChars), Extra: st.Extra, Calls: []CallBody{}, ResultsOf: []CallBody{}}
		byID[st.StepID] = &out[i]
	}
	for _, c := range sl.ToolCalls {
		b := CallBody{CallHeader: callHeader(c), ArgumentsValid: c.ArgumentsValid, Arguments: cutText(c.Arguments, maxChars),
			Result: cutText(c.Result, maxChars), Extra: c.Extra}
		if s := byID[c.StepID]; s != nil {
			s.Calls = append(s.Calls, b)
		}
		if c.ResultStepID != nil && *c.ResultStepID != c.StepID {
			if s := byID[*c.ResultStepID]; s != nil {
				s.ResultsOf = append(s.ResultsOf, b)
			}
		}
	}
	return out
}

// FindIn is FindSteps over a Storyline in memory.
func FindIn(sl *model.Storyline, needle string, from, limit int64) []int64 {
	out := []int64{}
	if needle == "" {
		return out
	}
	needle = strings.ToLower(needle)
	has := func(v *string) bool { return v != nil && strings.Contains(strings.ToLower(*v), needle) }
	hit := map[string]bool{}
	for _, c := range sl.ToolCalls {
		if strings.Contains(strings.ToLower(c.FunctionName), needle) || has(c.Arguments) || has(c.Result) {
			hit[c.StepID] = true
			if c.ResultStepID != nil {
				hit[*c.ResultStepID] = true
			}
		}
	}
	for _, st := range sl.Steps {
		if st.StepIndex < from || int64(len(out)) >= limit {
			continue
		}
		if hit[st.StepID] || has(st.MessageValue) || has(st.Reasoning) || has(st.Observation) {
			out = append(out, st.StepIndex)
		}
	}
	return out
}

func pageOf(sl *model.Storyline, from, limit int64) []model.Step {
	var out []model.Step
	for _, st := range sl.Steps {
		if st.StepIndex >= from && int64(len(out)) < limit {
			out = append(out, st)
		}
	}
	return out
}

func callHeader(c model.ToolCall) CallHeader {
	return CallHeader{ToolCallID: c.ToolCallID, CallIndex: c.CallIndex, StepID: c.StepID, FunctionName: c.FunctionName,
		ResultStatus: c.ResultStatus, ResultStepID: c.ResultStepID, ResultLink: c.ResultLink,
		ArgumentBytes: size(c.Arguments), ResultBytes: size(c.Result)}
}

func size(v *string) int64 {
	if v == nil {
		return 0
	}
	return int64(len(*v))
}

// cutText keeps the first maxChars characters of v, like SQL left().
func cutText(v *string, maxChars int) *Text {
	if v == nil {
		return nil
	}
	s := *v
	if maxChars > 0 && utf8.RuneCountInString(s) > maxChars {
		n := 0
		for i := range s {
			if n == maxChars {
				s = s[:i]
				break
			}
			n++
		}
	}
	return text(&s, int64(len(*v)))
}
