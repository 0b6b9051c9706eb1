// Package inspect reads Inspect AI evaluation logs: the JSON form (one
// document whose samples are streamed one at a time) and the .eval zip (one
// entry per sample, or a folder of chunks per sample, zstd or deflate).
// Each sample × epoch is one Storyline. docs/formats.md (Inspect section)
// documents the layouts and the mapping field by field.
package inspect

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
)

// Layouts; runs.source_format is "inspect/<layout>".
const (
	LayoutJSON = "json" // the JSON form: {version, status, eval, plan, results, stats, samples, reductions}
	LayoutEval = "eval" // the .eval zip
	// layoutEvalChunked is the source_format layout of a sample stored as a
	// folder of chunks in an .eval zip. One log may mix both sample shapes,
	// so detection only ever says LayoutEval.
	layoutEvalChunked = "eval-chunked"
)

type adapter struct{}

// New returns the Inspect AI adapter.
func New() format.Adapter { return adapter{} }

func (adapter) Name() string { return format.Inspect }

// Detect claims a zip whose first entries are Inspect log entries (or any
// zip named *.eval), and a JSON object with an eval spec next to the other
// log members, or whose samples start with an Inspect sample.
func (adapter) Detect(p *format.Probe) (string, bool) {
	switch p.Shape {
	case format.ShapeZip:
		for _, name := range p.ZipNames {
			if isLogEntry(name) {
				return LayoutEval, true
			}
		}
		if strings.EqualFold(path.Ext(p.Name), ".eval") {
			return LayoutEval, true
		}
	case format.ShapeObject:
		if isJSONLog(p.First) {
			return LayoutJSON, true
		}
	}
	return "", false
}

// isJSONLog recognizes the JSON form: an eval spec (task / run_id /
// eval_id) beside version, status, plan or samples; or, when samples come
// first, a first sample with id + epoch + messages/input/target.
func isJSONLog(o *format.Obj) bool {
	if o == nil {
		return false
	}
	if ev := o.Sub("eval"); ev != nil && (ev.Has("task") || ev.Has("run_id") || ev.Has("eval_id")) &&
		(o.Has("version") || o.Has("status") || o.Has("plan") || o.Has("samples")) {
		return true
	}
	s := o.FirstElem("samples")
	return s != nil && s.Has("id") && s.Has("epoch") && (s.Has("messages") || s.Has("input") || s.Has("target"))
}

// Normalize emits one Storyline per sample × epoch: in file order for the
// JSON form, in Inspect's sample order (epoch, then id) for a zip.
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	switch layout {
	case LayoutJSON:
		return readJSON(ctx, r, src, emit)
	case LayoutEval:
		return readEval(ctx, r, src, emit)
	}
	return fmt.Errorf("inspect: unknown layout %q", layout)
}

// maxSpoolBytes bounds the temporary copy of a reader that cannot be read
// at random (ingest passes files as *os.File or *bytes.Reader, which can).
const maxSpoolBytes = 16 << 30

// randomAccess returns r from its current position as a section that can be
// read at any offset: directly when r is an io.ReaderAt and io.Seeker,
// otherwise through a temporary file that release removes.
func randomAccess(r io.Reader, src format.Source) (sec *io.SectionReader, release func(), err error) {
	ra, isAt := r.(io.ReaderAt)
	seeker, isSeeker := r.(io.Seeker)
	if isAt && isSeeker {
		cur, err := seeker.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", src.Path, err)
		}
		end, err := seeker.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", src.Path, err)
		}
		if _, err := seeker.Seek(cur, io.SeekStart); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", src.Path, err)
		}
		return io.NewSectionReader(ra, cur, end-cur), func() {}, nil
	}
	f, err := os.CreateTemp("", "pchronicle-inspect-*")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: spooling to a temporary file: %w", src.Path, err)
	}
	release = func() {
		f.Close()
		os.Remove(f.Name())
	}
	n, err := io.Copy(f, io.LimitReader(r, maxSpoolBytes+1))
	switch {
	case err != nil:
		release()
		return nil, nil, fmt.Errorf("%s: spooling to a temporary file: %w", src.Path, err)
	case n > maxSpoolBytes:
		release()
		return nil, nil, fmt.Errorf("%s: longer than %d bytes, the limit for reading an Inspect log from a stream", src.Path, int64(maxSpoolBytes))
	}
	return io.NewSectionReader(f, 0, n), release, nil
}

// fileID names the run of a log whose eval spec has no run or eval id
// after its file.
func fileID(src format.Source) string {
	base := path.Base(strings.ReplaceAll(src.File, "\\", "/"))
	if id := strings.TrimSuffix(base, path.Ext(base)); id != "" && id != "." && id != "/" {
		return id
	}
	return format.Inspect
}
