//go:build !linux || !cgo

package early

import "github.com/pchronicle/pchronicle/internal/engine/spawn"

// started returns nil: only Linux starts the worker before the runtime.
func started() *spawn.Process { return nil }
