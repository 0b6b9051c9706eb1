package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// The real binary's `mcp` over stdio, driven by the SDK's client: it
// initializes, lists its tools, answers each one, returns a write and a
// timeout as tool errors an agent can act on, and its query tool's rows
// are the query command's.
func TestMCPOverStdio(t *testing.T) {
	dataset := sampleDataset(t, "openai")
	cmd := exec.Command(testutil.Binary(t), "mcp", dataset)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	client := sdk.NewClient(&sdk.Implementation{Name: "pchronicle-test", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.InitializeResult().ServerInfo.Name; got != "pchronicle" {
		t.Fatalf("server %q", got)
	}
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if len(tl.Description) < 40 {
			t.Errorf("tool %s: description %q is too thin for a model to use it right", tl.Name, tl.Description)
		}
	}
	slices.Sort(names)
	if want := []string{"compare_runs", "describe_relations", "find_storylines", "list_datasets", "query", "read_storyline"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	out, _ := testutil.CallTool(t, s, "list_datasets", nil)
	if ds, _ := out["datasets"].([]any); len(ds) != 1 {
		t.Errorf("list_datasets: %v", out)
	}
	out, _ = testutil.CallTool(t, s, "describe_relations", map[string]any{"relation": "tool_calls"})
	rel := out["relations"].([]any)[0].(map[string]any)
	if cols, _ := rel["columns"].([]any); rel["name"] != "tool_calls" || len(cols) == 0 {
		t.Fatalf("describe_relations tool_calls: %v", out)
	}
	for _, c := range rel["columns"].([]any) {
		col := c.(map[string]any)
		if desc, _ := col["description"].(string); desc == "" {
			t.Errorf("tool_calls.%s has no description", col["name"])
		}
	}

	sql := "SELECT _file_, session_id, step_count FROM runs ORDER BY _file_, session_id"
	stdout, stderr, code := testutil.Run(t, "query", dataset, sql, "--format", "json")
	if code != 0 {
		t.Fatal(stderr)
	}
	var want []map[string]any
	json.Unmarshal([]byte(stdout), &want)
	if len(want) < 4 {
		t.Fatalf("only %d runs", len(want))
	}
	out, errText := testutil.CallTool(t, s, "query", map[string]any{"sql": sql, "max_rows": 3})
	if errText != "" {
		t.Fatal(errText)
	}
	rows := out["rows"].([]any)
	if len(rows) != 3 || out["truncated"] != true {
		t.Fatalf("query: %d rows, truncated %v; want 3, truncated", len(rows), out["truncated"])
	}
	for i, r := range rows {
		row := r.([]any)
		if fmt.Sprint(row) != fmt.Sprint([]any{want[i]["_file_"], want[i]["session_id"], want[i]["step_count"]}) {
			t.Errorf("row %d: %v, query printed %v", i, row, want[i])
		}
	}

	_, errText = testutil.CallTool(t, s, "query", map[string]any{"sql": "CREATE TABLE stolen AS SELECT * FROM runs"})
	if !strings.Contains(errText, "query_rejected") || !strings.Contains(errText, "read-only") {
		t.Errorf("a write: %q, want a query_rejected tool error", errText)
	}
	_, errText = testutil.CallTool(t, s, "query", map[string]any{"sql": "SELECT count(*) FROM runs r JOIN steps s ON r.session_id = s.session_id"})
	if !strings.Contains(errText, "_file_") {
		t.Errorf("a join without _file_: %q, want the join rule's message with its fix", errText)
	}
	start := time.Now()
	_, errText = testutil.CallTool(t, s, "query", map[string]any{"timeout_ms": 300,
		"sql": "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10000000000) SELECT count(*) FROM t"})
	if !strings.Contains(errText, "query_timeout") || time.Since(start) > 20*time.Second {
		t.Errorf("a timeout: %q after %v", errText, time.Since(start))
	}

	first, second := want[0], want[1]
	out, errText = testutil.CallTool(t, s, "find_storylines", map[string]any{"session_id": first["session_id"]})
	found, _ := out["storylines"].([]any)
	if errText != "" || len(found) == 0 || found[0].(map[string]any)["_file_"] != first["_file_"] {
		t.Fatalf("find_storylines: %v %s", out, errText)
	}
	out, _ = testutil.CallTool(t, s, "read_storyline", map[string]any{"file": first["_file_"], "session_id": first["session_id"], "limit": 2, "max_chars": 10})
	steps, _ := out["steps"].([]any)
	if out["run"] == nil || len(steps) == 0 || len(steps) > 2 {
		t.Fatalf("read_storyline: %v", out)
	}
	out, errText = testutil.CallTool(t, s, "compare_runs", map[string]any{"a_file": first["_file_"], "a_session_id": first["session_id"],
		"b_file": second["_file_"], "b_session_id": second["session_id"]})
	if errText != "" || out["counts"] == nil || out["delta"] == nil {
		t.Fatalf("compare_runs: %v %s", out, errText)
	}
	_, errText = testutil.CallTool(t, s, "read_storyline", map[string]any{"file": "no/such.json", "session_id": "x"})
	if !strings.Contains(errText, "not_found") || !strings.Contains(errText, "find_storylines") {
		t.Errorf("an unknown Storyline: %q, want not_found with a hint", errText)
	}
}
