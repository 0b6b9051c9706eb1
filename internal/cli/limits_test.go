package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBadLimitsRejectedUpFront: a negative or malformed limit fails before
// any Dataset is opened, with the flag's name (the Dataset here does not
// even exist).
func TestBadLimitsRejectedUpFront(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct{ flag, value, want string }{
		{"--timeout", "-1s", `--timeout "-1s" must not be negative`},
		{"--max-output-rows", "-1", `--max-output-rows "-1" must not be negative`},
		{"--memory-limit", "1XB", `--memory-limit "1XB" has an unknown unit "XB"`},
		{"--max-files", "many", `--max-files "many" is not a whole number`},
		{"--max-spill-bytes", "-1GB", `--max-spill-bytes "-1GB" is not a size`},
	} {
		for _, cmd := range []string{"query", "ls"} {
			args := []string{cmd, missing}
			if cmd == "query" {
				args = append(args, "SELECT 1")
			}
			_, stderr, code := runInProcess(t, append(args, tt.flag, tt.value)...)
			if code == 0 || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "missing") {
				t.Errorf("%s %s %s: exit %d, stderr %q; want %q", cmd, tt.flag, tt.value, code, stderr, tt.want)
			}
		}
	}
	if _, stderr, code := inspect(t, missing, "--max-detection-bytes", "-1"); code == 0 || !strings.Contains(stderr, "--max-detection-bytes") {
		t.Errorf("inspect --max-detection-bytes -1: exit %d, stderr %q", code, stderr)
	}
}
