//go:build linux || solaris || openbsd || dragonfly

package catalog

import (
	"syscall"
	"time"
)

// changeTime is the ctime of a stat result (the field is named Ctim here).
func changeTime(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctim.Unix()) }
