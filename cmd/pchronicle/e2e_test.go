package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

type result struct {
	stdout, stderr string
	code           int
}

// run executes the real binary with an isolated config directory.
func run(t *testing.T, args ...string) result {
	t.Helper()
	stdout, stderr, code := testutil.Run(t, args...)
	return result{stdout, stderr, code}
}

func TestInspectJSONHasRunColumnsAndWarnings(t *testing.T) {
	r := run(t, "inspect", testutil.SamplesDir(t), "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// import_file names a store row's input; inspect reads files, never a
	// store, so it leaves that column out.
	want := append(slices.DeleteFunc(model.ColumnNames(model.RelRuns), func(c string) bool { return c == "import_file" }), "warnings")
	n := 0
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		n++
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("line %d is not a JSON object: %v", n, err)
		}
		if len(obj) != len(want) {
			t.Fatalf("line %d has %d keys, want %d", n, len(obj), len(want))
		}
		for _, k := range want {
			if _, ok := obj[k]; !ok {
				t.Fatalf("line %d lacks key %q", n, k)
			}
		}
	}
	// The samples hold 415 Storylines, counted per file by each adapter's
	// figure tests (each counted from the document by its format's rules):
	// ATIF 10 (the multiagent file's embedded child included), OpenAI 319
	// (Glaive 300 records, harbor traces 7 + 2 episodes, cookbook 5, fast-agent
	// 2, the Codex rollout 1, the two Amp threads read as wrapped histories),
	// Inspect 30 (samples × epochs: 15 + 6 + 4 + 2 + 1 + 1 + 1), Aider 13
	// sections, Gemini CLI 1, OpenHands 7, SWE-agent 5, ACTF 1, τ-bench 19
	// (τ-bench 1, τ² results 3 + 12, voice simulations 3), Langfuse 7
	// (1 + 2 + 4), Pi 2, Qwen Code 1. The OpenHands V1 conversation
	// directories are one source only in a Dataset and an import; inspect
	// reads their member files, none of which is a trajectory alone.
	if n != 415 {
		t.Fatalf("%d Storylines, want 415", n)
	}
}

func TestInspectStepsAddsStepsAndToolCalls(t *testing.T) {
	path := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories", "atif", "fix-failing-test.trajectory.json")
	r := run(t, "inspect", path, "--format", "jsonl", "--steps")
	var obj struct {
		Steps     []model.Step     `json:"steps"`
		ToolCalls []model.ToolCall `json:"tool_calls"`
		StepCount int64            `json:"step_count"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
		t.Fatalf("%v: %s %s", err, r.stdout, r.stderr)
	}
	if obj.StepCount != 6 || len(obj.Steps) != 6 || len(obj.ToolCalls) != 4 || obj.ToolCalls[0].ResultStatus != "ok" {
		t.Fatalf("steps=%d/%d calls=%d", obj.StepCount, len(obj.Steps), len(obj.ToolCalls))
	}
}

func TestInspectBadInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories", "openai", "support-chats.jsonl")
	data, _ := os.ReadFile(good)
	os.WriteFile(filepath.Join(dir, "a-good.jsonl"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "b-package.json"), []byte(`{"name":"x","dependencies":{}}`), 0o644)
	// Cut in a line that then ends: damaged, not a file still being written.
	os.WriteFile(filepath.Join(dir, "c-truncated.jsonl"), append(data[:len(data)/2:len(data)/2], '\n'), 0o644)

	// b-package.json is not a trajectory: one summary line, never a failure.
	const skipped = "pchronicle: warning: 1 file is not a trajectory: "
	r := run(t, "inspect", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "c-truncated.jsonl:") || !strings.Contains(r.stderr, skipped) {
		t.Fatalf("strict: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, "inspect", dir, "--errors", "report", "--format", "csv")
	if r.code != 0 {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, skipped) || !strings.Contains(r.stderr, "b-package.json") || !strings.Contains(r.stderr, "c-truncated.jsonl:") ||
		!strings.Contains(r.stderr, "1 file(s) could not be inspected") {
		t.Fatalf("report must list each bad file with its location: %q", r.stderr)
	}
	if strings.Count(r.stdout, "a-good.jsonl") != 3 {
		t.Fatalf("good file's 3 Storylines missing:\n%s", r.stdout)
	}
	r = run(t, "inspect", filepath.Join(dir, "missing.json"))
	if r.code == 0 || !strings.Contains(r.stderr, "missing.json") {
		t.Fatalf("missing file: exit %d, %q", r.code, r.stderr)
	}
}

func TestQueryForms(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories")
	r := run(t, "query", ex, "SELECT count(*) AS n FROM runs", "--format", "csv")
	if r.code != 0 || r.stdout != "n\n5\n" {
		t.Fatalf("positional: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "query", ex, "--sql", "SELECT count(*) AS n FROM dataset.tool_calls WHERE result_status = 'ok'", "--format", "jsonl")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"n":9}` {
		t.Fatalf("--sql: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "query", "--mount", "a="+filepath.Join(ex, "atif"), "--mount", "team/o="+filepath.Join(ex, "openai"),
		"SELECT (SELECT count(*) FROM a.runs) + (SELECT count(*) FROM o.runs) AS n", "--format", "csv")
	if r.code != 0 || r.stdout != "n\n4\n" {
		t.Fatalf("mounts: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "query", "--mount", "a="+ex, "SELECT count(*) FROM runs")
	if r.code == 0 {
		t.Fatal("unqualified name with only mounts must fail")
	}
	r = run(t, "query", ex, "--mount", "a="+ex, "SELECT 1")
	if r.code == 0 || !strings.Contains(r.stderr, "mutually exclusive") {
		t.Fatalf("positional + mount: %d %q", r.code, r.stderr)
	}
	cfg := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(cfg, []byte("[pins.ex]\nuri = \""+ex+"\"\n"), 0o644)
	r = run(t, "query", "-c", cfg, "@ex/openai", "SELECT count(*) AS n FROM runs", "--format", "csv")
	if r.code != 0 || r.stdout != "n\n3\n" {
		t.Fatalf("TOML pin: %d %q %q", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(cfg, []byte("[pins.ex]\nuri = \""+ex+"\"\nbogus = 1\n"), 0o644)
	r = run(t, "query", "-c", cfg, "@ex", "SELECT 1")
	if r.code == 0 || !strings.Contains(r.stderr, "bogus") {
		t.Fatalf("unknown config key must be named: %d %q", r.code, r.stderr)
	}
}
