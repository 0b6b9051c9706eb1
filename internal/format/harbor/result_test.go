package harbor

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

var src = format.Source{Path: "jobs/j/hello-world__7XkQ2pd/result.json", File: "hello-world__7XkQ2pd/result.json"}

// TestTrialResultFixture: a TrialResult as Harbor writes it (indented,
// every section present): reward 1.0 from verifier_result.rewards, the
// agent's totals from agent_result.
func TestTrialResultFixture(t *testing.T) {
	o, err := ParseTrialResult(testutil.Fixture(t, "result.json"), src)
	if err != nil {
		t.Fatal(err)
	}
	if o.Reward == nil || *o.Reward != 1 || model.Deref(o.Scores) != `{"reward":1.0}` || len(o.Warnings) != 0 {
		t.Errorf("reward %v scores %v warnings %v", o.Reward, model.Deref(o.Scores), o.Warnings)
	}
	if testutil.OrMinus1(o.PromptTokens) != 7802 || testutil.OrMinus1(o.CachedTokens) != 1024 || testutil.OrMinus1(o.CompletionTokens) != 311 ||
		o.CostUSD == nil || *o.CostUSD != 0.0227 || o.Source != src.Path {
		t.Errorf("totals: %+v", o)
	}
}

func TestRewardRule(t *testing.T) {
	tests := []struct {
		name, doc string
		reward    float64 // -1 = NULL
		scores    string  // "" = NULL
		warnings  []string
	}{
		{"the reward key", `{"verifier_result":{"rewards":{"f2p":1,"reward":0.5,"p2p":0}}}`, 0.5, `{"f2p":1,"p2p":0,"reward":0.5}`, nil},
		{"a single other key", `{"verifier_result":{"rewards":{"accuracy":0.75}}}`, 0.75, `{"accuracy":0.75}`, nil},
		{"integers", `{"verifier_result":{"rewards":{"reward":1}}}`, 1, `{"reward":1}`, nil},
		{"several, none named reward", `{"verifier_result":{"rewards":{"a":1,"b":0}}}`, -1, `{"a":1,"b":0}`,
			[]string{`/verifier_result/rewards: 2 rewards and none named "reward": reward is NULL (every reward is in scores)`}},
		{"no verifier result", `{"verifier_result":null,"exception_info":null}`, -1, "", nil},
		{"no rewards", `{"verifier_result":{"rewards":null}}`, -1, "", nil},
		{"absent", `{"task_name":"t"}`, -1, "", nil},
		{"raised before the verifier", `{"verifier_result":null,"exception_info":{"exception_type":"AgentTimeoutError","exception_message":"timed out"}}`,
			-1, `{"exception_type":"AgentTimeoutError"}`, nil},
		{"raised, with a reward", `{"verifier_result":{"rewards":{"reward":0.0}},"exception_info":{"exception_type":"NonZeroAgentExitCodeError"}}`,
			-1, `{"exception_type":"NonZeroAgentExitCodeError","reward":0.0}`, nil},
		{"a reward that is not a number", `{"verifier_result":{"rewards":{"reward":"1.0","ok":true,"n":2}}}`, 2, `{"n":2}`,
			[]string{"/verifier_result/rewards/reward: reward is not a number; left out", "/verifier_result/rewards/ok: reward is not a number; left out"}},
		{"rewards not an object", `{"verifier_result":{"rewards":[1]}}`, -1, "", []string{"/verifier_result/rewards: rewards is not an object; ignored"}},
		{"verifier_result not an object", `{"verifier_result":1.0}`, -1, "", []string{"/verifier_result: verifier_result is not an object; ignored"}},
		{"raised without a type", `{"exception_info":{"exception_message":"?"}}`, -1, "", []string{"/exception_info/exception_type: the trial raised, but exception_type is not a name"}},
		{"bad totals", `{"agent_result":{"n_input_tokens":"12","n_output_tokens":-3,"cost_usd":"x"}}`, -1, "",
			[]string{"/agent_result/n_input_tokens: n_input_tokens is not a token count; ignored", "/agent_result/n_output_tokens: n_output_tokens is not a token count; ignored",
				"/agent_result/cost_usd: cost_usd is not a number; ignored"}},
		{"byte order mark", format.BOM + `{"verifier_result":{"rewards":{"reward":1}}}`, 1, `{"reward":1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseTrialResult([]byte(tt.doc), src)
			if err != nil {
				t.Fatal(err)
			}
			reward := -1.0
			if o.Reward != nil {
				reward = *o.Reward
			}
			var warnings []string
			for _, w := range o.Warnings {
				if w.File != src.Path {
					t.Errorf("warning names %q", w.File)
				}
				warnings = append(warnings, w.Pointer+": "+w.Message)
			}
			if reward != tt.reward || model.Deref(o.Scores) != tt.scores || strings.Join(warnings, "\n") != strings.Join(tt.warnings, "\n") {
				t.Errorf("reward %v scores %q warnings %q; want %v %q %q", reward, model.Deref(o.Scores), warnings, tt.reward, tt.scores, tt.warnings)
			}
		})
	}
}

// TestUnreadableResult: input that is not a TrialResult document fails
// with an error naming the file (and the line, for broken JSON).
func TestUnreadableResult(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"{\n  \"verifier_result\": {\n    \"rewards\": {\"reward\": 1.0,}\n  }\n}", src.Path + ":3: harbor result.json: invalid JSON at column"},
		{`{"verifier_result": {"rewards"`, src.Path + ":1: harbor result.json: invalid JSON: the document ends early"},
		{`[1, 2]`, src.Path + ": harbor result.json is not a JSON object"},
		{`null`, src.Path + ": harbor result.json is not a JSON object"},
		{"", src.Path + ":1: harbor result.json: invalid JSON: the document ends early"},
	}
	for _, tt := range tests {
		_, err := ParseTrialResult([]byte(tt.doc), src)
		var pe *format.ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%.30q: err = %v, want prefix %q", tt.doc, err, tt.want)
		}
	}
	big := bytes.Repeat([]byte(" "), MaxResultBytes+1)
	if _, err := ReadTrialResult(bytes.NewReader(big), src); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized: %v", err)
	}
}

// FuzzParseTrialResult: any input parses or fails with a ParseError, never
// panics; scores, when set, is a JSON object, and the reward is one of its
// values.
func FuzzParseTrialResult(f *testing.F) {
	f.Add(testutil.Fixture(f, "result.json"))
	for _, s := range []string{`{"verifier_result":{"rewards":{"a":1,"b":2}}}`, `{"exception_info":{"exception_type":7}}`,
		`{"verifier_result":{"rewards":{"exception_type":1}},"exception_info":{"exception_type":"E"}}`, `{"agent_result":[]}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseTrialResult(data, src)
		if err != nil {
			var pe *format.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a ParseError: %v", err)
			}
			return
		}
		if o.Scores != nil {
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(*o.Scores), &m) != nil {
				t.Fatalf("scores is not a JSON object: %s", *o.Scores)
			}
		}
		if o.Reward != nil && o.Scores == nil {
			t.Fatal("a reward without scores")
		}
	})
}
