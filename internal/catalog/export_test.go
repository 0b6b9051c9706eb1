package catalog

import "time"

// SetRacyWindow replaces how recent a file may be for the normalization
// cache to keep it: a test's files are always recent. It returns the
// restore.
func SetRacyWindow(d time.Duration) (restore func()) {
	prev := racyWindow
	racyWindow = d
	return func() { racyWindow = prev }
}
