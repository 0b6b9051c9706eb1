// Package testutil holds helpers shared by tests: locating the public sample
// trajectories in ../shared/samples beside the checkout, and building the
// binary for end-to-end tests.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/fsx"
)

// RepoRoot returns the repository root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir, err := fsx.Ancestor(filepath.Dir(file), "go.mod")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// SamplesDir returns ../shared/samples beside the checkout; tests that need
// it fail (not skip) when it is missing, since CI always provides it.
func SamplesDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "..", "shared", "samples")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("shared samples not found beside the checkout: %v", err)
	}
	return dir
}

// Sample reads the sample at rel (slash-separated, e.g. "other/x.json")
// under the samples directory.
func Sample(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(SamplesDir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// SampleFiles lists every trajectory file under the samples directory,
// relative to it, in path order.
func SampleFiles(t testing.TB) []string {
	t.Helper()
	root := SamplesDir(t)
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && format.CandidateName(d.Name()) {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
	inMain    bool // RunMain runs the tests: it removes binDir after them
)

// RunMain runs a package's tests (from its TestMain) and then removes the
// binary Binary built for them, 150 MB that would otherwise stay in the
// temp directory after every run. It returns the exit code.
func RunMain(m *testing.M) int {
	inMain = true
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// BinaryEnv names a binary that scripts/test.sh built once for every package
// of its run; linking the 100 MB binary per package cost a minute or more of
// the suite. Unset, each test process builds its own.
const BinaryEnv = "PCHRONICLE_TEST_BINARY"

// Binary builds cmd/pchronicle once per test process (or takes $BinaryEnv)
// and returns its path. The package's TestMain must run its tests with
// RunMain.
func Binary(t testing.TB) string {
	t.Helper()
	if !inMain {
		t.Fatal("testutil.Binary: the package's TestMain must run its tests with testutil.RunMain, which removes the binary afterwards")
	}
	if path := os.Getenv(BinaryEnv); path != "" {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v", BinaryEnv, err)
		}
		return path
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pchronicle-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "pchronicle")
		// With the Iceberg helper, which the binary finds beside itself.
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/pchronicle", "./cmd/pchronicle-iceberg")
		cmd.Dir = RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// Run executes the real binary with args, with an isolated config directory
// and normalization cache (XDG_CONFIG_HOME and XDG_CACHE_HOME in temp dirs),
// and returns stdout, stderr and the exit code.
func Run(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return RunInput(t, "", args...)
}

// RunInput is Run with stdin.
func RunInput(t testing.TB, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}
