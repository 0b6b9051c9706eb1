package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// Test Datasets are made by the tests: the bundled examples, plus files
// written here (hostile content, subagents) and Storyline stores written
// through the Go API for the big cases.

// hostileFile's name is itself markup: the page shows it as text.
const hostileFile = `hostile <img src=x onerror="window.__pwned='file'">.trajectory.json`

// hostileSession is the session_id of the hostile trajectory.
const hostileSession = `hostile-<script>window.__pwned='session'</script>`

// hostileATIF is a trajectory whose every field tries to run script.
var hostileATIF = `{
  "schema_version": "ATIF-v1.6",
  "session_id": "hostile-<script>window.__pwned='session'</script>",
  "agent": {"name": "<img src=x onerror=\"window.__pwned='agent'\">", "model_name": "javascript:window.__pwned='model'"},
  "steps": [
    {"step_id": 1, "timestamp": "2026-03-02T10:00:00Z", "source": "user",
     "message": "<script>window.__pwned='message'</script> hello <img src=x onerror=\"window.__pwned='img'\"> <a href=\"javascript:window.__pwned='link'\">click me</a>"},
    {"step_id": 2, "timestamp": "2026-03-02T10:00:01Z", "source": "agent",
     "message": "[markdown](javascript:window.__pwned='md') <iframe src=\"javascript:window.__pwned='iframe'\"></iframe>",
     "reasoning_content": "<style>body{display:none}</style><svg onload=\"window.__pwned='svg'\"></svg>",
     "tool_calls": [{"tool_call_id": "c<1>", "function_name": "<b onmouseover=\"window.__pwned='tool'\">bash</b>",
                     "arguments": {"cmd": "<script>window.__pwned='args'</script>"}}],
     "observation": {"results": [{"source_call_id": "c<1>", "content": "<img src=x onerror=\"window.__pwned='result'\"> javascript:alert(1)"}]}}
  ]
}`

// multiagentATIF is an ATIF 1.7 run whose worker is an embedded subagent,
// referenced from the result of the call that started it.
var multiagentATIF = `{
  "schema_version": "ATIF-v1.7",
  "session_id": "team-run",
  "trajectory_id": "lead",
  "agent": {"name": "lead", "version": "1", "model_name": "m-large"},
  "steps": [
    {"step_id": 1, "timestamp": "2026-03-03T09:00:00Z", "source": "user", "message": "Inspect the repository."},
    {"step_id": 2, "timestamp": "2026-03-03T09:00:02Z", "source": "agent", "message": "Delegating to a worker.",
     "tool_calls": [{"tool_call_id": "call_worker", "function_name": "worker", "arguments": {"task": "inspect"}}],
     "observation": {"results": [{"source_call_id": "call_worker", "content": "worker complete",
                                  "subagent_trajectory_ref": [{"trajectory_id": "worker-1", "session_id": "team-run"}]}]},
     "metrics": {"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.001}},
    {"step_id": 3, "timestamp": "2026-03-03T09:00:09Z", "source": "agent", "message": "Done.",
     "metrics": {"prompt_tokens": 150, "completion_tokens": 10, "cost_usd": 0.0012}}
  ],
  "subagent_trajectories": [{
    "schema_version": "ATIF-v1.7", "session_id": "team-run", "trajectory_id": "worker-1",
    "agent": {"name": "worker", "version": "1", "model_name": "m-small"},
    "steps": [
      {"step_id": 1, "timestamp": "2026-03-03T09:00:02Z", "source": "user", "message": "inspect"},
      {"step_id": 2, "timestamp": "2026-03-03T09:00:05Z", "source": "agent", "message": "Listing files.",
       "tool_calls": [{"tool_call_id": "w1", "function_name": "shell", "arguments": {"command": "ls"}}],
       "observation": {"results": [{"source_call_id": "w1", "content": "README.md\nsrc"}]},
       "metrics": {"prompt_tokens": 40, "completion_tokens": 8, "cost_usd": 0.0002}}
    ]
  }]
}`

