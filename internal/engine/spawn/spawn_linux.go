package spawn

import "syscall"

// attr makes the kernel kill a worker whose parent dies, even in the middle
// of work that cannot be interrupted.
func attr() *syscall.SysProcAttr { return DieWithParent() }

// DieWithParent is the process attribute of every child process that must
// not outlive its parent (a query's DuckDB, a Directory request's worker):
// the kernel sends it SIGKILL when the parent dies, kill -9 included. Each
// of those children starts its own such children, so a whole tree goes.
func DieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// executable is the running binary itself, even if the file it was started
// from has been replaced since.
func executable() (string, error) { return "/proc/self/exe", nil }
