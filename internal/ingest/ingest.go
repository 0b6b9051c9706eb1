// Package ingest turns peripheral trajectory files into Storylines: it finds
// supported files under a path, detects each file's format from a bounded
// prefix, and streams it through the matching adapter. It is shared by
// `inspect`, `import` and the Snapshot's lazy resolution of file sources.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/actf"
	"github.com/pchronicle/pchronicle/internal/format/aider"
	"github.com/pchronicle/pchronicle/internal/format/atif"
	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/format/claudecode"
	"github.com/pchronicle/pchronicle/internal/format/geminicli"
	"github.com/pchronicle/pchronicle/internal/format/inspect"
	"github.com/pchronicle/pchronicle/internal/format/langfuse"
	"github.com/pchronicle/pchronicle/internal/format/openai"
	"github.com/pchronicle/pchronicle/internal/format/openhands"
	"github.com/pchronicle/pchronicle/internal/format/otel"
	"github.com/pchronicle/pchronicle/internal/format/pi"
	"github.com/pchronicle/pchronicle/internal/format/qwencode"
	"github.com/pchronicle/pchronicle/internal/format/sweagent"
	"github.com/pchronicle/pchronicle/internal/format/tau"
	"github.com/pchronicle/pchronicle/internal/hugeheap"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Options bound the work done per file.
type Options struct {
	// MaxDetectionBytes bounds the prefix read for detection
	// (default format.DefaultMaxDetectionBytes).
	MaxDetectionBytes int64
	// MaxFileBytes rejects larger files before reading them (0 = no limit).
	MaxFileBytes int64
	// Check, when set, is given NormalizeFile's file as it was opened
	// (before anything is read) and again after normalization, both by
	// fstat of the open file: an error fails the file. Snapshots use it to
	// re-check their pin, so a file that changed is never half read.
	Check func(fi os.FileInfo) error
	// Outcome, when set, gives what a file beside this one records about
	// its run — a Harbor trial's result.json (format/harbor) for the
	// trajectory under that trial. It is called at most once, when the
	// first main Storyline is emitted, and the outcome fills the reward,
	// scores and reported totals every main Storyline of the file left NULL
	// (format.Outcome.Apply). Discovery decides which file that is.
	Outcome func(ctx context.Context) (*format.Outcome, error)
	// Parts: emit accepts a run in parts (format.Source.Parts).
	Parts bool
}

func (o Options) detectionBytes() int64 {
	if o.MaxDetectionBytes <= 0 {
		return format.DefaultMaxDetectionBytes
	}
	return o.MaxDetectionBytes
}

// adapters in detection order: the most specific shapes first, so that a
// generic "object with messages" test never claims a more specific format.
// Aider is the one format that is not JSON: it is claimed by its file name
// (*.aider.chat.history.md) and section header, which no other adapter
// looks at, so it comes first and a Markdown file never reaches the JSON
// tests. Claude Code lines (type user/assistant/system/summary… with
// sessionId and uuid) match none of the other adapters; it sits before
// OpenAI, whose shapes are the most generic. Gemini CLI sessions (sessionId
// + projectHash, then messages) and OpenHands (a history of events with
// id + source + action/observation and no role) also sit before OpenAI,
// whose wrapped layout would otherwise see an object with messages or
// history. SWE-agent and mini-swe-agent documents (a trajectory of
// actions, a history of role messages naming their agent,
// info.mini_version) come before OpenAI too: a mini-swe-agent file is also
// an object wrapping messages. They never look like OpenHands events
// (those have no role). Inspect AI (zips, and JSON logs with an eval spec
// or Inspect samples) sits before OpenAI too: a JSON log's samples hold
// role messages that OpenAI's shapes would otherwise try. So does τ-bench
// (results arrays, τ² results and simulations), whose messages it would
// otherwise take for a chat, Langfuse trace exports (a trace with
// projectId beside its observations) and OpenTelemetry OTLP JSON
// (resourceSpans with GenAI or OpenInference attributes), and Pi sessions
// (a type "session" header with id and cwd). Qwen Code records look like
// Claude Code lines (uuid, sessionId, type) but carry Gemini parts, a
// tool_result type or a systemPayload, which Claude Code never writes: it
// comes before Claude Code.
var adapters = []format.Adapter{aider.New(), atif.New(), canonical.New(), actf.New(), qwencode.New(), claudecode.New(), geminicli.New(), openhands.New(), sweagent.New(), inspect.New(), tau.New(), langfuse.New(), otel.New(), pi.New(), openai.New()}

