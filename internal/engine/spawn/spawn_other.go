//go:build !linux

package spawn

import (
	"os"
	"syscall"
)

func attr() *syscall.SysProcAttr { return nil }

// DieWithParent has no equivalent here: children outlive a killed parent.
func DieWithParent() *syscall.SysProcAttr { return nil }

func executable() (string, error) { return os.Executable() }
