package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestNewReadersEndToEnd runs the binary over the public samples of
// τ²-bench results, OpenHands V1 persisted conversations (each directory
// one source) and Langfuse trace exports, and checks the figures counted
// by hand in docs/formats.md.
func TestNewReadersEndToEnd(t *testing.T) {
	samples := testutil.SamplesDir(t)
	for _, tt := range []struct{ dir, sql, want string }{
		{"tau2-bench", "SELECT count(*), sum(reward), sum(tool_call_count), count(reward) FROM runs",
			"count_star(),sum(reward),sum(tool_call_count),count(reward)\n18,13,51,15\n"},
		{"openhands-v1", "SELECT _file_, status, step_count FROM runs ORDER BY 1",
			"_file_,status,step_count\nconversations/v1_11_5_cli_default,unknown,0\n" +
				"local_plugin_install_test/persistence/00000000000000000000000000000203,completed,3\ntest_file_store,cancelled,1\n" +
				"workdir_layout/.openhands,unknown,1\n"},
		{"langfuse", "SELECT count(*), count(parent_session_id), sum(tool_call_count), count(reward) FROM runs",
			"count_star(),count(parent_session_id),sum(tool_call_count),count(reward)\n7,4,7,0\n"},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			out, errOut, code := testutil.Run(t, "query", "--format", "csv", filepath.Join(samples, tt.dir), tt.sql)
			if code != 0 || out != tt.want {
				t.Fatalf("exit %d\n%s\nstderr: %s\nwant:\n%s", code, out, errOut, tt.want)
			}
			if strings.Contains(errOut, "not a trajectory") {
				t.Errorf("a sample was skipped: %s", errOut)
			}
		})
	}
}