// Adapters returns the registered adapters in detection order.
func Adapters() []format.Adapter { return append([]format.Adapter(nil), adapters...) }

// Detection is the result of format detection for one file.
type Detection struct {
	Adapter format.Adapter
	Format  string
	Layout  string
	// Warnings are about the file as a whole, for callers that report
	// per source rather than per Storyline: a torn last line left out of
	// a file being written (live.go). The first Storyline carries them too.
	Warnings []model.Warning
}

// Detect picks the adapter for a probe, or explains why none applies.
func Detect(p *format.Probe) (Detection, error) {
	for _, a := range adapters {
		if layout, ok := a.Detect(p); ok {
			return Detection{Adapter: a, Format: a.Name(), Layout: layout}, nil
		}
	}
	return Detection{}, &format.UnrecognizedError{Path: p.Name, Reason: explain(p)}
}

// explain says, in terms a user can act on, why no adapter took the probe.
func explain(p *format.Probe) string {
	if strings.HasSuffix(strings.ToLower(p.Name), ".aider.chat.history.md") {
		return `named like an Aider chat history, but it does not start with a "# aider chat started at" line`
	}
	if p.Note != "" {
		return p.Note
	}
	if p.Shape == format.ShapeZip {
		seen := "no entries in the detection prefix"
		if len(p.ZipNames) > 0 {
			seen = "entries [" + strings.Join(p.ZipNames, ", ") + "]"
		}
		return "a zip archive with " + seen + " is not an Inspect AI eval log (expected header.json, _journal/start.json " +
			"or samples/<id>_epoch_<n>.json entries, or a .eval file name)"
	}
	what := "a JSON object"
	switch p.Shape {
	case format.ShapeArray:
		what = "a JSON array"
		if p.First == nil {
			return "a JSON array whose first element is not an object"
		}
		what += " of objects"
	case format.ShapeLines:
		what = "JSON Lines whose first line is an object"
	}
	if p.First == nil {
		return what + " with no readable keys"
	}
	keys := p.First.Keys
	if len(keys) > 12 {
		keys = append(keys[:12:12], "…")
	}
	hint := ""
	if p.First.Truncated && p.Truncated {
		hint = fmt.Sprintf(" (the first value does not end within the %d-byte detection limit)", len(p.Prefix))
	}
	return fmt.Sprintf("%s with keys [%s] matches no supported format%s; expected ATIF (schema_version + agent + steps), "+
		"OpenAI messages (messages / conversations, role messages, Responses items, Codex rollout type+payload), "+
		"ACTF/ATOF events (kind scope/mark/ScopeStart...), Claude Code transcripts (type user/assistant/system/summary lines with sessionId + uuid), "+
		"OpenHands trajectories (output.jsonl lines with history, or an array of events with id + source + action/observation), "+
		"SWE-agent .traj (trajectory of actions, history of role messages with agent/message_type) or mini-swe-agent (info.mini_version, trajectory_format), "+
		"Gemini CLI sessions (sessionId + projectHash, then messages or message lines), "+
		"Inspect AI logs (a JSON object with eval + version/status/plan/samples, or an .eval zip), "+
		"τ-bench results (an array of task_id + reward + info + traj; τ² timestamp + info + tasks, or a simulation), "+
		"Langfuse trace exports (trace with id + projectId + timestamp, and observations), "+
		"OpenTelemetry OTLP JSON (resourceSpans with gen_ai.* or openinference.span.kind attributes), "+
		"Pi sessions (a type session header line with id, timestamp and cwd), "+
		"Qwen Code chat records (uuid + sessionId + type lines with Gemini message parts), "+
		"or canonical events (v, event_id, kind, seq)",
		what, strings.Join(keys, ", "), hint)
}

// DetectFile detects the format of the file at path.
func DetectFile(path string, opts Options) (Detection, error) {
	f, err := os.Open(path)
	if err != nil {
		return Detection{}, err
	}
	defer f.Close()
	p, err := format.ReadProbe(f, path, opts.detectionBytes())
	if err != nil {
		return Detection{}, fmt.Errorf("%s: %w", path, err)
	}
	return Detect(p)
}

