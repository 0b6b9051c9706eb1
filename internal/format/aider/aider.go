// Package aider reads Aider chat histories (.aider.chat.history.md): the
// Markdown log Aider appends to in the repository it works in. Every run
// of aider starts a section with "# aider chat started at <time>"; in it,
// user input is written as "#### " lines, Aider's own output (status,
// questions and answers, token and cost reports, applied edits, commands
// it ran) as "> " lines — each ending with two spaces, a Markdown line
// break — and the model's replies as the Markdown they are. Each section is
// one Storyline. docs/formats.md (Aider section) documents the mapping.
package aider

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
)

// Layout is the only layout; runs.source_format is "aider/markdown".
const Layout = "markdown"

// historySuffix is the file name Aider writes (--chat-history-file
// defaults to it); detection never considers other Markdown files.
const historySuffix = ".aider.chat.history.md"

// startedMarker opens every section of the history.
const startedMarker = "# aider chat started at"

type adapter struct{}

// New returns the Aider adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.Aider }

// Detect claims a file named *.aider.chat.history.md whose first non-blank
// line is a section header. The name is the first test: the probe of any
// other text file is never looked at.
func (adapter) Detect(p *format.Probe) (string, bool) {
	name := p.Name
	if len(name) < len(historySuffix) || !strings.EqualFold(name[len(name)-len(historySuffix):], historySuffix) {
		return "", false
	}
	if !bytes.HasPrefix(bytes.TrimLeft(p.Prefix, " \t\r\n"), []byte(startedMarker)) {
		return "", false
	}
	return Layout, true
}

// Normalize streams the history, holding one section at a time.
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	if layout != Layout {
		return fmt.Errorf("aider: unknown layout %q", layout)
	}
	p := &parser{src: src, emit: emit}
	if err := format.EachTextLine(ctx, r, p.line); err != nil {
		return err
	}
	return p.endSection()
}
