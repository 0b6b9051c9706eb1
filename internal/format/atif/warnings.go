package atif

import (
	"strconv"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
)

// loc locates a value for warnings: a JSONL line and/or a JSON pointer
// (inside the document, or inside the line for JSONL).
type loc struct {
	line int64
	ptr  string
}

func (l loc) at(parts ...any) loc { return loc{line: l.line, ptr: l.ptr + format.Pointer(parts...)} }

// warnings collects deviations for one Storyline. A loose producer repeats
// the same deviation on every step, so each kind is reported once, at its
// first occurrence, with a count: warnings stay bounded on huge files.
type warnings struct {
	list  []model.Warning
	index map[string]int
	count []int
}

func (w *warnings) add(kind string, at loc, msg string) {
	if i, ok := w.index[kind]; ok {
		w.count[i]++
		return
	}
	if w.index == nil {
		w.index = map[string]int{}
	}
	w.index[kind] = len(w.list)
	w.list = append(w.list, model.Warning{Line: at.line, Pointer: at.ptr, Message: "atif: " + msg})
	w.count = append(w.count, 1)
}

func (w *warnings) done() []model.Warning {
	for i, c := range w.count {
		if c > 1 {
			w.list[i].Message += " (" + strconv.Itoa(c) + " occurrences, first shown)"
		}
	}
	return w.list
}
