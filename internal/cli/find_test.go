package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// sampleDataset returns shared/samples/<sub>, found beside the repository
// root (the directory holding go.mod).
func sampleDataset(t *testing.T, sub string) string {
	return filepath.Join(testutil.SamplesDir(t), sub)
}

// runInProcess executes the CLI in-process.
func runInProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "-c", filepath.Join(t.TempDir(), "none.toml"))
	code = Execute(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func jsonlRows(t *testing.T, s string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := jsonx.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		rows = append(rows, m)
	}
	return rows
}

func TestFindCoordinates(t *testing.T) {
	atif := sampleDataset(t, "atif")
	const openhands = "harbor-golden/misc/openhands_hello-world.trajectory.json"
	// Figures counted with jq on the sample documents.
	tests := []struct {
		name string
		args []string
		want []string // _file_|session_id|step_count per row, in order
	}{
		{"session", []string{"--session", "agent-004"},
			[]string{"nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json|agent-004|3"}},
		{"run groups subagents", []string{"--run", "harbor-golden-run"},
			[]string{"fast-agent_harbor_multiagent_v1_7.json|harbor-golden-run|3", "fast-agent_harbor_multiagent_v1_7.json|harbor-golden-run/traj_child_golden|2"}},
		{"agent is a case-insensitive substring", []string{"--agent", "WORKER"},
			[]string{"fast-agent_harbor_multiagent_v1_7.json|harbor-golden-run/traj_child_golden|2"}},
		{"text and source", []string{"--text", "HELLO.TXT", "--source", openhands},
			[]string{openhands + "|NORMALIZED_SESSION_ID|6"}},
		{"one session_id in four sources: _file_ tells them apart", []string{"--session", "NORMALIZED_SESSION_ID"}, []string{
			openhands + "|NORMALIZED_SESSION_ID|6",
			"harbor-golden/terminus_2_context-summarization/trajectory.json|NORMALIZED_SESSION_ID|10",
			"harbor-golden/terminus_2_linear-history/trajectory.cont-1.json|NORMALIZED_SESSION_ID|4",
			"harbor-golden/terminus_2_linear-history/trajectory.json|NORMALIZED_SESSION_ID|5"}},
		{"quotes are literals", []string{"--text", "x' OR 1=1 --"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runInProcess(t, append([]string{"find", atif, "--format", "jsonl"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got []string
			for _, r := range jsonlRows(t, out) {
				if r["dataset"] != "dataset" {
					t.Errorf("dataset = %v", r["dataset"])
				}
				got = append(got, strings.Join([]string{r["_file_"].(string), r["session_id"].(string), jsonNum(r["step_count"])}, "|"))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	if _, errOut, code := runInProcess(t, "find", atif, "--source", "nope.json"); code == 0 || !strings.Contains(errOut, "no mounted Dataset has a source") {
		t.Errorf("unknown --source: exit %d, %s", code, errOut)
	}
	out, _, code := runInProcess(t, "find", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--text") {
		t.Errorf("help: %s", out)
	}
}

func jsonNum(v any) string {
	b, _ := jsonx.Marshal(v)
	return string(b)
}

// --source is a constant _file_ predicate on every relation the lookup
// reads, so only that source is resolved.
func TestFindSourcePrunes(t *testing.T) {
	atif := sampleDataset(t, "atif")
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: "dataset", URI: atif}}, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	parser, err := query.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer parser.Close()
	sel := selection{source: "harbor-golden/misc/openhands_hello-world.trajectory.json"}
	res, err := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)}).Query(context.Background(), findSQL(snap.Datasets[0], sel, "", "hello"), engine.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || snap.Resolves() != 1 {
		t.Fatalf("%d rows, %d resolves; want 1, 1", len(res.Rows), snap.Resolves())
	}
	for _, r := range res.Pruning {
		if len(r.Resolved) != 1 || r.Resolved[0] != sel.source {
			t.Errorf("%s resolved %v", r.Relation, r.Resolved)
		}
	}
}
