package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version and Commit are stamped by scripts/release.sh (and scripts/demo.sh)
// with -ldflags "-X …/internal/cli.Version=… -X …/internal/cli.Commit=…".
// A binary built without them falls back to what the Go toolchain recorded:
// the module version for `go install …@vX`, and the VCS revision when the
// build stamped it.
var (
	Version = ""
	Commit  = ""
)

// versionString is what `pchronicle --version` prints after the name.
func versionString() string {
	info, _ := debug.ReadBuildInfo()
	return formatVersion(Version, Commit, info)
}

func formatVersion(version, commit string, info *debug.BuildInfo) string {
	modified := false
	if info != nil {
		if version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	hash, dirty := strings.CutSuffix(commit, "-dirty")
	switch {
	case hash == "":
		commit = "unknown"
	case len(hash) > 12:
		commit = hash[:12]
	default:
		commit = hash
	}
	if hash != "" && (dirty || modified) {
		commit += "-dirty"
	}
	return fmt.Sprintf("%s (commit %s, %s %s/%s)", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
