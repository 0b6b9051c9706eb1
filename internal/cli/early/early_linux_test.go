//go:build linux && cgo

package early

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/engine/spawn"
)

// childEnv makes this test binary a command whose early worker the tests
// inspect (report); its worker is this binary again, which echoes.
const childEnv = "EARLY_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(spawn.Env) != "" { // a worker started for a child below
		io.Copy(os.Stdout, os.Stdin)
		fmt.Fprint(os.Stderr, "worker stderr")
		os.Exit(0)
	}
	if os.Getenv(childEnv) != "" {
		report()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// report prints who started this process's early worker and what a round
// trip through its three pipes gave.
func report() {
	p := spawn.TakeEarly()
	if p == nil {
		fmt.Print("no worker")
		return
	}
	fmt.Fprint(p.Stdin, "ping")
	p.Stdin.Close()
	out, _ := io.ReadAll(p.Stdout)
	errOut, _ := io.ReadAll(p.Stderr)
	state, err := p.Wait()
	fmt.Printf("adopted=%v out=%q err=%q exit=%v %v", adopted, out, errOut, state.ExitCode(), err)
}

func TestWantedBeforeRuntime(t *testing.T) {
	for _, c := range wantedCases {
		if got := wantedBeforeRuntime(c.args); got != c.want {
			t.Errorf("the constructor's wanted(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestConstructorSpeaksTheEngineProtocol(t *testing.T) {
	if want := spawn.Env + "=" + strconv.Itoa(spawn.Version); workerEnv != want {
		t.Fatalf("the constructor starts workers with %s, the engine speaks %s", workerEnv, want)
	}
}

// TestConstructorStartsTheWorker runs this binary as commands would run:
// the constructor starts the worker of a query before the runtime, and init
// hands it to the engine with working pipes; a command that runs no query
// gets none; with standard input closed the constructor stands back and
// init starts the worker from Go.
func TestConstructorStartsTheWorker(t *testing.T) {
	for _, c := range []struct {
		name, shell string
		args        []string
		want        string
	}{
		{"query", "", []string{"query", "./evals", "SELECT 1"},
			`adopted=true out="ping" err="worker stderr" exit=0 <nil>`},
		{"help", "", []string{"query", "--help"}, "no worker"},
		{"other command", "", []string{"ls", "./evals"}, "no worker"},
		{"stdin closed", `exec <&- "$0" "$@"`, []string{"find", "--session", "s1"},
			`adopted=false out="ping" err="worker stderr" exit=0 <nil>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cmd *exec.Cmd
			if c.shell != "" {
				cmd = exec.Command("sh", append([]string{"-c", c.shell, os.Args[0]}, c.args...)...)
			} else {
				cmd = exec.Command(os.Args[0], c.args...)
			}
			cmd.Env = append(os.Environ(), childEnv+"=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", c.args, err, out)
			}
			if string(out) != c.want {
				t.Errorf("%v:\n got %s\nwant %s", c.args, out, c.want)
			}
		})
	}
}

// FuzzWantedBeforeRuntime: the constructor reads the command line before
// anything else does; whatever it holds, the C decision is Go's.
func FuzzWantedBeforeRuntime(f *testing.F) {
	for _, c := range wantedCases {
		f.Add(strings.Join(c.args, "\x00"))
	}
	f.Add("pchronicle\x00query\x00--help=x\x00-h")
	f.Add("pchronicle\x00\x00query")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00") // a C argument holds no NUL
		if got, want := wantedBeforeRuntime(args), wanted(args); got != want {
			t.Errorf("the constructor's wanted(%q) = %v, Go's %v", args, got, want)
		}
	})
}
