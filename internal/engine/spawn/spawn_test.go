package spawn

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// TestMain makes this test binary, started by Start, a stand-in worker: it
// echoes its input to its output, says so on its error output and exits
// with status 3.
func TestMain(m *testing.M) {
	if os.Getenv(Env) != "" {
		n, _ := io.Copy(os.Stdout, os.Stdin)
		fmt.Fprintf(os.Stderr, "stand-in worker, version %s: echoed %d bytes", os.Getenv(Env), n)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestStartConnectsTheThreePipes: a started worker is this binary with the
// worker's environment, its input, output and error output the returned
// pipes, and its end reported by Wait.
func TestStartConnectsTheThreePipes(t *testing.T) {
	p, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	check(t, p)
}

func check(t *testing.T, p *Process) {
	t.Helper()
	if _, err := io.WriteString(p.Stdin, "hello worker"); err != nil {
		t.Fatal(err)
	}
	p.Stdin.Close()
	out, err := io.ReadAll(p.Stdout)
	if err != nil || string(out) != "hello worker" {
		t.Fatalf("output %q, %v", out, err)
	}
	errOut, _ := io.ReadAll(p.Stderr)
	if want := fmt.Sprintf("stand-in worker, version %d: echoed 12 bytes", Version); string(errOut) != want {
		t.Fatalf("error output %q, want %q", errOut, want)
	}
	state, err := p.Wait()
	if err != nil || state.ExitCode() != 3 {
		t.Fatalf("exit %v, %v: want status 3", state, err)
	}
}

// TestEarlyWorkerIsTakenOnce: the worker Early starts goes to the first
// TakeEarly only.
func TestEarlyWorkerIsTakenOnce(t *testing.T) {
	if TakeEarly() != nil {
		t.Fatal("a worker before Early")
	}
	Early()
	p := TakeEarly()
	if p == nil {
		t.Fatal("Early started no worker")
	}
	if TakeEarly() != nil {
		t.Fatal("the early worker was taken twice")
	}
	check(t, p)
}
