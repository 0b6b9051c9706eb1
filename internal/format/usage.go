package format

import (
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Usage is one model response's token accounting, in any of the namings
// producers copy from their LLM client: Chat Completions
// (prompt/completion_tokens + *_details, litellm included), Responses
// (input/output_tokens + *_details) or Codex (cached_input_tokens,
// reasoning_output_tokens). Prompt tokens include cached ones.
type Usage struct {
	Prompt, Completion, Cached, Reasoning *int64
	Cost                                  *float64
}

// Empty reports whether no figure was found.
func (u Usage) Empty() bool {
	return u.Prompt == nil && u.Completion == nil && u.Cached == nil && u.Reasoning == nil && u.Cost == nil
}

// ParseUsage reads a usage object; anything else gives an empty Usage.
func ParseUsage(raw jsonx.RawMessage) Usage {
	var u Usage
	if IsNull(raw) {
		return u
	}
	m := Object(raw)
	if m == nil {
		return u
	}
	promptDetails := SplitObject(firstPresent(m, "prompt_tokens_details", "input_tokens_details"))
	completionDetails := SplitObject(firstPresent(m, "completion_tokens_details", "output_tokens_details"))
	u.Prompt = IntOf(m["prompt_tokens"], m["input_tokens"])
	u.Completion = IntOf(m["completion_tokens"], m["output_tokens"])
	u.Cached = IntOf(promptDetails["cached_tokens"], m["cached_input_tokens"], m["prompt_cache_hit_tokens"])
	u.Reasoning = IntOf(completionDetails["reasoning_tokens"], m["reasoning_output_tokens"])
	if c, ok := Float(m["cost"]); ok {
		u.Cost = model.Float(c)
	}
	return u
}

// Apply sets the step's token and cost columns that u has.
func (u Usage) Apply(st *model.Step) {
	if u.Prompt != nil {
		st.PromptTokens = u.Prompt
	}
	if u.Completion != nil {
		st.CompletionTokens = u.Completion
	}
	if u.Cached != nil {
		st.CachedTokens = u.Cached
	}
	if u.Reasoning != nil {
		st.ReasoningTokens = u.Reasoning
	}
	if u.Cost != nil {
		st.CostUSD = u.Cost
	}
}

func firstPresent(m map[string]jsonx.RawMessage, keys ...string) jsonx.RawMessage {
	for _, k := range keys {
		if !IsNull(m[k]) {
			return m[k]
		}
	}
	return nil
}

// IntOf returns the first of raws that is an integer, or nil.
func IntOf(raws ...jsonx.RawMessage) *int64 {
	for _, raw := range raws {
		if v, ok := Int(raw); ok {
			return model.Int(v)
		}
	}
	return nil
}
