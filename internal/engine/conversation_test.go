package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// rows runs sql and formats each row with fmt.Sprint.
func rows(t *testing.T, e *Engine, sql string) []string {
	t.Helper()
	var out []string
	for _, r := range mustQuery(t, e, sql).Rows {
		out = append(out, fmt.Sprint(r))
	}
	return out
}

// The OpenHands V1 samples are four persisted conversations in the SDK's
// layouts (conversations/<id>/, persistence/<hex id>/, an older file
// store, a workspace's .openhands/): each directory is one source and one
// Storyline, its event files are no sources of their own, and the model
// and status come from base_state.json. Counted by hand: 3, 1, 1 and 0
// event files; execution_status finished, agent_status paused, idle, idle.
func TestOpenHandsConversationSamples(t *testing.T) {
	snap, e := open(t, filepath.Join(testutil.SamplesDir(t), "openhands-v1"), catalog.DefaultOptions())
	var files []string
	for _, s := range snap.Datasets[0].Sources {
		files = append(files, s.File)
	}
	if got := strings.Join(files, " "); got != "conversations/v1_11_5_cli_default local_plugin_install_test/persistence/00000000000000000000000000000203 test_file_store workdir_layout/.openhands" {
		t.Fatalf("sources: %s", got)
	}
	got := rows(t, e, "SELECT _file_, session_id, agent_model_name, status, step_count, tool_call_count, source_format FROM runs ORDER BY 1")
	want := []string{
		"[conversations/v1_11_5_cli_default 11111111-2222-3333-4444-555555555555 gpt-4o-mini unknown 0 0 openhands/conversation]",
		"[local_plugin_install_test/persistence/00000000000000000000000000000203 00000000-0000-0000-0000-000000000203 test-model completed 3 0 openhands/conversation]",
		"[test_file_store 1da91efa-2192-41f2-b5f9-541a5ccc7feb gpt-4 cancelled 1 0 openhands/conversation]",
		"[workdir_layout/.openhands c81a0af3-dc58-4626-940e-fdcbf7fd88e4 gpt-4o-mini unknown 1 0 openhands/conversation]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	steps := rows(t, e, "SELECT step_index, source, message_value FROM steps WHERE _file_ = 'local_plugin_install_test/persistence/00000000000000000000000000000203' AND step_index > 0 ORDER BY 1")
	if strings.Join(steps, "\n") != "[1 user hello]\n[2 agent Done]" {
		t.Fatalf("steps:\n%s", strings.Join(steps, "\n"))
	}
	if r := rows(t, e, "SELECT json_extract_string(extra, '$.settings.confirmation_policy') FROM runs WHERE _file_ = 'test_file_store'"); fmt.Sprint(r) != "[[AlwaysConfirm]]" {
		t.Fatalf("settings: %v", r)
	}
}

// conversationFromStream writes the SDK event stream sample as a persisted
// conversation: base_state.json and one numbered file per event, numbers
// from first, so that names past event-99999 sort before the earlier ones.
func conversationFromStream(t *testing.T, root string, first int) []byte {
	t.Helper()
	stream := testutil.Sample(t, "openhands/openhands-sdk_v1_goal_events.jsonl")
	files := map[string]string{"conv/base_state.json": `{"id":"c-1","agent":{"kind":"Agent","llm":{"model":"litellm_proxy/claude-sonnet-4-5","api_key":"**********","temperature":0.0}},` +
		`"workspace":{"working_dir":"/w","kind":"LocalWorkspace"},"max_iterations":100,"execution_status":"finished","confirmation_policy":{"kind":"NeverConfirm"},` +
		`"stats":{"usage_to_metrics":{"agent":{"model_name":"claude","accumulated_cost":0.25,"accumulated_token_usage":{"prompt_tokens":1000,"completion_tokens":50,"cache_read_tokens":700}}}}}`}
	for i, line := range bytes.Split(bytes.TrimSpace(stream), []byte("\n")) {
		files[fmt.Sprintf("conv/events/event-%05d-%08d.json", first+i, i)] = string(line)
	}
	testutil.WriteFiles(t, root, files)
	return stream
}

// A conversation directory reads as the SDK event stream it was written
// from, in event order: the same steps and tool calls, linked the same
// way, even where the file names no longer sort as the numbers; the
// state's model, status and totals are the run's. Appending an event is a
// new version of the source; one that is not JSON is skipped (with a
// warning: format/openhands TestConversation).
func TestOpenHandsConversationReadsLikeItsEventStream(t *testing.T) {
	root := t.TempDir()
	stream := conversationFromStream(t, root, 99995)
	if err := os.WriteFile(filepath.Join(root, "stream.jsonl"), stream, 0o644); err != nil {
		t.Fatal(err)
	}
	snap, e := open(t, root, catalog.DefaultOptions())
	// _file_ names the directory, and prunes as any _file_ does.
	mustQuery(t, e, "SELECT count(*) FROM runs WHERE _file_ = 'conv'")
	if n := snap.Resolves(); n != 1 {
		t.Fatalf("a query of one conversation resolved %d sources", n)
	}
	const stepsSQL = "SELECT step_index, source, message_kind, message_value FROM steps WHERE _file_ = '%s' ORDER BY 1"
	const callsSQL = "SELECT call_index, function_name, arguments, result, result_status, result_link FROM tool_calls WHERE _file_ = '%s' ORDER BY 1"
	for _, sql := range []string{stepsSQL, callsSQL} {
		dir, file := rows(t, e, fmt.Sprintf(sql, "conv")), rows(t, e, fmt.Sprintf(sql, "stream.jsonl"))
		if len(dir) == 0 || strings.Join(dir, "\n") != strings.Join(file, "\n") {
			t.Fatalf("%s\nthe directory:\n%s\nthe stream:\n%s", sql, strings.Join(dir, "\n"), strings.Join(file, "\n"))
		}
	}
	run := rows(t, e, "SELECT session_id, agent_model_name, status, reported_prompt_tokens, reported_cached_tokens, reported_cost_usd, "+
		"json_extract_string(extra, '$.settings.llm.model'), contains(extra, 'api_key') FROM runs WHERE _file_ = 'conv'")
	if fmt.Sprint(run) != "[[c-1 litellm_proxy/claude-sonnet-4-5 completed 1000 700 0.25 litellm_proxy/claude-sonnet-4-5 false]]" {
		t.Fatalf("run: %v", run)
	}
	ref := snap.Datasets[0].SourceRows()[0].SnapshotRef
	if ref == nil || !strings.Contains(*ref, ";events=10;events_digest=") {
		t.Fatalf("snapshot_ref: %v", ref)
	}
	// One more event (not JSON) is a new version, read with a warning.
	bad := filepath.Join(root, "conv", "events", "event-100005-ffffffff.json")
	if err := os.WriteFile(bad, []byte("{oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap2, e2 := open(t, root, catalog.DefaultOptions())
	if snap2.ID == snap.ID {
		t.Fatal("an appended event left the snapshot id unchanged")
	}
	before, after := rows(t, e, "SELECT count(*) FROM steps WHERE _file_ = 'conv'"), rows(t, e2, "SELECT count(*) FROM steps WHERE _file_ = 'conv'")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("steps before %v, after a bad event %v", before, after)
	}
}

// A directory named like a conversation whose base_state.json is not an
// OpenHands state is no trajectory: no rows and a warning, never made-up
// rows; its files are still not read one by one.
func TestBaseStateThatIsNotAConversation(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"game/base_state.json":                  `{"level": 3, "score": 120}`,
		"game/events/event-00000-aaaaaaaa.json": `{"type": "jump"}`,
	})
	_, e := open(t, root, catalog.DefaultOptions())
	res, err := e.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One summary line, as for every file that is not a trajectory; ls
	// --detect gives the reason.
	if fmt.Sprint(res.Rows) != "[[0]]" || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "1 file is not a trajectory: game;") || !strings.Contains(res.Warnings[0], "ls --detect") {
		t.Fatalf("rows %v, warnings %q", res.Rows, res.Warnings)
	}
}