// payloadMessage is the big message of payloadATIF (293 KB).
var payloadMessage = strings.Repeat("0123456789", 30_000) + "THE-END"

// payloadATIF has a message and a tool result far bigger than a preview.
func payloadATIF() string {
	return fmt.Sprintf(`{"schema_version": "ATIF-v1.6", "session_id": "payload",
  "agent": {"name": "payload-agent"},
  "steps": [
    {"step_id": 1, "source": "user", "message": %q},
    {"step_id": 2, "source": "agent", "message": "reading it",
     "tool_calls": [{"tool_call_id": "r1", "function_name": "read", "arguments": {"path": "big.txt"}}],
     "observation": {"results": [{"source_call_id": "r1", "content": %q}]}}
  ]}`, payloadMessage, strings.Repeat("log line\n", 5000))
}

// continuedATIF is segment n of a run written in two files; the first
// names the second as its continuation.
func continuedATIF(n int) string {
	ref := ""
	if n == 1 {
		ref = `"continued_trajectory_ref": "part2.trajectory.json",`
	}
	return fmt.Sprintf(`{"schema_version": "ATIF-v1.6", "session_id": "cont-run", %s
  "agent": {"name": "segmented"},
  "steps": [{"step_id": 1, "source": "user", "message": "segment %d"}]}`, ref, n)
}

