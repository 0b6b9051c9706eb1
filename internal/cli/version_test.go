package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	tail := ", " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name, version, commit string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"stamped by the release build", "v1.4.0", "0123456789abcdef0123", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"v1.4.0 (commit 0123456789ab"},
		{"stamped dirty commit kept as given", "v0.0.0-dev", "0123456789ab-dirty", nil,
			"v0.0.0-dev (commit 0123456789ab-dirty"},
		{"go install of a tagged module", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
			"v1.2.3 (commit unknown"},
		{"a VCS-stamped local build", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("fedcba9876543210", "true")},
			"dev (commit fedcba987654-dirty"},
		{"a clean VCS-stamped local build", "", "", &debug.BuildInfo{Settings: vcs("fedcba9876543210", "false")},
			"dev (commit fedcba987654"},
		{"nothing recorded", "", "", nil, "dev (commit unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := formatVersion(tc.version, tc.commit, tc.info)
			if got != tc.want+tail {
				t.Errorf("got %q, want %q", got, tc.want+tail)
			}
			if strings.Count(got, "(") != 1 {
				t.Errorf("%q: one parenthesis expected", got)
			}
		})
	}
}
