package format

import (
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Helpers adapters share when they finish a Storyline.

// UnansweredCalls counts the tool calls that never got a result; adapters
// warn "N tool call(s) have no result" once per Storyline.
func UnansweredCalls(calls []model.ToolCall) int {
	n := 0
	for i := range calls {
		if calls[i].ResultStatus == "" {
			n++
		}
	}
	return n
}

// StepTimeRange returns the earliest and latest step timestamps (nil when
// no step has one).
func StepTimeRange(steps []model.Step) (first, last *time.Time) {
	for i := range steps {
		t := steps[i].Timestamp
		if t == nil {
			continue
		}
		if first == nil || t.Before(*first) {
			first = t
		}
		if last == nil || t.After(*last) {
			last = t
		}
	}
	return first, last
}

// StripExtra is StripInlineData for an extra column value (nil stays nil).
func StripExtra(extra *string) *string {
	if extra == nil {
		return nil
	}
	out := *extra
	if textMayHoldInlineData(out) { // else nothing to strip: no copy to bytes and back
		out = string(StripInlineData(json.RawMessage(out)))
	}
	return &out
}

// FileID names a Storyline whose file gives it no id: the file's base name
// without its extensions, or fallback when that is empty.
func FileID(src Source, fallback string) string {
	name := path.Base(strings.ReplaceAll(src.File, "\\", "/"))
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[:i]
	}
	if name == "" || name == "/" {
		return fallback
	}
	return name
}