// exampleDataset copies the bundled examples into a new directory and adds
// the hostile and multi-agent trajectories.
func exampleDataset(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dir, rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"hostile/" + hostileFile: hostileATIF, "team/team.trajectory.json": multiagentATIF,
		"big/payload.trajectory.json": payloadATIF(), "cont/part1.trajectory.json": continuedATIF(1), "cont/part2.trajectory.json": continuedATIF(2)} {
		if err := writeFile(filepath.Join(dir, name), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// writeStore writes Storylines into a new Storyline store at dir.
func writeStore(t *testing.T, dir string, add func(func(*model.Storyline))) {
	t.Helper()
	if err := storyline.Create(dir); err != nil {
		t.Fatal(err)
	}
	st, err := storyline.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	add(func(sl *model.Storyline) {
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := w.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// longStoryline is one Storyline of n steps: a user turn, then agent steps
// that each call a tool, answered by the next (tool) step.
func longStoryline(file, session string, n int) *model.Storyline {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	sl := &model.Storyline{Run: model.Run{RunID: session, SessionID: session, SourceFormat: "atif/1.6", Status: model.StatusCompleted,
		AgentName: ptr("long-agent"), AgentModelName: ptr("m-long"), StartedAt: ptr(start), EndedAt: ptr(start.Add(time.Duration(n) * time.Second))}}
	for i := range n {
		ts := start.Add(time.Duration(i) * time.Second)
		st := model.Step{StepID: fmt.Sprint(i + 1), Timestamp: ptr(ts), MessageKind: "text"}
		switch {
		case i == 0:
			st.Source, st.MessageValue = "user", ptr("Work through the whole backlog, one item at a time.")
		case i%2 == 1:
			st.Source, st.MessageValue = "agent", ptr(fmt.Sprintf("Item %d: running the check.", i))
			st.PromptTokens, st.CompletionTokens, st.CostUSD = ptr(int64(1000+i%500)), ptr(int64(20+i%30)), ptr(0.0001)
			sl.ToolCalls = append(sl.ToolCalls, model.ToolCall{StepID: st.StepID, ToolCallID: fmt.Sprintf("call_%d", i), FunctionName: "check",
				Arguments: ptr(fmt.Sprintf(`{"item": %d}`, i)), ArgumentsValid: true, Result: ptr(fmt.Sprintf("item %d ok", i)),
				ResultStatus: "ok", ResultStepID: ptr(fmt.Sprint(i + 2)), ResultLink: "id"})
		default:
			st.Source, st.Observation = "tool", ptr(fmt.Sprintf("item %d ok", i-1))
		}
		sl.Steps = append(sl.Steps, st)
	}
	sl.Finalize(file)
	return sl
}

// manyRuns adds n one-step Storylines with varied agents, models, status
// and start times.
func manyRuns(add func(*model.Storyline), file string, n int) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	agents, models, status := []string{"alpha", "beta", "gamma", "delta"}, []string{"m-1", "m-2", "m-3"}, []string{model.StatusCompleted, model.StatusError, model.StatusUnknown}
	for i := range n {
		id := fmt.Sprintf("run-%06d", i)
		ts := start.Add(time.Duration(i) * time.Minute)
		sl := &model.Storyline{Run: model.Run{RunID: id, SessionID: id, SourceFormat: "atif/1.6", Status: status[i%3],
			AgentName: ptr(agents[i%4]), AgentModelName: ptr(models[i%3]), StartedAt: ptr(ts), EndedAt: ptr(ts.Add(time.Duration(10+i%50) * time.Second)),
			Reward: ptr(float64(i % 2))}}
		sl.Steps = []model.Step{{StepID: "1", Source: "user", MessageKind: "text", MessageValue: ptr(fmt.Sprintf("task %d", i)), Timestamp: ptr(ts)}}
		sl.Finalize(file)
		add(sl)
	}
}

// readableFile's name hides a right-to-left override: shown raw,
// "notes‮fdp.trajectory.json" reads as "notesnosj.yrotcejart.pdf".
const readableFile = "notes\u202efdp.trajectory.json"

// tinyPNG is a 1×1 PNG, as a message's inline image carries it.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// readableATIF has what a transcript must make readable: Markdown with raw
// HTML and an inline image, ANSI colors and invisible characters in a
// result, and a final call that never got a result and has no arguments
// after a list item indented as code (which once hung the renderer).
var readableATIF = `{
  "schema_version": "ATIF-v1.6",
  "session_id": "readable",
  "agent": {"name": "reader"},
  "steps": [
    {"step_id": 1, "timestamp": "2026-03-04T10:00:00Z", "source": "user",
     "message": "# Plan\n\nRun **the tests** and ` + "`go vet`" + `:\n\n` + "```go\\nfunc main() {}\\n```" + `\n\n- first\n- second\n\n<b>raw html</b> stays text. ![chart](data:image/png;base64,` + tinyPNG + `)"},
    {"step_id": 2, "timestamp": "2026-03-04T10:00:01Z", "source": "agent", "message": "Running them.",
     "tool_calls": [{"tool_call_id": "t1", "function_name": "bash", "arguments": {"cmd": "go test"}}],
     "observation": {"results": [{"source_call_id": "t1", "content": "\u001b[31mFAIL\u001b[0m in report\u202efdp.jsonl"}]}},
    {"step_id": 3, "timestamp": "2026-03-04T10:00:02Z", "source": "agent", "message": "Giving up:\n\n    - an item indented as code",
     "tool_calls": [{"tool_call_id": "t2", "function_name": "finish", "arguments": null}]}
  ]
}`

// craftedDataset is a Dataset of the trajectories above that the samples
// lack.
func craftedDataset(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{readableFile: readableATIF, "team/team.trajectory.json": multiagentATIF,
		"diverge/a.trajectory.json": divergingATIF("a", "ls -la"), "diverge/b.trajectory.json": divergingATIF("b", "ls -la /tmp")}
	for name, body := range files {
		if err := writeFile(filepath.Join(dir, name), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// divergeAt is the first step at which the two diverging runs differ:
// past the first page of Compare's rows.
const divergeAt = 600

// divergingATIF is a 700-step run whose steps are the same in every copy
// but step divergeAt, which runs cmd.
func divergingATIF(session, cmd string) string {
	steps := make([]string, 0, 700)
	for i := 0; i < 700; i++ {
		msg := fmt.Sprintf("step %d: reading the logs", i)
		if i == divergeAt {
			msg = "now running " + cmd + " to look"
		}
		steps = append(steps, fmt.Sprintf(`{"step_id": %d, "source": "agent", "message": %q}`, i+1, msg))
	}
	return fmt.Sprintf(`{"schema_version": "ATIF-v1.6", "session_id": %q, "agent": {"name": "long"}, "steps": [%s]}`, session, strings.Join(steps, ","))
}
