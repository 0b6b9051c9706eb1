// Package harbor reads what a Harbor trial directory records beside the
// agent's trajectory: the trial's result.json (Harbor's TrialResult), which
// holds the verifier's rewards, the exception the trial raised, and the
// agent's token and cost totals. Discovery pairs a trajectory with its
// trial's result.json; ingest applies the outcome to the trajectory's runs
// (ingest.Options.Outcome). docs/formats.md (Harbor trial results)
// documents the rules.
package harbor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// ResultFile is the name of a trial's result file.
const ResultFile = "result.json"

// MaxResultBytes bounds a result.json (it holds the trial's config and an
// exception's traceback, rarely more than a few hundred KiB).
const MaxResultBytes = 16 << 20

// RewardKey is the reward Harbor's own metrics take when a verifier
// records several.
const RewardKey = "reward"

// ReadTrialResult reads a trial's result.json from r (at most
// MaxResultBytes).
func ReadTrialResult(r io.Reader, src format.Source) (*format.Outcome, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxResultBytes+1))
	if err != nil {
		return nil, format.Errorf(src, 0, "", "read: %w", err)
	}
	if len(data) > MaxResultBytes {
		return nil, format.Errorf(src, 0, "", "harbor %s larger than %d bytes", ResultFile, MaxResultBytes)
	}
	return ParseTrialResult(data, src)
}

// trialResult is the part of TrialResult the outcome comes from; every
// other member (config, agent_info, timings, ...) is not read.
type trialResult struct {
	VerifierResult json.RawMessage `json:"verifier_result"`
	ExceptionInfo  json.RawMessage `json:"exception_info"`
	AgentResult    json.RawMessage `json:"agent_result"`
}

// ParseTrialResult maps a TrialResult document:
//
//   - Reward: verifier_result.rewards["reward"], or the only reward when
//     there is one (the rule of Harbor's metrics). NULL when the trial has
//     no verifier result or no rewards, when it raised (exception_info is
//     set), or when several rewards exist and none is named "reward".
//   - Scores: every reward, plus "exception_type" when the trial raised;
//     NULL when there is neither.
//   - Reported totals from agent_result: n_input_tokens (cached tokens
//     included) → prompt, n_output_tokens → completion, n_cache_tokens →
//     cached, cost_usd → cost.
//
// A document that is not JSON, or not an object, is an error; fields of
// the wrong type are warnings.
func ParseTrialResult(data []byte, src format.Source) (*format.Outcome, error) {
	data, _ = format.TrimBOM(data)
	if !jsonx.Valid(data) {
		var v jsonx.RawMessage
		return nil, format.DocumentError(src, data, "harbor "+ResultFile, jsonx.Unmarshal(data, &v))
	}
	var tr trialResult
	if bytes.TrimSpace(data)[0] != '{' || jsonx.Unmarshal(data, &tr) != nil {
		return nil, format.Errorf(src, 0, "", "harbor %s is not a JSON object", ResultFile)
	}
	o := &format.Outcome{Source: src.Path}
	warn := func(ptr, msg string) {
		o.Warnings = append(o.Warnings, model.Warning{File: src.Path, Pointer: ptr, Message: msg})
	}
	object := func(raw json.RawMessage, ptr string) map[string]jsonx.RawMessage {
		m := format.SplitObject(raw)
		if m == nil && !format.IsNull(raw) {
			warn(ptr, ptr[1:]+" is not an object; ignored")
		}
		return m
	}

	scores := map[string]jsonx.RawMessage{}
	var order []string // reward keys in document order
	if rewards := object(tr.VerifierResult, "/verifier_result")["rewards"]; !format.IsNull(rewards) {
		ok := format.EachMember(rewards, func(key string, val []byte) {
			if val[0] == '"' || number(val) == nil {
				warn(format.Pointer("verifier_result", "rewards", key), "reward is not a number; left out")
				return
			}
			if _, dup := scores[key]; !dup {
				order = append(order, key)
			}
			scores[key] = val
		})
		if !ok {
			warn("/verifier_result/rewards", "rewards is not an object; ignored")
		}
	}

	raised := !format.IsNull(tr.ExceptionInfo)
	if raised {
		typ := object(tr.ExceptionInfo, "/exception_info")["exception_type"]
		if name := bytes.TrimSpace(typ); len(name) > 2 && name[0] == '"' {
			if _, clash := scores["exception_type"]; clash {
				warn("/verifier_result/rewards/exception_type", "a reward named exception_type is replaced by the exception's type in scores")
			}
			scores["exception_type"] = name
		} else {
			warn("/exception_info/exception_type", "the trial raised, but exception_type is not a name")
		}
	}

	switch reward, have := scores[RewardKey]; {
	case raised || len(order) == 0:
	case have:
		o.Reward = number(reward)
	case len(order) == 1:
		o.Reward = number(scores[order[0]])
	default:
		warn("/verifier_result/rewards", fmt.Sprintf("%d rewards and none named %q: reward is NULL (every reward is in scores)", len(order), RewardKey))
	}
	o.Scores = format.Extra(scores)

	agent := object(tr.AgentResult, "/agent_result")
	count := func(key string) *int64 {
		raw := agent[key]
		if format.IsNull(raw) {
			return nil
		}
		if v, ok := format.Int(raw); ok && v >= 0 && raw[0] != '"' {
			return model.Int(v)
		}
		warn(format.Pointer("agent_result", key), key+" is not a token count; ignored")
		return nil
	}
	o.PromptTokens, o.CompletionTokens, o.CachedTokens = count("n_input_tokens"), count("n_output_tokens"), count("n_cache_tokens")
	if raw := agent["cost_usd"]; !format.IsNull(raw) {
		if c := number(raw); c != nil && *c >= 0 && raw[0] != '"' {
			o.CostUSD = c
		} else {
			warn("/agent_result/cost_usd", "cost_usd is not a number; ignored")
		}
	}
	return o, nil
}

func number(raw json.RawMessage) *float64 {
	if f, ok := format.Float(raw); ok {
		return model.Float(f)
	}
	return nil
}
