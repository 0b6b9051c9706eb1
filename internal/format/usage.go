package format

import (
	"bytes"
	"encoding/json"

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
	// OutOfRange are the members whose number does not fit its column
	// (1e999, a 30-digit count), by name, as written: Apply keeps them in
	// the step's extra instead of leaving the column NULL unexplained.
	OutOfRange map[string]string
}

// Empty reports whether no figure was found.
func (u Usage) Empty() bool {
	return u.Prompt == nil && u.Completion == nil && u.Cached == nil && u.Reasoning == nil && u.Cost == nil
}

// ParseUsage reads a usage object; anything else gives an empty Usage.
func ParseUsage(raw jsonx.RawMessage) Usage {
	if IsNull(raw) || !jsonx.Valid(raw) {
		return Usage{}
	}
	return UsageOfValid(raw)
}

// usageKeys are the members of a usage object that ParseUsage reads, in
// the order of usageMember.
var usageKeys = []string{
	"prompt_tokens_details", "input_tokens_details", "completion_tokens_details", "output_tokens_details",
	"prompt_tokens", "input_tokens", "completion_tokens", "output_tokens",
	"cached_input_tokens", "prompt_cache_hit_tokens", "reasoning_output_tokens", "cost",
}

// usageMember indexes the values of usageKeys.
type usageMember int

const (
	promptDetails usageMember = iota
	inputDetails
	completionDetails
	outputDetails
	promptTokens
	inputTokens
	completionTokens
	outputTokens
	cachedInputTokens
	promptCacheHitTokens
	reasoningOutputTokens
	cost
	usageMembers
)

var (
	cachedKeys    = []string{"cached_tokens"}
	reasoningKeys = []string{"reasoning_tokens"}
)

// UsageOfValid is ParseUsage of a valid JSON value (from a validated
// record): its members are found in one pass, without a map of them (or of
// the details) or another validation, which were most of a Codex
// token_count's cost.
func UsageOfValid(raw []byte) Usage {
	var u Usage
	var m [usageMembers][]byte
	if !Fields(raw, usageKeys, m[:]) {
		return u
	}
	var cached, reasoning [1][]byte
	Fields(firstPresent(m[promptDetails], m[inputDetails]), cachedKeys, cached[:])
	Fields(firstPresent(m[completionDetails], m[outputDetails]), reasoningKeys, reasoning[:])
	u.Prompt = IntOf(m[promptTokens], m[inputTokens])
	u.Completion = IntOf(m[completionTokens], m[outputTokens])
	u.Cached = IntOf(cached[0], m[cachedInputTokens], m[promptCacheHitTokens])
	u.Reasoning = IntOf(reasoning[0], m[reasoningOutputTokens])
	if c, ok := Float(m[cost]); ok {
		u.Cost = model.Float(c)
	}
	for i, raw := range m {
		if i < int(promptTokens) {
			continue // objects
		}
		if i == int(cost) && FloatOutOfRange(raw) || i != int(cost) && IntOutOfRange(raw) {
			u.keepOutOfRange(usageKeys[i], raw)
		}
	}
	for i, raw := range [][]byte{cached[0], reasoning[0]} {
		if IntOutOfRange(raw) {
			u.keepOutOfRange([]string{"cached_tokens", "reasoning_tokens"}[i], raw)
		}
	}
	return u
}

func (u *Usage) keepOutOfRange(name string, raw []byte) {
	if u.OutOfRange == nil {
		u.OutOfRange = map[string]string{}
	}
	u.OutOfRange[name] = string(bytes.TrimSpace(raw))
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
	if len(u.OutOfRange) > 0 {
		add := make(map[string]json.RawMessage, len(u.OutOfRange))
		for name, text := range u.OutOfRange {
			add[name], _ = json.Marshal(text) // as text: no column type holds it
		}
		st.Extra = MergeExtras(st.Extra, add)
	}
}

// firstPresent is the first of the values that is present and not null.
func firstPresent(a, b []byte) []byte {
	if !IsNull(a) {
		return a
	}
	if !IsNull(b) {
		return b
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
