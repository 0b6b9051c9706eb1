//go:build darwin || freebsd || netbsd

package catalog

import (
	"syscall"
	"time"
)

// changeTime is the ctime of a stat result (the field is named Ctimespec
// here).
func changeTime(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctimespec.Unix()) }