// NormalizeFile detects and normalizes one local file, calling emit per
// Storyline. file is the value of the _file_ column.
func NormalizeFile(ctx context.Context, path, file string, opts Options, emit format.Emit) (Detection, error) {
	f, err := os.Open(path)
	if err != nil {
		return Detection{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Detection{}, err
	}
	if opts.Check != nil {
		if err := opts.Check(st); err != nil {
			return Detection{}, err
		}
	}
	if opts.MaxFileBytes > 0 && st.Size() > opts.MaxFileBytes {
		return Detection{}, fmt.Errorf("%s: %d bytes exceeds max_file_bytes (%d)", path, st.Size(), opts.MaxFileBytes)
	}
	src := format.Source{Path: path, File: file, Size: st.Size()}
	det, err := normalizeOpen(ctx, f, st.Size(), src, opts, emit)
	if err != nil {
		return det, err
	}
	if opts.Check != nil {
		st, err := f.Stat()
		if err != nil {
			return det, err
		}
		if err := opts.Check(st); err != nil {
			return det, err
		}
	}
	return det, nil
}

// normalizeOpen normalizes an open file of the given size. A small file
// (most trajectory files are) is read once and detected and normalized from
// memory, rather than read twice.
func normalizeOpen(ctx context.Context, f *os.File, size int64, src format.Source, opts Options, emit format.Emit) (Detection, error) {
	limit := opts.detectionBytes()
	if size >= limit {
		return normalize(ctx, f, size, src, opts, emit)
	}
	buf := wholeBuffers.Get().(*[]byte)
	defer wholeBuffers.Put(buf)
	if int64(cap(*buf)) < size+1 {
		*buf = make([]byte, size+1)
	}
	data := (*buf)[:size+1]
	n, err := io.ReadFull(f, data)
	switch {
	case err == nil: // it grew since it was opened: read it as a stream
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return Detection{}, fmt.Errorf("%s: %w", src.Path, err)
		}
		return normalize(ctx, f, -1, src, opts, emit)
	case err != io.EOF && err != io.ErrUnexpectedEOF:
		return Detection{}, fmt.Errorf("%s: %w", src.Path, err)
	}
	var p *format.Probe
	var live []model.Warning
	if cut, line, ok := tornTail(data[:n]); ok {
		if cp := format.NewProbe(src.Path, data[:cut], false); cp.Shape == format.ShapeLines {
			p, live = cp, []model.Warning{liveWarning(src, line)}
		}
	}
	if p == nil {
		p = format.NewProbe(src.Path, data[:n], false)
	}
	src.Valid = p.Valid // the adapter reads p.Prefix itself
	return normalizeProbed(ctx, p, format.NewInMemory(p.Prefix), int64(len(p.Prefix)), src, opts, live, emit)
}

// Normalize detects the format of a seekable reader and normalizes it.
// The adapter reads from the start of the file, after its UTF-8 byte order
// mark if it has one.
func Normalize(ctx context.Context, r io.ReadSeeker, src format.Source, opts Options, emit format.Emit) (Detection, error) {
	return normalize(ctx, r, -1, src, opts, emit)
}

// wholeBuffers are the buffers a small file is read into whole, reused from
// file to file like probeBuffers: no row points into a file's bytes
// (format.Emit), and a fresh buffer per file cost more in page faults than
// the read itself (most trajectory files are small).
var wholeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// probeBuffers are the buffers a streamed file's prefix is detected in,
// reused from file to file: the Probe is not needed once the adapter reads
// the file, and nothing it returns (Detection) points into it.
var probeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// normalize is Normalize of a reader of size bytes (-1: not known).
func normalize(ctx context.Context, r io.ReadSeeker, size int64, src format.Source, opts Options, emit format.Emit) (Detection, error) {
	buf := probeBuffers.Get().(*[]byte)
	defer probeBuffers.Put(buf)
	p, err := format.ReadProbeInto(*buf, r, src.Path, opts.detectionBytes())
	if p != nil {
		*buf = p.Prefix[:0]
	}
	if err != nil {
		return Detection{}, fmt.Errorf("%s: %w", src.Path, err)
	}
	start := int64(0)
	if p.BOM {
		start = int64(len(format.BOM))
	}
	var live []model.Warning
	var body io.Reader = r
	switch {
	case !p.Truncated: // the prefix is the whole file (a small one that grew since it was opened: a live one)
		if cut, line, ok := tornTail(p.Prefix); ok {
			if cp := format.NewProbe(src.Path, p.Prefix[:cut], false); cp.Shape == format.ShapeLines {
				p, live = cp, []model.Warning{liveWarning(src, line)}
				body, size = io.LimitReader(r, int64(cut)), start+int64(cut)
			}
		}
	case p.Shape == format.ShapeLines:
		end := size
		if end < 0 {
			if end, err = r.Seek(0, io.SeekEnd); err != nil {
				return Detection{}, fmt.Errorf("%s: %w", src.Path, err)
			}
		}
		cut, line, ok, err := tornTailAt(r, end)
		if err != nil {
			return Detection{}, fmt.Errorf("%s: %w", src.Path, err)
		}
		if ok {
			live = []model.Warning{liveWarning(src, line)}
			body, size = io.LimitReader(r, cut-start), cut
		}
	}
	if _, err := r.Seek(start, io.SeekStart); err != nil {
		return Detection{}, fmt.Errorf("%s: %w", src.Path, err)
	}
	return normalizeProbed(ctx, p, body, size, src, opts, live, emit)
}

