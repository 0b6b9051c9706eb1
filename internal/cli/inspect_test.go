//go:build unix

package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// inspect runs `pchronicle inspect args...` in-process.
func inspect(t *testing.T, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Execute(context.Background(), append([]string{"inspect"}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

const oneChat = `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}` + "\n"

// TestInspectListingFailureFailsUnderReport: --errors report lists bad files
// of a complete listing; a directory that cannot be listed (here a path
// longer than PATH_MAX) must fail the command, not print the files it did
// see and exit 0.
func TestInspectListingFailureFailsUnderReport(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"chat.jsonl": oneChat})
	testutil.TooDeepDir(t, root, "hidden.jsonl", oneChat)
	for _, policy := range []string{"strict", "report"} {
		stdout, stderr, code := inspect(t, root, "--errors", policy, "--format", "jsonl")
		if code == 0 {
			t.Errorf("--errors %s: exit 0 over an unlistable tree (stdout %q)", policy, stdout)
		}
		if !strings.Contains(stderr, "file name too long") || !strings.Contains(stderr, root) {
			t.Errorf("--errors %s: stderr %q does not name the directory and the failure", policy, stderr)
		}
	}
}

// TestInspectReportKeepsGoingPastAStore: a store under the PATH is one bad
// member: report lists it and inspects the rest; strict stops on it.
func TestInspectReportKeepsGoingPastAStore(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.jsonl": oneChat, "store/CURRENT": "gen-000001\n", "z.jsonl": oneChat})
	stdout, stderr, code := inspect(t, root, "--errors", "report", "--format", "jsonl")
	if code != 0 || len(jsonlRows(t, stdout)) != 2 {
		t.Fatalf("report: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "is a storyline store, not a trajectory file") || !strings.Contains(stderr, "1 file(s) could not be inspected") {
		t.Errorf("report: stderr %q", stderr)
	}
	if _, stderr, code := inspect(t, root); code == 0 || !strings.Contains(stderr, "storyline store") {
		t.Errorf("strict: exit %d, stderr %q", code, stderr)
	}
}
