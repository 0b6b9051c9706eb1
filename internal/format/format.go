// Package format holds what every trajectory format adapter shares: the
// Adapter contract, the bounded structural Probe used for detection, typed
// errors, and helpers for lenient reading (JSONL lines, content parts,
// timestamps, extra fields). Adapters live in subpackages; the ingest
// package orders them and runs detection.
package format

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pchronicle/pchronicle/internal/model"
)

// DefaultMaxDetectionBytes bounds how much of a file detection may read.
const DefaultMaxDetectionBytes = 1 << 20

// Format names, as they appear in runs.source_format (with a layout suffix)
// and in sources.format.
const (
	ATIF       = "atif"
	OpenAI     = "openai"
	ACTF       = "actf"
	Canonical  = "canonical"
	ClaudeCode = "claude-code"
	OpenHands  = "openhands"
	SWEAgent   = "swe-agent" // SWE-agent and mini-swe-agent
	GeminiCLI  = "gemini-cli"
	Aider      = "aider"
	Inspect    = "inspect"
	TauBench   = "tau-bench" // τ-bench and τ²-bench results
	Langfuse   = "langfuse"
	OTel       = "otel" // OpenTelemetry traces (OTLP JSON) with GenAI or OpenInference attributes
	Pi         = "pi"   // the Pi coding agent's sessions
	QwenCode   = "qwen-code"
)

// Source identifies the file being read, for _file_ and error locations.
type Source struct {
	// Path is how errors and warnings name the file (a local path or a
	// Dataset-relative path).
	Path string
	// File is the value written to the _file_ column.
	File string
	// Size is the file's size in bytes when known (0: unknown), so that a
	// document read whole is read into one buffer of that size and counted
	// against its budget before it is read (ReadWhole).
	Size int64
	// Valid: the reader holds exactly the bytes detection validated as one
	// JSON object (Probe.Valid), so a document adapter need not validate
	// them again.
	Valid bool
	// Live: the file is still being written — its torn last line was left
	// out of the reader (docs/formats.md, "Files being written") — so a
	// run it ends is unfinished.
	Live bool
	// Parts: the receiver accepts a run in parts (model.Storyline.More),
	// so an adapter whose runs end only with their file (a Claude Code
	// session) emits each run's finished rows as it goes instead of holding
	// them until then.
	Parts bool
}

// Emit receives each normalized Storyline, or, when Source.Parts allows it,
// each part of one (model.Storyline.More); parts of two runs may interleave,
// but two runs with one session id never. The Storyline is owned by the
// receiver after the call; adapters must not reuse it.
type Emit func(*model.Storyline) error

// Adapter reads one family of trajectory formats.
type Adapter interface {
	// Name is the format name (ATIF, OpenAI, ...).
	Name() string
	// Detect inspects the bounded probe and returns the layout it
	// recognizes (e.g. "json", "jsonl", "codex-rollout"), or ok=false.
	Detect(p *Probe) (layout string, ok bool)
	// Normalize streams r, which holds a file of the detected layout (after
	// its UTF-8 byte order mark, if it had one: see TrimBOM), and
	// calls emit once per Storyline in file order. It must never load an
	// unbounded number of Storylines at once, and must return a *ParseError
	// (never panic) for input it cannot read.
	Normalize(ctx context.Context, r io.Reader, src Source, layout string, emit Emit) error
}

// LineRecords is an optional Adapter capability: a layout whose lines are
// independent records (chat JSONL holds one conversation per line) can be
// normalized in chunks of whole lines on every CPU (ingest splits large
// files). It returns the layout's record normalizer for one file, or nil
// when the layout's records span lines.
type LineRecords interface {
	LineRecords(layout string) RecordNormalizer
}

// RecordNormalizer normalizes the lines of one file one at a time, in any
// order and concurrently, then finishes their Storylines in file order. The
// result must equal the adapter's Normalize of the whole file.
type RecordNormalizer interface {
	// Record normalizes the line numbered lineNo (1-based; trimmed, never
	// blank) alone. A nil Storyline means the line yields none. id is
	// what Finish needs to know about the record (its own id). Neither may
	// hold bytes of line: its buffer is reused once the chunk it belongs to
	// is normalized.
	Record(src Source, lineNo int64, line []byte) (sl *model.Storyline, id string, err error)
	// Finish completes a Storyline with what depends on the records before
	// it (ids made unique within the file). It is called in file order,
	// never concurrently.
	Finish(sl *model.Storyline, id string)
}

// ErrUnrecognized is matched (errors.Is) by every UnrecognizedError.
var ErrUnrecognized = errors.New("unrecognized format")

// UnrecognizedError says why no adapter accepted a file.
type UnrecognizedError struct {
	Path   string
	Reason string
}

func (e *UnrecognizedError) Error() string {
	return fmt.Sprintf("%s: unrecognized format: %s", e.Path, e.Reason)
}

func (e *UnrecognizedError) Is(target error) bool { return target == ErrUnrecognized }

// ParseError locates a failure to read a file: a 1-based line for
// line-oriented layouts and/or a JSON pointer inside a document.
type ParseError struct {
	Path    string
	Line    int64
	Pointer string
	Err     error
}

func (e *ParseError) Error() string {
	loc := e.Path
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
	}
	if e.Pointer != "" {
		loc += "#" + e.Pointer
	}
	return loc + ": " + e.Err.Error()
}

func (e *ParseError) Unwrap() error { return e.Err }

// Errorf builds a ParseError for src.
func Errorf(src Source, line int64, pointer, format string, args ...any) *ParseError {
	return &ParseError{Path: src.Path, Line: line, Pointer: pointer, Err: fmt.Errorf(format, args...)}
}

// DocumentError locates a JSON syntax error in a whole document: the
// 1-based line and the column of the offending byte, so a user can open the
// file at the place. err is the decoder's error, kept as the cause.
func DocumentError(src Source, data []byte, prefix string, err error) *ParseError {
	if json.Valid(data) { // well-formed but of the wrong shape: nothing to locate
		return &ParseError{Path: src.Path, Err: fmt.Errorf("%s: %w", prefix, err)}
	}
	var v json.RawMessage
	off := int64(len(data))
	var se *json.SyntaxError
	if serr := json.Unmarshal(data, &v); errors.As(serr, &se) && se.Offset > 0 && se.Offset < off {
		off = se.Offset - 1 // Offset counts the offending byte
	}
	line, col := int64(1), int64(1)
	for _, b := range data[:min(off, int64(len(data)))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	if off >= int64(len(data)) {
		return &ParseError{Path: src.Path, Line: line, Err: fmt.Errorf("%s: invalid JSON: the document ends early (column %d; truncated file?): %w", prefix, col, err)}
	}
	return &ParseError{Path: src.Path, Line: line, Err: fmt.Errorf("%s: invalid JSON at column %d: %w", prefix, col, err)}
}

// candidateSuffixes are the name endings of files that may hold
// trajectories (any case): JSON documents and lines, SWE-agent .traj,
// Inspect AI .eval zips, and Aider chat histories — by that full name only,
// never every .md.
var candidateSuffixes = []string{".json", ".jsonl", ".ndjson", ".traj", ".eval", ".aider.chat.history.md"}

// CandidateName reports whether a file name is one discovery collects as a
// file source. It decides from the name alone.
func CandidateName(name string) bool {
	for _, ext := range candidateSuffixes {
		if len(name) >= len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			return true
		}
	}
	return false
}
