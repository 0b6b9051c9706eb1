package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// harborJob writes a Harbor job tree: job-level config.json and
// result.json, and three trials, each with config.json, result.json,
// agent/trajectory.json and a verifier reward.json; trial-2's verifier
// gave 0, trial-3 raised.
func harborJob(t *testing.T) string {
	t.Helper()
	atif, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "examples", "trajectories", "atif", "fix-failing-test.trajectory.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	files := map[string]string{
		"job/config.json": `{"job_name": "nightly", "n_attempts": 1}`,
		"job/result.json": `{"id": "job-1", "stats": {"n_trials": 3}}`,
	}
	results := map[string]string{
		"trial-1": `{"verifier_result": {"rewards": {"reward": 1.0}}, "agent_result": {"n_input_tokens": 9, "cost_usd": 0.5}}`,
		"trial-2": `{"verifier_result": {"rewards": {"reward": 0.0}}}`,
		"trial-3": `{"verifier_result": null, "exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "timed out"}}`,
	}
	for trial, result := range results {
		session := strings.Replace(string(atif), `"session_id": "example-fix-failing-test"`, `"session_id": "`+trial+`"`, 1)
		files["job/"+trial+"/config.json"] = `{"trial_name": "` + trial + `"}`
		files["job/"+trial+"/result.json"] = result
		files["job/"+trial+"/agent/trajectory.json"] = session
		files["job/"+trial+"/verifier/reward.json"] = `{"reward": 1}`
	}
	testutil.WriteFiles(t, root, files)
	return root
}

// A Harbor job tree queries without error: each trial's reward and scores
// are on its run, the trial's companion files are not sources, and the
// job-level files are warned about, not fatal.
func TestHarborJobTreeShowsEachTrialsReward(t *testing.T) {
	root := harborJob(t)
	snap, e := open(t, root, catalog.DefaultOptions())
	rows, err := e.Stream(context.Background(), "SELECT _file_, session_id, reward, scores, reported_cost_usd FROM runs ORDER BY 1", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		got = append(got, fmt.Sprint(rows.Values()))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	warnings := rows.Warnings
	rows.Close()
	want := []string{
		`[job/trial-1/agent/trajectory.json trial-1 1 {"reward":1.0} 0.00063]`,
		`[job/trial-2/agent/trajectory.json trial-2 0 {"reward":0.0} 0.00063]`,
		`[job/trial-3/agent/trajectory.json trial-3 <nil> {"exception_type":"AgentTimeoutError"} 0.00063]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var files []string
	for _, s := range snap.Datasets[0].Sources {
		files = append(files, s.File)
	}
	if strings.Join(files, " ") != "job/config.json job/result.json job/trial-1/agent/trajectory.json job/trial-2/agent/trajectory.json job/trial-3/agent/trajectory.json" {
		t.Fatalf("sources: %v (a trial's config, result and verifier files are not sources)", files)
	}
	if len(warnings) != 1 || warnings[0] != "2 files are not trajectories, e.g. job/config.json, job/result.json; pchronicle ls --detect lists them" {
		t.Fatalf("warnings %q: want the two job-level files, named in one summary line", warnings)
	}
	ref := snap.Datasets[0].SourceRows()[2].SnapshotRef
	if ref == nil || !strings.Contains(*ref, ";result.json=size=") {
		t.Fatalf("the trajectory's snapshot_ref does not pin its result.json: %v", ref)
	}
	// The trial's result is part of the trajectory's pin: changing it
	// changes the snapshot id, and a query of the old Snapshot refuses it.
	before := snap.ID
	p := filepath.Join(root, "job", "trial-2", "result.json")
	if err := os.WriteFile(p, []byte(`{"verifier_result": {"rewards": {"reward": 0.5}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, e2 := open(t, root, catalog.DefaultOptions())
	if e2.Snapshot().ID == before {
		t.Fatal("changing a trial's result.json left the snapshot id unchanged")
	}
	if r := mustQuery(t, e2, "SELECT reward FROM runs WHERE session_id = 'trial-2'"); fmt.Sprint(r.Rows) != "[[0.5]]" {
		t.Fatalf("the new reward: %v", r.Rows)
	}
	// With --unrecognized error, the job-level files fail the query.
	opts := catalog.DefaultOptions()
	opts.Unrecognized = catalog.UnrecognizedFail
	_, strict := open(t, root, opts)
	if _, err := strict.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{}); err == nil || !strings.Contains(err.Error(), "job/config.json") {
		t.Fatalf("--unrecognized error: %v", err)
	}
}

func TestIncludeExcludeGlobs(t *testing.T) {
	root := harborJob(t)
	for _, tt := range []struct {
		filter catalog.PathFilter
		want   string
	}{
		{catalog.PathFilter{Include: []string{"**/trajectory.json"}}, "job/trial-1/agent/trajectory.json job/trial-2/agent/trajectory.json job/trial-3/agent/trajectory.json"},
		{catalog.PathFilter{Exclude: []string{"job/*.json", "job/trial-2"}}, "job/trial-1/agent/trajectory.json job/trial-3/agent/trajectory.json"},
		{catalog.PathFilter{Exclude: []string{"**"}}, ""},
		{catalog.PathFilter{Include: []string{"job/trial-[13]/**"}, Exclude: []string{"**/verifier/**"}}, "job/trial-1/agent/trajectory.json job/trial-3/agent/trajectory.json"},
	} {
		m := catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: root, Filter: tt.filter}
		snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{m}, catalog.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, s := range snap.Datasets[0].Sources {
			files = append(files, s.File)
		}
		all, _ := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: root}}, catalog.DefaultOptions())
		if got := strings.Join(files, " "); got != tt.want {
			t.Errorf("%+v: sources %q, want %q", tt.filter, got, tt.want)
		}
		if snap.ID == all.ID {
			t.Errorf("%+v: the filter is not part of the snapshot id", tt.filter)
		}
		snap.Close()
		all.Close()
	}
	bad := catalog.DatasetMount{Alias: catalog.DefaultAlias, URI: root, Filter: catalog.PathFilter{Include: []string{"[a-"}}}
	if _, err := catalog.Build(context.Background(), []catalog.DatasetMount{bad}, catalog.DefaultOptions()); err == nil || !strings.Contains(err.Error(), `invalid glob "[a-"`) {
		t.Fatalf("a bad glob: %v", err)
	}
}
