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
// An extra with nothing to strip, nearly all of them, is returned as it
// is rather than copied to bytes and back into a new string.
func StripExtra(extra *string) *string {
	if extra == nil || !textMayHoldInlineData(*extra) {
		return extra
	}
	raw := json.RawMessage(*extra)
	out := StripInlineData(raw)
	if len(out) == len(raw) && &out[0] == &raw[0] { // raw itself: unchanged
		return extra
	}
	s := string(out)
	return &s
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
