package query

import (
	"context"
	"strings"
	"testing"
)

// TestReadsFreeText: a relation is read lean only when the statement
// provably names none of its free-text columns. Each case lists the
// relations it may read free text of; a construct that reaches columns
// without naming them (stars, whole-row references, NATURAL joins, PIVOT,
// positional references) reads all of them.
func TestReadsFreeText(t *testing.T) {
	cases := []struct {
		sql  string
		text string // relations whose free text may be read, space separated
	}{
		{"SELECT count(*) FROM tool_calls", ""},
		{"SELECT count(*), count(DISTINCT function_name) FROM tool_calls WHERE result_status = 'ok'", ""},
		{"SELECT function_name, count(*) FROM tool_calls GROUP BY ALL ORDER BY ALL", ""},
		{"SELECT source, count(*), sum(prompt_tokens) FROM steps GROUP BY 1", ""},
		{"SELECT count(arguments) FROM tool_calls", "tool_calls"},
		{"SELECT count(*) FROM tool_calls WHERE result IS NULL", "tool_calls"},
		{"SELECT t.ARGUMENTS FROM tool_calls t", "tool_calls"},
		{`SELECT "Result" FROM tool_calls`, "tool_calls"},
		{"SELECT extra->>'x' FROM tool_calls", "runs steps tool_calls"}, // every relation has an extra
		{"SELECT sum(length(message_value)) FROM steps", "steps"},
		{"SELECT step_id FROM steps WHERE reasoning LIKE '%x%'", "steps"},
		{"SELECT scores FROM runs", "runs"},
		{"SELECT * FROM tool_calls", "runs steps tool_calls"},
		{"SELECT count(*) FROM (SELECT * FROM tool_calls)", "runs steps tool_calls"},
		{"SELECT t.* FROM tool_calls t", "runs steps tool_calls"},
		{"SELECT * EXCLUDE (arguments, result, extra) FROM tool_calls", "runs steps tool_calls"},
		{"SELECT COLUMNS('arg.*') FROM tool_calls", "runs steps tool_calls"},
		{"SELECT #1 FROM tool_calls", "runs steps tool_calls"},
		{"SELECT t FROM tool_calls t", "runs steps tool_calls"},
		{"SELECT to_json(tool_calls) FROM tool_calls", "runs steps tool_calls"},
		{"SELECT dataset.tool_calls FROM dataset.tool_calls", "runs steps tool_calls"},
		{"WITH c AS (SELECT arguments FROM tool_calls) SELECT count(*) FROM c", "tool_calls"},
		{"WITH c AS (SELECT function_name FROM tool_calls) SELECT c FROM c", "runs steps tool_calls"},
		{"SELECT count(*) FROM steps s JOIN tool_calls c USING (_file_, session_id, step_id)", ""},
		{"SELECT count(*) FROM steps JOIN tool_calls USING (_file_, extra)", "runs steps tool_calls"},
		{"SELECT count(*) FROM steps NATURAL JOIN tool_calls", "runs steps tool_calls"},
		{"SELECT count(*) FROM tool_calls PIVOT (count(*) FOR function_name IN ('bash'))", "runs steps tool_calls"},
		{"SELECT function_name FROM tool_calls ORDER BY *", ""},
		{"SELECT function_name FROM tool_calls ORDER BY arguments", "tool_calls"},
		{"SELECT list_transform([1], x -> x + step_index) FROM steps", ""},
		{"SELECT 'arguments', 'message_value' FROM steps", ""}, // a string is not a column
		{"EXPLAIN SELECT count(*) FROM tool_calls", ""},
		{"EXPLAIN SELECT count(result) FROM tool_calls", "tool_calls"},
	}
	p := testParser(t)
	for _, tc := range cases {
		res, err := p.Analyze(context.Background(), tc.sql, AnalyzeOptions{Default: true})
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		var got []string
		for _, rel := range []string{RelRuns, RelSteps, RelToolCalls} {
			if res.ReadsFreeText(rel) {
				got = append(got, rel)
			}
		}
		if g := strings.Join(got, " "); g != tc.text {
			t.Errorf("%s: may read free text of [%s], want [%s]", tc.sql, g, tc.text)
		}
	}
	if !(&Analysis{}).ReadsFreeText(RelToolCalls) {
		t.Error("an Analysis not made by Analyze must read free text")
	}
}
