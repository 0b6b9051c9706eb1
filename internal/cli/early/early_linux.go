//go:build linux && cgo

package early

/*
// DuckDB's bindings link with -rdynamic, for extensions loaded at run time
// that resolve DuckDB's symbols in the executable. The sandbox loads none,
// and exporting every symbol made the dynamic loader search an 18,000-symbol
// table on each process start: --no-export-dynamic keeps only the symbols Go
// exports itself (docs/performance.md, "The worker started before the
// runtime").
#cgo LDFLAGS: -Wl,--no-export-dynamic
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

// The worker's environment variable and protocol version: spawn.Env and
// spawn.Version (TestConstructorSpeaksTheEngineProtocol).
#define EARLY_WORKER_ENV "PCHRONICLE_ENGINE_WORKER"
#define EARLY_WORKER_VERSION "6"

// What the constructor started: the worker's pid, and the parent's ends of
// its standard input, output and error; -1 when it started none.
static int early_pid = -1;
static int early_fds[3] = {-1, -1, -1};

// early_wanted is wanted (early.go) before the runtime: argv[1] is one of
// Commands and no later argument asks for help (TestWantedBeforeRuntime and
// FuzzWantedBeforeRuntime hold it to wanted).
static int early_wanted(int argc, char **argv) {
	static const char *commands[] = {"query", "find", "stats"};
	if (argc < 2 || argv == NULL || argv[1] == NULL) {
		return 0;
	}
	int found = 0;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		found |= strcmp(argv[1], commands[i]) == 0;
	}
	if (!found) {
		return 0;
	}
	for (int i = 2; i < argc && argv[i] != NULL; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			return 0;
		}
	}
	return 1;
}

static void early_close(int *fds, int n) {
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
		}
	}
}

// early_start starts this binary again as a query worker, as spawn.Start
// does, but before the Go runtime and the package initialization that
// precede init in early.go: ~12 ms sooner on a machine where a process
// start is expensive (docs/performance.md, "The worker started before the
// runtime"). Anything unusual — a standard descriptor closed, a failed
// call — starts nothing, and init starts the worker from Go instead. Only
// glibc passes a constructor the command line.
__attribute__((constructor)) static void early_start(int argc, char **argv, char **envp) {
	(void)envp;
#ifdef __GLIBC__
	if (!early_wanted(argc, argv) || getenv(EARLY_WORKER_ENV) != NULL) {
		return;
	}
	int p[6] = {-1, -1, -1, -1, -1, -1}; // stdin r/w, stdout r/w, stderr r/w
	for (int i = 0; i < 3; i++) {
		if (pipe2(p + 2 * i, O_CLOEXEC) != 0) {
			early_close(p, 6);
			return;
		}
	}
	for (int i = 0; i < 6; i++) {
		if (p[i] < 3) { // a standard descriptor was closed: dup2 would clash
			early_close(p, 6);
			return;
		}
	}
	size_t n = 0;
	while (environ != NULL && environ[n] != NULL) {
		n++;
	}
	char **env = calloc(n + 2, sizeof(char *));
	if (env == NULL) {
		early_close(p, 6);
		return;
	}
	memcpy(env, environ, n * sizeof(char *));
	env[n] = EARLY_WORKER_ENV "=" EARLY_WORKER_VERSION;
	char *args[] = {"/proc/self/exe", NULL};
	pid_t parent = getpid();
	// vfork: a fork would copy the page tables of the binary's mappings
	// first, ~6 ms here. The child only makes system calls until execve,
	// and shares this memory until then: a failure it records in failed is
	// seen here once vfork returns (as glibc's posix_spawn does).
	volatile int failed = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		if (dup2(p[0], 0) < 0 || dup2(p[3], 1) < 0 || dup2(p[5], 2) < 0) {
			failed = 1;
			_exit(127);
		}
		// The kernel kills the worker when the thread that started it ends:
		// this one, the process's main thread, ends with the process.
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
			failed = 1;
			_exit(127);
		}
		execve(args[0], args, env);
		failed = 1;
		_exit(127);
	}
	free(env);
	int child[3] = {p[0], p[3], p[5]};
	early_close(child, 3);
	int parents[3] = {p[1], p[2], p[4]};
	if (pid < 0 || failed) { // Go starts it instead, and reports why it cannot
		if (pid > 0) {
			waitpid(pid, NULL, 0);
		}
		early_close(parents, 3);
		return;
	}
	// Non-blocking, as os.Pipe makes them, so that Go reads and writes them
	// through its poller.
	for (int i = 0; i < 3; i++) {
		early_fds[i] = parents[i];
		fcntl(parents[i], F_SETFL, fcntl(parents[i], F_GETFL) | O_NONBLOCK);
	}
	early_pid = pid;
#else
	(void)argc;
	(void)argv;
#endif
}

static int early_worker_pid(void) { return early_pid; }
static int early_worker_fd(int i) { return early_fds[i]; }
*/
import "C"

import (
	"os"
	"unsafe"

	"github.com/pchronicle/pchronicle/internal/engine/spawn"
)

// started returns the worker the constructor started, or nil.
func started() *spawn.Process {
	pid := int(C.early_worker_pid())
	if pid <= 0 {
		return nil
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return &spawn.Process{Process: proc,
		Stdin:  os.NewFile(uintptr(C.early_worker_fd(0)), "|1"),
		Stdout: os.NewFile(uintptr(C.early_worker_fd(1)), "|0"),
		Stderr: os.NewFile(uintptr(C.early_worker_fd(2)), "|0"),
	}
}

// wantedBeforeRuntime is the constructor's decision for args, for tests.
func wantedBeforeRuntime(args []string) bool {
	argv := make([]*C.char, len(args)+1)
	for i, a := range args {
		argv[i] = C.CString(a)
		defer C.free(unsafe.Pointer(argv[i]))
	}
	return C.early_wanted(C.int(len(args)), &argv[0]) != 0
}

// workerEnv is the constructor's worker environment variable, for tests.
const workerEnv = C.EARLY_WORKER_ENV + "=" + C.EARLY_WORKER_VERSION
