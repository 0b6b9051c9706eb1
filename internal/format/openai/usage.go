package openai

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// usage is one response's token accounting, in either naming: Chat
// Completions (prompt/completion_tokens + *_details), Responses
// (input/output_tokens + *_details) or Codex (cached_input_tokens,
// reasoning_output_tokens). Prompt tokens include cached ones.
type usage struct {
	prompt, completion, cached, reasoning *int64
	cost                                  *float64
}

func (u usage) empty() bool {
	return u.prompt == nil && u.completion == nil && u.cached == nil && u.reasoning == nil && u.cost == nil
}

func parseUsage(raw jsonx.RawMessage) usage {
	var u usage
	if format.IsNull(raw) {
		return u
	}
	var m map[string]jsonx.RawMessage
	if jsonx.Unmarshal(raw, &m) != nil {
		return u
	}
	var promptDetails, completionDetails map[string]jsonx.RawMessage
	_ = jsonx.Unmarshal(firstPresent(m, "prompt_tokens_details", "input_tokens_details"), &promptDetails)
	_ = jsonx.Unmarshal(firstPresent(m, "completion_tokens_details", "output_tokens_details"), &completionDetails)
	u.prompt = intOf(m["prompt_tokens"], m["input_tokens"])
	u.completion = intOf(m["completion_tokens"], m["output_tokens"])
	u.cached = intOf(promptDetails["cached_tokens"], m["cached_input_tokens"], m["prompt_cache_hit_tokens"])
	u.reasoning = intOf(completionDetails["reasoning_tokens"], m["reasoning_output_tokens"])
	if c, ok := format.Float(m["cost"]); ok {
		u.cost = model.Float(c)
	}
	return u
}

func applyUsage(st *model.Step, u usage) {
	if u.prompt != nil {
		st.PromptTokens = u.prompt
	}
	if u.completion != nil {
		st.CompletionTokens = u.completion
	}
	if u.cached != nil {
		st.CachedTokens = u.cached
	}
	if u.reasoning != nil {
		st.ReasoningTokens = u.reasoning
	}
	if u.cost != nil {
		st.CostUSD = u.cost
	}
}

func firstPresent(m map[string]jsonx.RawMessage, keys ...string) jsonx.RawMessage {
	for _, k := range keys {
		if !format.IsNull(m[k]) {
			return m[k]
		}
	}
	return nil
}

func intOf(raws ...jsonx.RawMessage) *int64 {
	for _, raw := range raws {
		if v, ok := format.Int(raw); ok {
			return model.Int(v)
		}
	}
	return nil
}
