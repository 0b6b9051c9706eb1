package spans

import (
	"strings"
	"testing"
)

// TestDialects: the three message dialects Langfuse stores a generation's
// output in (Chat Completions / Anthropic, OpenTelemetry GenAI parts,
// Responses items), as JSON or as JSON text in a string, give the same
// text and call.
func TestDialects(t *testing.T) {
	for _, out := range []string{
		`{"role":"assistant","content":"ok","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"d\":1}"}}]}`,
		`"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"ls\",\"input\":{\"d\":1}}]}"`,
		`[{"role":"assistant","parts":[{"type":"text","content":"ok"},{"type":"tool_call","id":"c1","name":"ls","arguments":{"d":1}}]}]`,
		`{"object":"response","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},{"type":"function_call","call_id":"c1","name":"ls","arguments":"{\"d\":1}"}]}`,
	} {
		var texts []string
		var calls []Call
		for _, m := range messages([]byte(out), "assistant") {
			texts, calls = append(texts, m.texts...), append(calls, m.calls...)
		}
		if strings.Join(texts, "|") != "ok" || len(calls) != 1 || calls[0] != (Call{"c1", "ls", `{"d":1}`}) {
			t.Errorf("%s: texts %q, calls %+v", out, texts, calls)
		}
	}
}