// normalizeProbed detects the format from p, the prefix of r, and
// normalizes r (read from its start; size bytes, -1 when not known). live
// holds the warning of a torn last line left out of r.
func normalizeProbed(ctx context.Context, p *format.Probe, r io.Reader, size int64, src format.Source, opts Options, live []model.Warning, emit format.Emit) (Detection, error) {
	det, err := Detect(p)
	if err != nil {
		return det, err
	}
	det.Warnings = live
	src.Parts, src.Live = opts.Parts, len(live) > 0
	hugeheap.Expect(max(size, int64(len(p.Prefix)))) // a stream of unknown size counts its prefix
	emit = uniqueSessions(src, withOutcome(ctx, opts.Outcome, emit))
	if len(live) > 0 {
		emit = withWarning(live[0], emit)
	}
	if rec := splittable(det, p, size); rec != nil {
		return det, normalizeLines(ctx, r, src, rec, emit)
	}
	return det, det.Adapter.Normalize(ctx, r, src, det.Layout, emit)
}

// withOutcome applies the outcome recorded beside the file (Options.Outcome)
// to every main Storyline it yields — not to subagents, whose runs the
// outcome does not describe. The outcome is read once, at the first main
// Storyline. One that cannot be parsed is a warning on those Storylines
// (the trajectory itself is fine); any other error fails the file.
func withOutcome(ctx context.Context, outcome func(context.Context) (*format.Outcome, error), emit format.Emit) format.Emit {
	if outcome == nil {
		return emit
	}
	var o *format.Outcome
	var unreadable *format.ParseError
	read := false
	return func(sl *model.Storyline) error {
		if sl.Run.ParentSessionID == nil && !sl.More {
			if !read {
				read = true
				var err error
				if o, err = outcome(ctx); err != nil && !errors.As(err, &unreadable) {
					return err
				}
			}
			switch {
			case unreadable != nil:
				sl.Warnings = append(sl.Warnings, model.Warning{File: unreadable.Path, Line: unreadable.Line, Pointer: unreadable.Pointer,
					Message: unreadable.Err.Error() + "; reward and scores are not set"})
			case o != nil:
				o.Apply(&sl.Run)
				sl.Warnings = append(sl.Warnings, o.Warnings...)
			}
		}
		return emit(sl)
	}
}

// uniqueSessions enforces the identity rule that session_id is unique per
// Storyline within a source, whatever an adapter produced: a repeated id is
// suffixed deterministically and the original kept. The parts of a run
// (model.Storyline.More) are one Storyline: they keep the id its first got.
func uniqueSessions(src format.Source, emit format.Emit) format.Emit {
	seen := map[string]int{}
	open := map[string]string{} // a run's id as emitted → its id, while its parts continue
	return func(sl *model.Storyline) error {
		id := sl.Run.SessionID
		newID, continued := open[id]
		if !continued {
			newID = id
			n := seen[id]
			seen[id] = n + 1
			if n > 0 {
				newID = fmt.Sprintf("%s#%d", id, n+1)
				for seen[newID] > 0 {
					n++
					newID = fmt.Sprintf("%s#%d", id, n+1)
				}
				seen[newID] = 1
				sl.Warnings = append(sl.Warnings, model.Warning{File: src.Path,
					Message: fmt.Sprintf("session_id %q repeats in this file; renamed to %q", id, newID)})
			}
		}
		if sl.More {
			open[id] = newID
		} else {
			delete(open, id)
		}
		if newID != id {
			if sl.Run.OriginalSessionID == nil {
				sl.Run.OriginalSessionID = model.StrAlways(id)
			}
			sl.SetSessionID(newID)
		}
		return emit(sl)
	}
}
