package spawn

import "syscall"

// attr makes the kernel kill a worker whose parent dies, even in the middle
// of work that cannot be interrupted.
func attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// executable is the running binary itself, even if the file it was started
// from has been replaced since.
func executable() (string, error) { return "/proc/self/exe", nil }
