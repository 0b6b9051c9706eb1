package openhands

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// outcome maps the evaluation result a record holds to runs.reward and
// runs.scores (docs/formats.md, OpenHands "Outcome"), and removes what it
// moved from obj: test_result (benchmark output) goes to scores, except
// the git_patch it carries, which stays in extra; a resolver line's
// success, comment_success and result_explanation go to scores.
func (b *builder) outcome(obj map[string]jsonx.RawMessage) {
	r := &b.sl.Run
	if tr := format.SplitObject(obj["test_result"]); tr != nil {
		if v, ok := testReward(tr); ok {
			r.Reward = model.Float(v)
		}
		r.Scores = extra(format.Without(tr, "git_patch"))
		if patch, ok := tr["git_patch"]; ok {
			obj["test_result"] = jsonx.RawMessage(`{"git_patch":` + string(patch) + `}`)
		} else {
			delete(obj, "test_result")
		}
	}
	if ok, known := format.Bool(obj["success"]); known {
		r.Reward = model.Float(boolReward(ok))
		scores := map[string]jsonx.RawMessage{}
		for _, k := range []string{"success", "comment_success", "result_explanation"} {
			if v, present := obj[k]; present {
				scores[k] = v
				delete(obj, k)
			}
		}
		r.Scores = extra(scores)
	}
}

// testReward applies the rule of the benchmark that wrote test_result,
// 1 for resolved and 0 for not, as its own evaluation script decides:
// report.resolved (SWE-bench evaluation), resolved, final_score with
// result == total > 0 (OpenAgentSafety, TheAgentCompany),
// eval_result.passed == 1 (Commit0: every test passed), score (GAIA: a
// boolean; a number is kept as it is), passed (Harbor), success.
func testReward(tr map[string]jsonx.RawMessage) (float64, bool) {
	if v, ok := format.Bool(format.SplitObject(tr["report"])["resolved"]); ok {
		return boolReward(v), true
	}
	if v, ok := format.Bool(tr["resolved"]); ok {
		return boolReward(v), true
	}
	if fs := format.SplitObject(tr["final_score"]); fs != nil {
		result, ok1 := format.Float(fs["result"])
		total, ok2 := format.Float(fs["total"])
		if ok1 && ok2 {
			return boolReward(result > 0 && result == total), true
		}
	}
	if v, ok := format.Float(format.SplitObject(tr["eval_result"])["passed"]); ok {
		return boolReward(v == 1), true
	}
	if v, ok := format.Bool(tr["score"]); ok {
		return boolReward(v), true
	}
	if v, ok := format.Float(tr["score"]); ok {
		return v, true
	}
	for _, k := range []string{"passed", "success"} {
		if v, ok := format.Bool(tr[k]); ok {
			return boolReward(v), true
		}
	}
	return 0, false
}

func boolReward(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}
